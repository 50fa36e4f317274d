"""The seat bus: how a remote seat's referee and the network gateway reach each other.

An online agent is a client on the network, held by the gateway (an ASGI server); its
duels are refereed in a duel worker, which may be another process on another machine.
The bus carries, per *seat* (one online model, which plays one duel at a time):

- **events**, from the referee to the client: the protocol's messages (``hello``,
  ``start``, ``act``, ``end``, ``bye``) and the server's own (``duel``: a duel, or a score
  competition's evaluation, begins).
  They are kept in order with a sequence number (``seq``, an opaque string) so that a
  client that reconnects resumes exactly where it was (``events_after``);
- **pending requests**: what the referee waits for (``"ready"`` after ``hello``,
  ``"act:<id>"`` after an ``act``). A reply is accepted only while its request is
  pending, and taking it is atomic, so a second reply to the same request, a reply out
  of turn or a late one is refused at the gateway, with a clear error, and never reaches
  the referee;
- **replies**, from the client to the referee, each one taken from the pending ones;
- **presence**: the client's open connections, each kept alive by the gateway, so the
  referee knows how long a seat has been away (its grace period), and matchmaking pairs
  only a seat that is present;
- **gateways alive**: when none is, an absent seat is Arena's failure, not the agent's.

Two implementations with the same behaviour: ``MemorySeatBus`` for the embedded
default, where the gateway and the referee share one process, and ``RedisSeatBus`` for
production. The referee's side is called from threads; the gateway's side is
``async``, for an event loop that holds many connections at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import re
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

#: Events kept per seat for clients that resume: a duel's worth and more.
EVENTS_KEPT = 5000
#: A connection the gateway has not refreshed for this long is gone (the gateway died).
CONNECTION_TTL = 15.0
#: Seconds a seat's keys outlive its last use on Redis: a model that stops playing (or a
#: competitor deleted) leaves nothing behind for good.
SEAT_KEYS_TTL = 7 * 24 * 3600
#: A gateway is alive while it has refreshed its heartbeat within this long.
GATEWAY_TTL = 15.0


#: What a seat may be playing: a duel, or an evaluation (a one-player game's episodes).
GAME_KINDS = ("duel", "evaluation")


@dataclasses.dataclass(frozen=True)
class SeatDuel:
    """What a seat is playing, and the ``seq`` of the event that began it: a duel (its
    id), or an evaluation (``duel`` None, and its id)."""

    duel: int | None
    first_seq: str
    evaluation: int | None = None

    @classmethod
    def of(cls, kind: str, game: int, first_seq: str) -> SeatDuel:
        if kind == "evaluation":
            return cls(None, first_seq, evaluation=game)
        return cls(game, first_seq)


def pending_key(message: dict[str, Any]) -> str | None:
    """What a reply to the referee's ``message`` must name, or None if none is awaited."""
    kind = message.get("type")
    if kind == "hello":
        return "ready"
    if kind == "act":
        return f"act:{message.get('id')}"
    return None


def reply_key(reply: dict[str, Any]) -> str | None:
    """The pending request a client's reply answers, or None if it is no reply at all."""
    kind = reply.get("type")
    if kind == "ready":
        return "ready"
    if kind in ("action", "error"):
        request_id = reply.get("id")
        # The referee's ids are positive and within 64 bits (the API document says so).
        if (
            isinstance(request_id, int)
            and not isinstance(request_id, bool)
            and (0 <= request_id < 2**63)
        ):
            return f"act:{request_id}"
    return None


