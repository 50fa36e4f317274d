"""The gateway's side of a remote seat, without the web framework around it.

A client holds one long-lived stream of newline-delimited JSON (``event_lines``) and
sends each reply in a request of its own (``reply_submit``). Both work on the seat bus
only, so the same code serves the ASGI gateway and the tests, whichever bus is used.

Every line of the stream is a JSON object with a ``type``:

- ``welcome``, first: the seat, the ``seq`` the stream resumes after, the duel in play;
- the referee's protocol messages (``docs/protocol.md``) and ``duel`` (a duel begins:
  its id and opponent), each with its ``seq``: send the last one you handled back (the
  ``Last-Event-ID`` header) when you reconnect, and nothing is lost or repeated;
- ``ping``, every ``PING_SECONDS`` when nothing else is sent, so that a dead connection
  is noticed at both ends.

A reply is checked here before it goes anywhere: its size, that it is a JSON object,
that it answers something (``ready``, or ``action``/``error`` with the request's id),
and that the referee is waiting for exactly that. Anything else is refused with a clear
reason and affects no game.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncGenerator

import orjson

from sandboxes.seat_bus import CONNECTION_TTL, SeatBus, reply_key, seq_is_valid

#: A line is sent at least this often, so that idle connections stay open and dead ones
#: are noticed.
PING_SECONDS = 15.0
#: The referee's own limit on one message (``protocol.DEFAULT_MAX_MESSAGE_BYTES``).
MAX_REPLY_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class ReplyRefused(Exception):
    """A reply that was not handed to the referee, and why: an HTTP status, a stable
    code and a message for people."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return self.message


def seq_check(seq: str | None) -> str | None:
    """A ``seq`` sent back by a client, if it is one; raises ``ReplyRefused`` if not."""
    if seq is None or seq == "":
        return None
    if not seq_is_valid(seq):
        raise ReplyRefused(
            400, "bad_request", f"{seq[:40]!r} is not an event's seq: send back one you received"
        )
    return seq


def _with_seq(seq: str, line: bytes) -> bytes:
    # The bus holds the referee's compact JSON objects: the seq goes in front, unparsed.
    return b'{"seq":"' + seq.encode() + b'",' + line[1:] + b"\n"


async def event_lines(
    bus: SeatBus,
    seat: str,
    *,
    after: str | None = None,
    ping_seconds: float = PING_SECONDS,
    max_seconds: float | None = None,
) -> AsyncGenerator[bytes, None]:
    """The stream of one client connection, from ``after`` (see ``seq_check``) on; the
    connection counts as the seat's presence until the iterator is closed. After
    ``max_seconds`` the stream ends (the client reconnects with its last seq), so that no
    connection is held forever by one server."""
    connection = uuid.uuid4().hex
    await bus.connection_open(seat, connection)
    try:
        cursor = after if after is not None else await bus.start_point(seat)
        duel = await bus.current_duel(seat)
        yield orjson.dumps(
            {
                "type": "welcome",
                "seat": seat,
                "after": cursor,
                "duel": duel.duel if duel is not None else None,
            },
            option=orjson.OPT_APPEND_NEWLINE,
        )
        loop = asyncio.get_running_loop()
        refresh_at = loop.time() + CONNECTION_TTL / 3
        quiet_since = loop.time()
        ends_at = loop.time() + max_seconds if max_seconds is not None else float("inf")
        while loop.time() < ends_at:
            wait = max(0.0, min(refresh_at, quiet_since + ping_seconds, ends_at) - loop.time())
            events = await bus.events_after(seat, cursor, wait)
            now = loop.time()
            if events:
                cursor = events[-1][0]
                quiet_since = now
                yield b"".join(_with_seq(seq, line) for seq, line in events)
            elif now - quiet_since >= ping_seconds:
                quiet_since = now
                yield b'{"type":"ping"}\n'
            if now >= refresh_at:
                await bus.connection_open(seat, connection)
                refresh_at = now + CONNECTION_TTL / 3
    finally:
        # Closing is the client's absence starting: not to be lost to a cancellation.
        await asyncio.shield(bus.connection_close(seat, connection))


def reply_parse(body: bytes, *, max_bytes: int = MAX_REPLY_BYTES) -> tuple[str, bytes]:
    """The pending request a reply answers and the reply as one compact line; raises
    ``ReplyRefused`` for anything that is not a well-formed reply."""
    if len(body) > max_bytes:
        raise ReplyRefused(
            413, "too_large", f"A reply may be {max_bytes} bytes at most; this one is {len(body)}."
        )
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ReplyRefused(400, "malformed", f"The body is not valid JSON: {error}.") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ReplyRefused(
            400, "malformed", "A reply is a JSON object with a 'type': ready, action or error."
        )
    request_id = message.get("id")
    if isinstance(request_id, float) and request_id.is_integer():
        # JSON does not tell 128 from 128.0, and JSON Schema calls both integers.
        message["id"] = int(request_id)
    key = reply_key(message)
    if key is None:
        kind = message["type"][:40]
        if kind in ("action", "error"):
            why = f"An {kind!r} reply needs the integer 'id' of the request it answers."
        else:
            why = f"{kind!r} is not a reply: send 'ready', 'action' or 'error'."
        raise ReplyRefused(400, "malformed", why)
    if message["type"] == "action" and "action" not in message:
        raise ReplyRefused(400, "malformed", "An 'action' reply needs an 'action' field.")
    return key, orjson.dumps(message)


async def reply_submit(bus: SeatBus, seat: str, body: bytes) -> str:
    """Hand a client's reply to its referee; returns what it answered (``ready`` or
    ``act:<id>``). Raises ``ReplyRefused`` when it is malformed or answers nothing the
    referee waits for (out of turn, a second answer, too late, no duel)."""
    key, line = reply_parse(body)
    if await bus.reply(seat, key, line):
        return key
    if await bus.current_duel(seat) is None:
        raise ReplyRefused(
            409, "not_playing", "You are not playing a duel now: wait for a 'duel' event."
        )
    pending = await bus.pending(seat)
    answered = "the handshake" if key == "ready" else f"request {key.partition(':')[2]}"
    if not pending:
        why = (
            f"Nothing is asked of you now, so {answered} is not open: it was answered "
            "already, it timed out, or its match is over. Wait for the next 'act'."
        )
    else:
        waited = ", ".join(
            "the handshake ('ready')" if item == "ready" else f"request {item.partition(':')[2]}"
            for item in pending
        )
        why = f"The referee waits for {waited}, not {answered}."
    raise ReplyRefused(409, "not_your_turn", why)
