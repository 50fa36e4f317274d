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
production (``sandboxes.memory_seat_bus``, ``sandboxes.redis_seat_bus``; a process gets
its own from ``sandboxes.seat_buses.seat_bus_for``). The referee's side is called from
threads; the gateway's side is ``async``, for an event loop that holds many connections
at once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
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


#: What ``SeatBus.resign`` adds to a seat's replies: never a client's own reply (those
#: are parsed and compacted by ``seat_gateway.reply_parse``, and this type is refused).
RESIGN_LINE = b'{"type": "resign"}'


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

    async def resign(self, seat: str) -> bool:
        """The seat's player gives up its current duel, whatever the referee waits for:
        ``RESIGN_LINE`` joins its replies, and the seat ends (``sandboxes.remote``). False
        when the seat plays no duel now."""

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