class SeatBus(Protocol):
    # -- the referee's side (threads) ---------------------------------------------------

    def seat_open(self, seat: str, *, duel: int, announcement: bytes, kind: str = "duel") -> str:
        """Begin ``duel`` on ``seat`` (a duel's id, or an evaluation's with ``kind``
        ``"evaluation"``): forget what is pending or unread from an earlier game, publish
        ``announcement`` (a JSON object) and return its ``seq``."""

    def publish(self, seat: str, line: bytes, *, awaits: str | None) -> str:
        """Publish one message (a JSON object, no newline) to the client; returns its
        ``seq``. Whatever was pending is dropped first (the referee has moved on) and
        ``awaits``, if given, becomes pending."""

    def replies(self, seat: str, timeout: float) -> list[bytes]:
        """The replies accepted for ``seat``, oldest first, waiting up to ``timeout``."""

    def seat_close(self, seat: str) -> None:
        """The duel is over: nothing is pending any more."""

    def present(self, seats: Sequence[str]) -> set[str]:
        """Which of these seats a client holds a connection of now (matchmaking pairs only
        those)."""

    def is_present(self, seat: str) -> bool:
        """True while the client holds at least one connection."""

    def gateway_alive(self) -> bool:
        """True while at least one gateway runs (an absent client could come back)."""

    # -- the gateway's side (async) -------------------------------------------------------

    async def start_point(self, seat: str) -> str:
        """Where a client without a ``seq`` of its own starts: just before the current
        duel's first event (it gets the whole duel so far), or after the newest event."""

    async def events_after(self, seat: str, after: str, timeout: float) -> list[tuple[str, bytes]]:
        """Events after ``seq`` ``after``, waiting up to ``timeout`` for one."""

    async def current_duel(self, seat: str) -> SeatDuel | None:
        """The duel the seat is playing, if any."""

    async def last_seq(self, seat: str) -> str | None:
        """The newest event's ``seq``."""

    async def reply(self, seat: str, key: str, line: bytes) -> bool:
        """Hand ``line`` to the referee if ``key`` is pending, taking it; False if not."""

    async def pending(self, seat: str) -> list[str]:
        """What the referee waits for from the seat."""

    async def connection_open(self, seat: str, connection: str) -> None:
        """A client connection opened, or is still open (call at least every few seconds)."""

    async def connection_close(self, seat: str, connection: str) -> None:
        """A client connection closed."""

    async def gateway_heartbeat(self, gateway: str) -> None:
        """This gateway is alive (call every few seconds)."""

    async def gateway_stop(self, gateway: str) -> None:
        """This gateway stops."""


#: What a ``seq`` may look like, on either bus (a client sends one back to resume).
SEQ_PATTERN = re.compile(r"[0-9]{1,20}(-[0-9]{1,20})?")
#: The largest part of a ``seq``: Redis stream ids are two unsigned 64-bit numbers, which
#: the pattern's 20 digits may exceed.
SEQ_PART_MAX = 2**64 - 1


def seq_is_valid(seq: str) -> bool:
    """Whether a client may resume after ``seq`` on either bus: it has the pattern, both
    its parts fit in 64 bits, and it is not the very last id (nothing can follow it, and
    Redis refuses to read after it)."""
    if not SEQ_PATTERN.fullmatch(seq):
        return False
    parts = [int(part) for part in seq.split("-")]
    return max(parts) <= SEQ_PART_MAX and parts != [SEQ_PART_MAX, SEQ_PART_MAX]


def _seq_after(seq: str, after: str) -> bool:
    return int(seq) > int(after.partition("-")[0])


@dataclasses.dataclass
class _MemorySeat:
    events: collections.deque[tuple[str, bytes]] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=EVENTS_KEPT)
    )
    pending: set[str] = dataclasses.field(default_factory=set)
    replies: collections.deque[bytes] = dataclasses.field(default_factory=collections.deque)
    duel: SeatDuel | None = None
    #: connection → when it expires (``time.time()``).
    connections: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Gateway tasks waiting for an event: (their loop, their event).
    waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = dataclasses.field(
        default_factory=set
    )


