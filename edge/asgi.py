"""The ASGI application of the network gateway (``manage.py run_gateway``, uvicorn): online
play's per-move endpoints (``edge.gateway``) in front of the whole site.

Django reads a request's whole body before any view runs, with no limit of its own on
its size: ``RequestLimits`` refuses a body larger than the request may be (413), with the
API's JSON error, before Django sees it. How long a body may take to arrive
(``ARENA_REQUEST_BODY_SECONDS``, 408) is the connection's business, on every path
whether anyone reads the body or not: ``api.connections``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

# As Django's handlers are typed (django-stubs): a dict scope, read-only messages.
Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Online play's requests are protocol messages: 1 MiB (the referee's limit) and headroom.
ONLINE_MAX_BYTES = (1 << 20) + 64 * 1024


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class RequestLimits:
    """Caps each request body's size (by path)."""

    def __init__(self, app: App, *, max_bytes: int, online_max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.online_max_bytes = online_max_bytes

    def _limit(self, path: str) -> int:
        return self.online_max_bytes if path.startswith("/api/v1/online/") else self.max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope.get("path", ""))
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        declared = dict(scope.get("headers") or []).get(b"content-length")
        try:
            if declared is not None and (not declared.isdigit() or int(declared) > limit):
                raise _Refused(413, "too_large", f"A request here may carry {limit} bytes at most.")
            await self.app(scope, self._limited(receive, limit), send_tracked)
        except _Refused as refused:
            if started:
                raise
            await self._answer(send, refused)

    def _limited(self, receive: Receive, limit: int) -> Receive:
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _Refused(
                        413, "too_large", f"A request here may carry {limit} bytes at most."
                    )
            return message

        return receive_limited

    @staticmethod
    async def _answer(send: Send, refused: _Refused) -> None:
        import orjson

        body = orjson.dumps(
            {"error": {"code": refused.code, "message": refused.message, "details": []}}
        )
        await send(
            {
                "type": "http.response.start",
                "status": refused.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


#: The most connections to PostgreSQL one gateway process holds at once: requests beyond
#: it wait for one (up to ``POOL_TIMEOUT`` seconds, then a server error).
POOL_SIZE = 16
POOL_TIMEOUT = 30


def _pooled_database() -> None:
    """Under ASGI each request runs in a thread of its own, so a connection kept for the
    next request (``CONN_MAX_AGE``) is never reused: every request would open one, and pay
    for PostgreSQL's start of a backend and the password exchange (a third of a fuzzed
    gateway's CPU, and more of the database's). Django's answer is its pool (psycopg_pool):
    a request takes a connection, checked first, and gives it back when it ends."""
    from django.db import DEFAULT_DB_ALIAS, connections

    database = connections.settings[DEFAULT_DB_ALIAS]
    if database["ENGINE"] != "django.db.backends.postgresql":
        return
    connections.close_all()
    database["CONN_MAX_AGE"] = 0
    database["CONN_HEALTH_CHECKS"] = True
    database["OPTIONS"] = {
        **database["OPTIONS"],
        "pool": {"min_size": 1, "max_size": POOL_SIZE, "timeout": POOL_TIMEOUT},
    }


def _application() -> App:
    from django.conf import settings

    handler = get_asgi_application()
    _pooled_database()
    django_app: App = handler
    if settings.DEBUG:
        from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

        django_app = ASGIStaticFilesHandler(handler)
    from edge.gateway import OnlineGateway

    return RequestLimits(
        OnlineGateway(django_app),
        max_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        online_max_bytes=ONLINE_MAX_BYTES,
    )


application = _application()
