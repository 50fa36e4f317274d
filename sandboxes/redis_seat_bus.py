"""The seat bus in Redis (``RedisSeatBus``), between processes and machines (the contract:
``sandboxes.seat_bus``)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from sandboxes.seat_bus import (
    CONNECTION_TTL,
    EVENTS_KEPT,
    GATEWAY_TTL,
    RESIGN_LINE,
    SEAT_KEYS_TTL,
    SeatDuel,
)

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
#: ``resign``: while the seat plays a duel, nothing is pending any more and the
#: resignation joins its replies.
_RESIGN_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[2])
  redis.call('RPUSH', KEYS[3], ARGV[1])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
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
        self._resign_scripts: dict[asyncio.AbstractEventLoop, Any] = {}

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
                # Not ``asyncio.wait_for``, which swallows a cancellation on Python 3.11
                # (``memory_seat_bus``).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(remaining, 1.0)):
                        await waiter.event.wait()
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

    async def resign(self, seat: str) -> bool:
        loop = asyncio.get_running_loop()
        script = self._resign_scripts.get(loop)
        if script is None:
            script = self._resign_scripts[loop] = self._client().register_script(_RESIGN_SCRIPT)
        taken = await script(
            keys=[_key(seat, "duel"), _key(seat, "pending"), _key(seat, "replies")],
            args=[RESIGN_LINE, SEAT_KEYS_TTL],
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