class MemorySeatBus:
    """The bus inside one process: the embedded default's gateway and referee."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replied = threading.Condition(self._lock)
        self._seats: dict[str, _MemorySeat] = collections.defaultdict(_MemorySeat)
        self._counter = 0
        self._gateways: dict[str, float] = {}

    # -- the referee's side ---------------------------------------------------------------

    def _append(self, state: _MemorySeat, line: bytes) -> str:
        self._counter += 1
        seq = str(self._counter)
        state.events.append((seq, line))
        for loop, event in list(state.waiters):
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(event.set)
        return seq

    def seat_open(self, seat: str, *, duel: int, announcement: bytes, kind: str = "duel") -> str:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            state.replies.clear()
            seq = self._append(state, announcement)
            state.duel = SeatDuel.of(kind, duel, seq)
            return seq

    def publish(self, seat: str, line: bytes, *, awaits: str | None) -> str:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            if awaits is not None:
                state.pending.add(awaits)
            return self._append(state, line)

    def replies(self, seat: str, timeout: float) -> list[bytes]:
        deadline = time.monotonic() + timeout
        with self._replied:
            state = self._seats[seat]
            while not state.replies:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._replied.wait(remaining)
            taken = list(state.replies)
            state.replies.clear()
            return taken

    def seat_close(self, seat: str) -> None:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            state.duel = None

    def present(self, seats: Sequence[str]) -> set[str]:
        now = time.time()
        with self._lock:
            return {
                seat
                for seat in seats
                if seat in self._seats
                and any(expiry > now for expiry in self._seats[seat].connections.values())
            }

    def is_present(self, seat: str) -> bool:
        return bool(self.present([seat]))

    def gateway_alive(self) -> bool:
        now = time.time()
        with self._lock:
            return any(expiry > now for expiry in self._gateways.values())

    # -- the gateway's side ---------------------------------------------------------------

    async def start_point(self, seat: str) -> str:
        with self._lock:
            state = self._seats[seat]
            if state.duel is not None:
                return str(int(state.duel.first_seq) - 1)
            return state.events[-1][0] if state.events else "0"

    async def events_after(self, seat: str, after: str, timeout: float) -> list[tuple[str, bytes]]:
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        waiter = (loop, event)
        deadline = loop.time() + timeout
        with self._lock:
            state = self._seats[seat]
            state.waiters.add(waiter)
        try:
            while True:
                with self._lock:
                    found = [item for item in state.events if _seq_after(item[0], after)]
                    event.clear()
                if found:
                    return found
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            with self._lock:
                state.waiters.discard(waiter)

    async def current_duel(self, seat: str) -> SeatDuel | None:
        with self._lock:
            return self._seats[seat].duel

    async def last_seq(self, seat: str) -> str | None:
        with self._lock:
            events = self._seats[seat].events
            return events[-1][0] if events else None

    async def reply(self, seat: str, key: str, line: bytes) -> bool:
        with self._replied:
            state = self._seats[seat]
            if key not in state.pending:
                return False
            state.pending.discard(key)
            state.replies.append(line)
            self._replied.notify_all()
            return True

    async def pending(self, seat: str) -> list[str]:
        with self._lock:
            return sorted(self._seats[seat].pending)

    async def connection_open(self, seat: str, connection: str) -> None:
        with self._lock:
            self._seats[seat].connections[connection] = time.time() + CONNECTION_TTL

    async def connection_close(self, seat: str, connection: str) -> None:
        with self._lock:
            self._seats[seat].connections.pop(connection, None)

    async def gateway_heartbeat(self, gateway: str) -> None:
        with self._lock:
            self._gateways[gateway] = time.time() + GATEWAY_TTL

    async def gateway_stop(self, gateway: str) -> None:
        with self._lock:
            self._gateways.pop(gateway, None)


# --- Redis ------------------------------------------------------------------------------

#: One channel for every seat's wake-ups: a gateway process listens on one connection.
WAKE_CHANNEL = "arena:seat-wake"
GATEWAYS_KEY = "arena:gateways"

# One publish, atomically: what was pending goes (and what is awaited now comes), the
# event is appended, and the gateways get it on the wake channel with the seq before it,
# so a stream that has delivered that one sends it on without reading the stream back.
# ARGV: the line, what it awaits ('' for nothing), events kept, the seat, 'open' to
# begin a duel (the replies left from an earlier one go too, and the duel and its first
# seq are recorded in the same step: a client that connects at any moment either finds
# the duel and gets it from its start, or gets its announcement as a new event), the
# keys' time to live, the duel (or evaluation) and which of the two it is.
_PUBLISH_SCRIPT = r"""
redis.call('DEL', KEYS[2])
if ARGV[5] == 'open' then redis.call('DEL', KEYS[3]) end
if ARGV[2] ~= '' then redis.call('SADD', KEYS[2], ARGV[2]) end
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local previous = '0-0'
if newest[1] then previous = newest[1][1] end
local seq = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'line', ARGV[1])
if ARGV[5] == 'open' then
  redis.call('HSET', KEYS[5], 'duel', ARGV[7], 'first_seq', seq, 'kind', ARGV[8])
  redis.call('EXPIRE', KEYS[5], ARGV[6])
end
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('PUBLISH', KEYS[4], ARGV[4] .. '\n' .. previous .. '\n' .. seq .. '\n' .. ARGV[1])
return seq
"""

# Atomic take-and-hand-over: a second reply to the same request finds nothing pending.
_REPLY_SCRIPT = """
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0
"""


class _Waiter:
    """One stream waiting for its seat's events: woken by ``event``, handed what was sent
    as (the seq before it, its seq, the line)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.sent: list[tuple[str, str, bytes]] = []

    def following(self, after: str) -> list[tuple[str, bytes]]:
        """The events sent that follow ``after`` without a gap."""
        found = []
        for previous, seq, line in self.sent:
            if previous != after:
                break
            found.append((seq, line))
            after = seq
        return found


