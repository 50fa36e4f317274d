"""The network gateway's per-move endpoints, as a bare ASGI application in front of Django.

An online agent makes one request per move (``POST /api/v1/online/reply``) and holds one
stream (``GET /api/v1/online/events``). Django's request handling under ASGI costs about
4 ms a request on these machines (its synchronous parts run in a thread started per
request), twice the whole budget of a network move; these two endpoints need none of it:
a model token (``api.auth``: the same rule and rates as every operation), the seat bus
and the checks of ``sandboxes.seat_gateway``. Everything else (``/api/v1/online/status``,
``/queue``, ``/next``, registering models, the site) is Django's. The OpenAPI document
describes these two endpoints too (``openapi_paths``).

A stream is the model's presence: while it is open the model may be paired, and the
moment it closes the model is absent (``sandboxes.seat_bus``). A stream whose token stops
being valid (revoked, its model disabled or deleted) is closed within
``api.tokens.TOKEN_RECHECK_SECONDS``, with a last ``closed`` line that says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings

from api.auth import Access, Refusal, model_holder, refusal
from api.errors import error_body, retry_after_header
from api.live import (
    LIVE_PATH,
    LIVE_PREFIX,
    LiveRefused,
    last_event_id,
    live_lines,
    live_open,
    watcher_slot,
)
from api.tokens import Holder, token_checks
from core.online import online_seen, seat_bus
from sandboxes.seat_bus import SEQ_PART_MAX, SEQ_PATTERN
from sandboxes.seat_gateway import ReplyRefused, event_lines, reply_submit, seq_check

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

EVENTS_PATH = "/api/v1/online/events"
REPLY_PATH = "/api/v1/online/reply"
GATEWAY_NAME = f"{socket.gethostname()}:{os.getpid()}"


# --- presence ---------------------------------------------------------------------------------

#: The models whose client holds a stream on this process, counted per stream.
_streaming: Counter[int] = Counter()
_presence_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
#: How often the gateway tells the seat bus it is alive and the database whom it saw.
PRESENCE_SECONDS = 5.0


async def _presence_loop() -> None:
    """Tell the seat bus that this gateway is alive (a referee gives an absent client its
    grace period only while a gateway could take it back), and the database when each
    streaming model was last seen (the site shows it)."""
    bus = seat_bus()
    while True:
        with contextlib.suppress(Exception):
            await bus.gateway_heartbeat(GATEWAY_NAME)
            await sync_to_async(online_seen)(competitor_ids=list(_streaming))
        await asyncio.sleep(PRESENCE_SECONDS)


def presence_start() -> None:
    """Start this event loop's presence task, if it is not running."""
    loop = asyncio.get_running_loop()
    for closed in [other for other in _presence_tasks if other.is_closed()]:
        del _presence_tasks[closed]
    task = _presence_tasks.get(loop)
    if task is None or task.done():
        _presence_tasks[loop] = loop.create_task(_presence_loop())


async def presence_seen(holder: Holder) -> None:
    """The model's client is here now (it need not wait for the next presence pass)."""
    presence_start()
    await sync_to_async(online_seen)(competitor_ids=[holder.competitor_id])


async def _stream(holder: Holder, after: str | None) -> AsyncGenerator[bytes, None]:
    assert holder.competitor_id is not None
    _streaming[holder.competitor_id] += 1
    try:
        await presence_seen(holder)
        async for chunk in event_lines(
            seat_bus(), holder.seat, after=after, max_seconds=settings.ARENA_ONLINE_STREAM_SECONDS
        ):
            yield chunk
    finally:
        _streaming[holder.competitor_id] -= 1
        if _streaming[holder.competitor_id] <= 0:
            del _streaming[holder.competitor_id]


def stopped_refusal(holder: Holder) -> Refusal:
    """Why a model token whose streams were stopped no longer plays."""
    refused = refusal(Access.PLAY, token_checks().now(holder.digest))
    if refused is None or refused.status == 401:
        return Refusal(401, "unauthorized", "The token was revoked, or its model or owner removed.")
    return refused


# --- the ASGI application -------------------------------------------------------------


