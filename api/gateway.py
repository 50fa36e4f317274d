"""The network gateway's per-move endpoints, as a bare ASGI application in front of Django.

An online agent makes one request per move (``POST /api/v1/online/reply``) and holds one
stream (``GET /api/v1/online/events``). Django's request handling under ASGI costs about
4 ms a request on these machines (its synchronous parts run in a thread started per
request), twice the whole budget of a network move; these two endpoints need none of it:
a model token, the seat bus and the checks of ``sandboxes.seat_gateway``. Everything else
(``/api/v1/online/status``, ``/queue``, ``/next``, registering models, the site) is
Django's, and shares the token check and the rates defined here. The OpenAPI document
describes these two endpoints too (``OPENAPI_PATHS``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import socket
import time
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings

from api.errors import error_body
from api.live import (
    LIVE_PATH,
    LIVE_PREFIX,
    LiveRefused,
    last_event_id,
    live_lines,
    live_open,
    watcher_slot,
)
from core.models import ApiToken, TokenScope
from core.models.accounts import hash_token
from core.online import online_seen, seat_bus
from sandboxes.seat_gateway import ReplyRefused, event_lines, reply_submit, seq_check

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

EVENTS_PATH = "/api/v1/online/events"
REPLY_PATH = "/api/v1/online/reply"
#: How often every model token this process has seen is checked again (one query for all):
#: a revoked token stops working within this.
TOKEN_RECHECK_SECONDS = 1.0
GATEWAY_NAME = f"{socket.gethostname()}:{os.getpid()}"


class Refusal(Exception):
    """A request refused before it reached anything: status, stable code, message."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


# --- rates ------------------------------------------------------------------------------------

_RATE = re.compile(r"\s*(\d+)\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, float]:
    """``"50/s"`` → (50, 1.0): requests allowed per window of that many seconds."""
    found = _RATE.fullmatch(rate)
    if found is None:
        raise ValueError(f"{rate!r} is not a rate such as '50/s' or '600/min'")
    return int(found.group(1)), float(_SECONDS[found.group(2)[0]])


class RateLimiter:
    """Requests per key in a sliding window, in this process's memory (every move is a
    request: no round trip to a shared cache on the way). The rate is the setting
    ``setting``, read at each call so that it can change without a restart."""

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self._hits: dict[object, collections.deque[float]] = {}

    def wait(self, key: object) -> float | None:
        """Count a request of ``key``; None if allowed, else seconds until it would be."""
        allowed, window = parse_rate(getattr(settings, self.setting))
        now = time.monotonic()
        hits = self._hits.get(key)
        if hits is None:
            if len(self._hits) > 50_000:
                self._hits.clear()
            hits = self._hits[key] = collections.deque()
        while hits and hits[0] <= now - window:
            hits.popleft()
        if len(hits) >= allowed:
            return max(0.001, hits[0] + window - now)
        hits.append(now)
        return None


#: Every online request, per model token.
online_rate = RateLimiter("ARENA_ONLINE_RATE")
#: Look-ups of tokens not checked in the last second, per client address: made-up tokens
#: cost a query each, so a flood of them is limited.
token_lookups = RateLimiter("ARENA_API_ANONYMOUS_RATE")


def _too_many(wait: float) -> Refusal:
    return Refusal(
        429, "rate_limited", f"Too many requests. Retry in {wait:.0f} s.", retry_after=wait
    )


# --- model tokens ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSeat:
    """What a model token speaks for."""

    competitor_id: int
    seat: str
    token_id: int


def _verdict(token: ApiToken | None) -> ModelSeat | str:
    if token is None:
        return "unknown"
    if token.competitor is None:
        return "user token"
    if TokenScope.PLAY not in token.scope_set:
        return "no play scope"
    if token.competitor.is_disabled:
        return "disabled"
    return ModelSeat(token.competitor_id, token.competitor.seat, token.pk)


def _tokens(digests: list[str]) -> dict[str, ApiToken]:
    found = (
        ApiToken.objects.active()
        .select_related("competitor")
        .filter(token_hash__in=digests, user__is_active=True)
    )
    return {token.token_hash: token for token in found}


def _lookup(digest: str) -> ModelSeat | str:
    return _verdict(_tokens([digest]).get(digest))


def _recheck(digests: list[str]) -> dict[str, ModelSeat | str]:
    found = _tokens(digests)
    return {digest: _verdict(found.get(digest)) for digest in digests}


_REASONS = {
    "user token": "This is a user token; online play needs the model token you got when "
    "you registered the model (POST /api/v1/online/models).",
    "no play scope": "This token lacks the 'play' scope.",
    "disabled": "This model is disabled by the organizers.",
}


class _TokenChecks:
    """What each token this process has seen speaks for, checked again every
    ``TOKEN_RECHECK_SECONDS`` in one query; a token unused for a minute is forgotten."""

    def __init__(self) -> None:
        #: digest → (what it speaks for, when it was last used).
        self.known: dict[str, tuple[ModelSeat | str, float]] = {}
        self.checked_at = 0.0
        self.lock = asyncio.Lock()

    async def verdict(self, digest: str, address: str) -> ModelSeat | str:
        now = time.monotonic()
        if now - self.checked_at >= TOKEN_RECHECK_SECONDS:
            async with self.lock:
                if now - self.checked_at >= TOKEN_RECHECK_SECONDS:
                    recent = [d for d, (_, used) in self.known.items() if now - used < 60]
                    fresh = await sync_to_async(_recheck)(recent) if recent else {}
                    self.known = {d: (fresh[d], self.known[d][1]) for d in recent}
                    self.checked_at = time.monotonic()
        known = self.known.get(digest)
        if known is None:
            wait = token_lookups.wait(address)
            if wait is not None:
                raise _too_many(wait)
            if len(self.known) > 50_000:
                self.known.clear()
            known = (await sync_to_async(_lookup)(digest), now)
        self.known[digest] = (known[0], now)
        return known[0]


_checks: dict[asyncio.AbstractEventLoop, _TokenChecks] = {}


async def model_seat(authorization: str, address: str) -> ModelSeat:
    """The model an ``Authorization`` header's token speaks for, within its rate; raises
    ``Refusal`` (401 no or bad token, 403 not a model token, 429 too many)."""
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Refusal(
            401, "unauthorized", "This needs a model token: send 'Authorization: Bearer <token>'."
        )
    loop = asyncio.get_running_loop()
    checks = _checks.get(loop)
    if checks is None:
        checks = _checks[loop] = _TokenChecks()
    found = await checks.verdict(hash_token(secret.strip()), address)
    if found == "unknown":
        raise Refusal(401, "unauthorized", "The token is unknown or revoked.")
    if isinstance(found, str):
        raise Refusal(403, "forbidden", _REASONS[found])
    wait = online_rate.wait(found.token_id)
    if wait is not None:
        raise _too_many(wait)
    return found


# --- presence ---------------------------------------------------------------------------------

#: The models whose client holds a stream on this process, counted per stream.
_streaming: Counter[int] = Counter()
_presence_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}