def _key(seat: str, part: str) -> str:
    return f"arena:seat:{seat}:{part}"


def _seat_duel(found: dict[bytes, bytes]) -> SeatDuel | None:
    """The duel of a seat's ``duel`` hash, if it has one."""
    if not found:
        return None
    kind = found.get(b"kind", b"duel").decode()
    return SeatDuel.of(kind, int(found[b"duel"]), found[b"first_seq"].decode())


class RedisSeatBus:
    """The bus between processes and machines, in Redis.

    Events are a Redis stream per seat (its ids are the ``seq``), pending requests a set,
    replies a list, connections a sorted set scored by expiry. Each publish is one script
    that also sends the event to the gateways with one ``PUBLISH``; a gateway process
    listens on a single connection whatever the number of clients it holds, and hands
    each event to the streams of its seat, which read the Redis stream back only when
    they have missed one (they began waiting after it was published).
    """

    def __init__(self, url: str) -> None:
        import redis
        import redis.asyncio

        self.url = url
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=30, health_check_interval=30)
        self._async_redis: dict[asyncio.AbstractEventLoop, Any] = {}
        self._listeners: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        #: Per seat, the streams waiting: each an event to set and the events it was sent.
        self._waiters: dict[str, set[_Waiter]] = collections.defaultdict(set)
        self._async_module = redis.asyncio
        self._publish_script = self._redis.register_script(_PUBLISH_SCRIPT)
        self._reply_scripts: dict[asyncio.AbstractEventLoop, Any] = {}

    # -- the referee's side ---------------------------------------------------------------

    def _publish(
        self,
        seat: str,
        line: bytes,
        awaits: str | None,
        mode: str,
        duel: int = 0,
        kind: str = "duel",
    ) -> str:
        keys = [
            _key(seat, "events"),
            _key(seat, "pending"),
            _key(seat, "replies"),
            WAKE_CHANNEL,
            _key(seat, "duel"),
        ]
        arguments: list[bytes | str | int] = [
            line,
            awaits or "",
            EVENTS_KEPT,
            seat,
            mode,
            SEAT_KEYS_TTL,
            duel,
            kind,
        ]
        return str(self._publish_script(keys=keys, args=arguments).decode())

    def seat_open(self, seat: str, *, duel: int, announcement: bytes, kind: str = "duel") -> str:
        return self._publish(seat, announcement, None, "open", duel, kind)

    def publish(self, seat: str, line: bytes, *, awaits: str | None) -> str:
        return self._publish(seat, line, awaits, "publish")

    def replies(self, seat: str, timeout: float) -> list[bytes]:
        key = _key(seat, "replies")
        # One at a time: a reply is on its way at once, and the next one, if any, is
        # taken by the next call without waiting.
        first: Any = self._redis.blpop([key], timeout=max(0.01, timeout))
        return [] if first is None else [first[1]]

    def seat_close(self, seat: str) -> None:
        self._redis.delete(_key(seat, "pending"), _key(seat, "duel"))

    def present(self, seats: Sequence[str]) -> set[str]:
        now = time.time()
        pipe = self._redis.pipeline(transaction=False)
        for seat in seats:
            pipe.zcount(_key(seat, "connections"), now, "+inf")
        counts = pipe.execute() if seats else []
        return {seat for seat, count in zip(seats, counts, strict=True) if count}

    def is_present(self, seat: str) -> bool:
        return bool(self.present([seat]))

    def gateway_alive(self) -> bool:
        return bool(self._redis.zcount(GATEWAYS_KEY, time.time(), "+inf"))

    # -- the gateway's side ---------------------------------------------------------------

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._async_redis.get(loop)
        if client is None:
            client = self._async_module.Redis.from_url(self.url)
            self._async_redis[loop] = client
        return client

    def _ensure_listener(self) -> None:
        loop = asyncio.get_running_loop()
        listener = self._listeners.get(loop)
        if listener is None or listener.done():
            self._listeners[loop] = loop.create_task(self._listen())

    async def _listen(self) -> None:
        """Hand each event to this process's streams waiting on its seat."""
        pubsub = self._async_module.Redis.from_url(self.url).pubsub()
        await pubsub.subscribe(WAKE_CHANNEL)
        try:
            async for message in pubsub.listen():
                if message.get("type") != "message":
                    continue
                seat, previous, seq, line = message["data"].split(b"\n", 3)
                for waiter in list(self._waiters.get(seat.decode(), ())):
                    waiter.sent.append((previous.decode(), seq.decode(), line))
                    waiter.event.set()
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def start_point(self, seat: str) -> str:
        # The duel in play and the newest event in one step: a duel opened between two
        # reads would start the stream just after its announcement.
        async with self._client().pipeline(transaction=True) as both:
            both.hgetall(_key(seat, "duel"))
            both.xrevrange(_key(seat, "events"), count=1)
            found, newest = await both.execute()
        duel = _seat_duel(found)
        if duel is None:
            return newest[0][0].decode() if newest else "0-0"
        milliseconds, _, number = duel.first_seq.partition("-")
        if int(number or 0) > 0:
            return f"{milliseconds}-{int(number) - 1}"
        return f"{int(milliseconds) - 1}-{2**64 - 1}"

    async def events_after(self, seat: str, after: str, timeout: float) -> list[tuple[str, bytes]]:
        client = self._client()
        self._ensure_listener()
        waiter = _Waiter()
        self._waiters[seat].add(waiter)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            read = True  # the stream first: what came before this waiter was listening
            while True:
                waiter.event.clear()
                if not read:
                    found = waiter.following(after)
                    if found:
                        return found
                found = await client.xrange(
                    _key(seat, "events"), min=f"({after}", max="+", count=500
                )
                if found:
                    return [(seq.decode(), fields[b"line"]) for seq, fields in found]
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                # An event sent between the read and this wait has set the event already.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.event.wait(), min(remaining, 1.0))
                # Sent in order right after ``after``: no need to read the stream back.
                read = not waiter.sent or waiter.sent[0][0] != after
        finally:
            waiters = self._waiters.get(seat)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    self._waiters.pop(seat, None)

    async def current_duel(self, seat: str) -> SeatDuel | None:
        return _seat_duel(await self._client().hgetall(_key(seat, "duel")))

    async def last_seq(self, seat: str) -> str | None:
        found = await self._client().xrevrange(_key(seat, "events"), count=1)
        return found[0][0].decode() if found else None

    async def reply(self, seat: str, key: str, line: bytes) -> bool:
        loop = asyncio.get_running_loop()
        script = self._reply_scripts.get(loop)
        if script is None:
            script = self._reply_scripts[loop] = self._client().register_script(_REPLY_SCRIPT)
        taken = await script(
            keys=[_key(seat, "pending"), _key(seat, "replies")],
            args=[key, line, SEAT_KEYS_TTL],
        )
        return bool(taken)

    async def pending(self, seat: str) -> list[str]:
        members: Iterable[bytes] = await self._client().smembers(_key(seat, "pending"))
        return sorted(member.decode() for member in members)

    async def connection_open(self, seat: str, connection: str) -> None:
        client = self._client()
        now = time.time()
        pipe = client.pipeline(transaction=False)
        pipe.zadd(_key(seat, "connections"), {connection: now + CONNECTION_TTL})
        pipe.zremrangebyscore(_key(seat, "connections"), "-inf", now)
        pipe.expire(_key(seat, "connections"), SEAT_KEYS_TTL)
        await pipe.execute()

    async def connection_close(self, seat: str, connection: str) -> None:
        await self._client().zrem(_key(seat, "connections"), connection)

    async def gateway_heartbeat(self, gateway: str) -> None:
        client = self._client()
        now = time.time()
        pipe = client.pipeline(transaction=False)
        pipe.zadd(GATEWAYS_KEY, {gateway: now + GATEWAY_TTL})
        pipe.zremrangebyscore(GATEWAYS_KEY, "-inf", now)
        await pipe.execute()

    async def gateway_stop(self, gateway: str) -> None:
        await self._client().zrem(GATEWAYS_KEY, gateway)


def seat_bus_for(url: str | None) -> SeatBus:
    """This process's bus: in Redis for a ``redis://`` URL, otherwise in memory. One per
    URL, so that a process keeps one pool of connections and one listener per loop."""
    key = url or ""
    with _BUSES_LOCK:
        bus = _BUSES.get(key)
        if bus is None:
            bus = _BUSES[key] = RedisSeatBus(key) if key else MemorySeatBus()
        return bus


_BUSES: dict[str, SeatBus] = {}
_BUSES_LOCK = threading.Lock()