async def _answer(
    send: Send,
    status: int,
    body: object,
    retry_after: float | None = None,
    allow: str | None = None,
) -> None:
    content = orjson.dumps(body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
    ]
    if allow is not None:
        headers.append((b"allow", allow.encode()))
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry_after is not None:
        headers.append((b"retry-after", retry_after_header(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def _body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the client left")
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _pump(lines: AsyncIterator[bytes], send: Send) -> None:
    async for chunk in lines:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _streamed(
    receive: Receive,
    send: Send,
    lines: AsyncGenerator[bytes, None],
    content_type: bytes,
    *,
    stopped: asyncio.Event | None = None,
    last_line: Callable[[], bytes] = lambda: b"",
) -> None:
    """Send ``lines`` as they come, until they end, the client leaves, or ``stopped`` is
    set (then ``last_line()`` goes last)."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", content_type),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),  # nginx: pass each line on at once
            ],
        }
    )
    pump = asyncio.ensure_future(_pump(lines, send))
    watcher = asyncio.ensure_future(_until_disconnected(receive))
    tasks = {pump, watcher}
    if stopped is not None:
        tasks.add(asyncio.ensure_future(stopped.wait()))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Closing the lines ends the seat's connection on the bus: its presence.
        await lines.aclose()
    if watcher in done or (pump in done and pump.cancelled()):
        return
    failure = pump.exception() if pump in done else None
    if failure is not None:
        # Too late for a 500, the answer has begun: the server logs the failure and drops
        # the connection without the last chunk, so that the client sees a broken stream
        # (and resumes), never one that ended properly, and the failure is not lost.
        raise failure
    if stopped is not None and stopped.is_set():
        # It may no longer be held: its last line says why.
        await send({"type": "http.response.body", "body": last_line(), "more_body": False})
    else:
        # The stream is over (its time is up, or what it follows ended): end it properly.
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _live(scope: Scope, receive: Receive, send: Send, duel_id: int) -> None:
    """A spectator's stream of a running duel (``api.live``)."""
    headers = {name.lower(): value for name, value in scope.get("headers") or []}
    address = (scope.get("client") or ("?", 0))[0]
    try:
        if scope["method"] != "GET":
            raise LiveRefused(405, "method_not_allowed", "Use GET here.")
        after = last_event_id(headers.get(b"last-event-id", b"").decode("latin-1"))
        with watcher_slot(address):
            duel = await live_open(duel_id)
            lines = live_lines(
                duel,
                after=after,
                poll_seconds=settings.ARENA_LIVE_POLL_SECONDS,
                max_seconds=settings.ARENA_ONLINE_STREAM_SECONDS,
            )
            await _streamed(receive, send, lines, b"text/event-stream")
    except LiveRefused as refused:
        await _answer(
            send,
            refused.status,
            error_body(refused.code, refused.message),
            allow="GET" if refused.status == 405 else None,
        )


class OnlineGateway:
    """``EVENTS_PATH`` and ``REPLY_PATH`` here; every other request goes to ``app``."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path")
        if scope["type"] == "http" and path and path.startswith(LIVE_PREFIX):
            live = LIVE_PATH.fullmatch(path)
            if live is not None:
                await _live(scope, receive, send, int(live.group(1)))
                return
        if scope["type"] != "http" or path not in (EVENTS_PATH, REPLY_PATH):
            await self.app(scope, receive, send)
            return
        method = "POST" if path == REPLY_PATH else "GET"
        headers = {name.lower(): value for name, value in scope.get("headers") or []}
        try:
            if scope["method"] != method:
                raise Refusal(405, "method_not_allowed", f"Use {method} here.")
            address = (scope.get("client") or ("?", 0))[0]
            holder = await model_holder(
                headers.get(b"authorization", b"").decode("latin-1"), address
            )
            if path == REPLY_PATH:
                accepted = await reply_submit(seat_bus(), holder.seat, await _body(receive))
                await _answer(send, 202, {"accepted": accepted})
                return
            after = seq_check(headers.get(b"last-event-id", b"").decode("latin-1") or None)
        except Refusal as refused:
            await _answer(
                send,
                refused.status,
                error_body(refused.code, refused.message),
                refused.retry_after,
                allow=method if refused.status == 405 else None,
            )
            return
        except ReplyRefused as refused:
            await _answer(send, refused.status, error_body(refused.code, refused.message))
            return
        except ConnectionResetError:
            return
        async with token_checks().watch(holder.digest) as stopped:
            await _streamed(
                receive,
                send,
                _stream(holder, after),
                b"application/x-ndjson",
                stopped=stopped,
                last_line=lambda: orjson.dumps(
                    {"type": "closed", "reason": stopped_refusal(holder).message},
                    option=orjson.OPT_APPEND_NEWLINE,
                ),
            )


# --- the OpenAPI document -------------------------------------------------------------

_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}


def _errors(*codes: int) -> dict[str, Any]:
    return {
        str(code): {
            "description": description,
            "content": {"application/json": {"schema": _ERROR_SCHEMA}},
        }
        for code, description in {
            400: "Not a well-formed reply (`malformed`), or a bad `Last-Event-ID`.",
            401: "No token, or an unknown or revoked one (`unauthorized`).",
            403: "Not a model token, or the model is disabled (`forbidden`).",
            405: "Wrong method.",
            408: "The body did not arrive in time (`too_slow`).",
            409: "The referee waits for no such reply (`not_your_turn`, `not_playing`).",
            413: "The body is too large (`too_large`).",
            429: "Too many requests (`rate_limited`); see `Retry-After`.",
        }.items()
        if code in codes
    }


#: A ``seq`` a client sends back (``Last-Event-ID``, ``after``), beyond what its pattern
#: says (``sandboxes.seat_bus.seq_is_valid``).
SEQ_DESCRIPTION = (
    "The seq of the last event handled, as it was sent: each of its numbers is at most "
    f"{SEQ_PART_MAX} (64 bits)."
)

#: An ``act``'s id as a reply gives it back: the referee's ids are positive, and a number
#: beyond 64 bits is not read as an integer.
REQUEST_ID_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}

#: A reply, as ``sandboxes.seat_gateway.reply_parse`` takes it (extra fields are kept).
REPLY_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "description": "To a `hello`.",
            "properties": {"type": {"const": "ready"}, "name": {"type": "string"}},
            "required": ["type"],
        },
        {
            "type": "object",
            "description": "To an `act`: one of its `legal_actions`.",
            "properties": {"type": {"const": "action"}, "id": REQUEST_ID_SCHEMA, "action": {}},
            "required": ["type", "id", "action"],
        },
        {
            "type": "object",
            "description": "To an `act`, when the agent's own code failed (a crash, charged).",
            "properties": {
                "type": {"const": "error"},
                "id": REQUEST_ID_SCHEMA,
                "message": {"type": "string"},
                "kind": {"type": "string"},
            },
            "required": ["type", "id"],
        },
    ]
}


#: The components the two endpoints' documentation refers to, beside Django's.
OPENAPI_SCHEMAS: dict[str, Any] = {
    "ReplyAccepted": {
        "type": "object",
        "title": "ReplyAccepted",
        "properties": {
            "accepted": {
                "type": "string",
                "description": "What was answered: `ready` or `act:<id>`.",
            }
        },
        "required": ["accepted"],
    }
}


def openapi_paths() -> dict[str, Any]:
    """The two endpoints served here, for the API's OpenAPI document."""
    security = [{"ModelTokenAuth": []}]
    return {
        EVENTS_PATH: {
            "get": {
                "operationId": "online_events",
                "summary": "The stream of events (newline-delimited JSON)",
                "description": "Hold it open while your model plays. Every event has a "
                "`seq`: after a drop, reconnect with `Last-Event-ID: <the last seq you "
                "handled>` and nothing is lost or repeated (the server also ends a stream "
                "after `ARENA_ONLINE_STREAM_SECONDS`, an hour by default). Without it you "
                "get the current duel from its beginning (answers to requests already "
                "answered are refused with 409, which a client may ignore). Lines: "
                "`welcome`, `duel`, the protocol's messages (docs/protocol.md), `ping` "
                "every 15 s, and `closed` with its `reason` when the server ends the "
                "stream because the token no longer plays (revoked, or its model disabled "
                "or deleted). While a stream is open the model counts as connected (it may "
                "be paired); once none is, it is absent.",
                "tags": ["online play"],
                "security": security,
                "x-arena-access": Access.PLAY.value,
                "parameters": [
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "description": f"{SEQ_DESCRIPTION} Empty or absent: from the "
                        "start of the current duel.",
                        "schema": {"type": "string", "pattern": f"^({SEQ_PATTERN.pattern})?$"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "One JSON object per line, for as long as the "
                        "connection stays open.",
                        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                    },
                    **_errors(400, 401, 403, 405, 429),
                },
            }
        },
        REPLY_PATH: {
            "post": {
                "operationId": "online_reply",
                "summary": "Answer the referee",
                "description": "The protocol's reply as the body: `ready` to a `hello`, "
                "`action` (or `error`) with the `id` of an `act`. 409 when the referee "
                "does not wait for that reply (out of turn, answered already, too late, no "
                "duel): nothing is changed.",
                "tags": ["online play"],
                "security": security,
                "x-arena-access": Access.PLAY.value,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": REPLY_SCHEMA}},
                },
                "responses": {
                    "202": {
                        "description": "Handed to the referee.",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ReplyAccepted"}
                            }
                        },
                    },
                    **_errors(400, 401, 403, 405, 408, 409, 413, 429),
                },
            }
        },
    }