async def _presence_loop() -> None:
    """Tell the database who is connected (matchmaking reads it), and the seat bus that
    this gateway is alive, every third of the presence window."""
    bus = seat_bus()
    every = max(1.0, settings.ARENA_ONLINE_PRESENCE_SECONDS / 3)
    while True:
        with contextlib.suppress(Exception):
            await bus.gateway_heartbeat(GATEWAY_NAME)
            await sync_to_async(online_seen)(competitor_ids=list(_streaming))
        await asyncio.sleep(every)


def presence_start() -> None:
    """Start this event loop's presence task, if it is not running."""
    loop = asyncio.get_running_loop()
    task = _presence_tasks.get(loop)
    if task is None or task.done():
        _presence_tasks[loop] = loop.create_task(_presence_loop())


async def presence_seen(seat: ModelSeat) -> None:
    """The model's client is here now (it need not wait for the next presence pass)."""
    presence_start()
    await sync_to_async(online_seen)(competitor_ids=[seat.competitor_id])


async def _stream(seat: ModelSeat, after: str | None) -> AsyncGenerator[bytes, None]:
    _streaming[seat.competitor_id] += 1
    try:
        await presence_seen(seat)
        async for chunk in event_lines(
            seat_bus(), seat.seat, after=after, max_seconds=settings.ARENA_ONLINE_STREAM_SECONDS
        ):
            yield chunk
    finally:
        _streaming[seat.competitor_id] -= 1
        if _streaming[seat.competitor_id] <= 0:
            del _streaming[seat.competitor_id]


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
        headers.append((b"retry-after", str(max(1, round(retry_after + 0.5))).encode()))
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
    receive: Receive, send: Send, lines: AsyncGenerator[bytes, None], content_type: bytes
) -> None:
    """Send ``lines`` as they come, until they end or the client leaves."""
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
    try:
        done, _ = await asyncio.wait({pump, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pump, watcher):
            task.cancel()
        await asyncio.gather(pump, watcher, return_exceptions=True)
        await lines.aclose()
    if pump in done and not pump.cancelled() and pump.exception() is None:
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
            seat = await model_seat(headers.get(b"authorization", b"").decode("latin-1"), address)
            if path == REPLY_PATH:
                accepted = await reply_submit(seat_bus(), seat.seat, await _body(receive))
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
        await _streamed(receive, send, _stream(seat, after), b"application/x-ndjson")


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
                "every 15 s.",
                "tags": ["online play"],
                "security": security,
                "parameters": [
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "description": "The seq of the last event handled; empty or "
                        "absent: from the start of the current duel.",
                        "schema": {"type": "string", "pattern": "^([0-9]{1,20}(-[0-9]{1,20})?)?$"},
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
