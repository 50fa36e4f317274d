"""The network gateway's per-move endpoints, as a bare ASGI application in front of Django.

An online agent makes one request per move (``POST /api/v1/online/reply``) and holds one
stream (``GET /api/v1/online/events``). Django's request handling under ASGI costs about
4 ms a request on these machines (its synchronous parts run in a thread started per
request), twice the whole budget of a network move; these two endpoints need none of it:
a model token (``api.auth``: the same rule and rates as every operation), the seat bus
and the checks of ``sandboxes.seat_gateway``. Everything else (``/api/v1/online/status``,
``/queue``, ``/next``, registering models, the site) is Django's. The API's OpenAPI
document describes these two endpoints too (``api.online_docs``).

A stream is the model's presence: while it is open the model may be paired, and the
moment it closes the model is absent (``sandboxes.seat_bus``). A stream whose token stops
being valid (revoked, its model disabled or deleted) is closed within
``api.tokens.TOKEN_RECHECK_SECONDS``, with a last ``closed`` line that says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import orjson
from django.conf import settings

from api.auth import Refusal, model_holder
from api.errors import error_body, retry_after_header
from api.online_docs import EVENTS_PATH, REPLY_PATH
from api.presence import presence_seen, stopped_refusal, streaming
from api.tokens import Holder, token_checks
from core.services.online import seat_bus
from edge.live import (
    LIVE_PATH,
    LIVE_PREFIX,
    LiveRefused,
    last_event_id,
    live_lines,
    live_open,
    watcher_slot,
)
from sandboxes.seat_gateway import ReplyRefused, event_lines, reply_submit, seq_check

# As Django's handlers are typed (django-stubs): a dict scope, read-only messages.
Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


# --- streams ----------------------------------------------------------------------------


async def _stream(holder: Holder, after: str | None) -> AsyncGenerator[bytes, None]:
    assert holder.competitor_id is not None
    streaming[holder.competitor_id] += 1
    try:
        await presence_seen(holder)
        async for chunk in event_lines(
            seat_bus(), holder.seat, after=after, max_seconds=settings.ARENA_ONLINE_STREAM_SECONDS
        ):
            yield chunk
    finally:
        streaming[holder.competitor_id] -= 1
        if streaming[holder.competitor_id] <= 0:
            del streaming[holder.competitor_id]


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
    tasks: set[asyncio.Future[Any]] = {pump, watcher}
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
    """A spectator's stream of a running duel (``edge.live``)."""
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
