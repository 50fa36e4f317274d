"""The network gateway's connections (``manage.py run_gateway``): how long a client may
take to send a request's headers and its body, and how many connections one address may
hold open at once.

uvicorn has none of these: no deadline for headers (a connection that sends nothing, or
a byte now and then, is held forever), no per-address cap (only a global
``limit_concurrency``, which a single client could fill), and a body it has stopped
passing on (its answer went first, say a refused token) it keeps reading for as long as
bytes trickle in, each of them putting off its idle timeout. In production nginx does
all three before a request reaches the gateway (``client_header_timeout``,
``client_body_timeout``, ``limit_conn``), but the gateway also faces clients directly
(the embedded default). ``limited_protocol`` makes uvicorn's httptools protocol keep
them, for ``uvicorn.Config(http=...)``; request bodies' sizes are the ASGI application's
(``edge.asgi.RequestLimits``). It relies on that protocol's internals (its cycle, flow
control and keep-alive timer), hence uvicorn's exact pin.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import ipaddress
import socket
from typing import Any, ClassVar, Literal

import orjson
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from api.errors import error_body

#: What a client refused for its address's connections is told to wait: the others'
#: requests end, or their idle kept-alive connections close, within seconds.
RETRY_AFTER_SECONDS = 10
#: How long a connection over its address's cap is kept for its request to arrive (and be
#: answered 429): never long, so that such connections cannot pile up.
OVER_CAP_SECONDS = 1.0
#: A connection whose sent data goes unacknowledged this long is dropped by the kernel
#: (``TCP_USER_TIMEOUT``): a client whose machine vanished without closing is noticed at
#: the next ping (streams send one every 15 s), and its presence ends, rather than after
#: the kernel's 15 minutes of retries.
UNACKNOWLEDGED_SECONDS = 30


def client_key(address: str) -> str:
    """The client a peer address stands for, for counting: an IPv4 address itself, an
    IPv6 address its /64 (one subscriber holds a whole /64, and could rotate through it)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return address


@dataclasses.dataclass(frozen=True)
class ConnectionLimits:
    """What each connection of one server is held to."""

    #: From a connection's opening, or from the first byte of its next request, until
    #: that request's headers are in.
    header_seconds: float
    #: From the end of a request's headers until its whole body is in.
    body_seconds: float
    #: Connections one peer address may hold open at once; None for no cap (behind a
    #: reverse proxy every peer is the proxy, which caps each client itself).
    per_address: int | None


def _json_error(code: str, message: str) -> bytes:
    return orjson.dumps(error_body(code, message))


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with ``limits``; use ``limited_protocol``, which
    gives each server a subclass with its own limits and count of connections."""

    limits: ClassVar[ConnectionLimits]
    #: This server's open connections by peer address (all on the event loop's thread).
    open_per_address: ClassVar[collections.Counter[str]]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None
        self._counted_address: str | None = None
        self._request_begun = False
        self._over_cap = False

    # --- the connection's life -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        connection = transport.get_extra_info("socket")
        if connection is not None and hasattr(socket, "TCP_USER_TIMEOUT"):
            with contextlib.suppress(OSError):
                connection.setsockopt(
                    socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, UNACKNOWLEDGED_SECONDS * 1000
                )
        cap = self.limits.per_address
        if cap is not None and self.client is not None:
            address = client_key(self.client[0])
            if self.open_per_address[address] >= cap:
                # Answered once its request's headers are in (so that the client reads a
                # reason rather than a reset), then closed; never counted, and given
                # OVER_CAP_SECONDS only.
                self.app = self._too_many_connections
                self._over_cap = True
            else:
                self.open_per_address[address] += 1
                self._counted_address = address
        self._start_deadline("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        self._uncount()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        # The WebSocket protocol takes the connection over, and its connection_lost is
        # not this one's; it has its own timeouts (pings).
        self._stop_deadline()
        self._uncount()
        super().handle_websocket_upgrade()

    async def _too_many_connections(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """The one answer of a connection over its address's cap, which then closes."""
        body = _json_error(
            "too_many_connections",
            f"This address already has {self.limits.per_address} connections open, the "
            "most one address may hold: close one (or let one finish) and try again.",
        )
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def _uncount(self) -> None:
        address, self._counted_address = self._counted_address, None
        if address is None:
            return
        self.open_per_address[address] -= 1
        if self.open_per_address[address] <= 0:
            del self.open_per_address[address]

    # --- the parser's steps ----------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.timeout_keep_alive_task is not None:
            # Bytes on an idle kept-alive connection stop uvicorn's idle timer, and line
            # ends between requests start no request: without this, a client sending one
            # now and then would hold the connection forever.
            self._start_deadline("headers")
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        # A request pipelined behind another one starts here; the first one's clock
        # started with the connection (or with its first byte, above).
        self._start_deadline("headers")

    def on_headers_complete(self) -> None:
        self._stop_deadline()
        self._request_begun = False
        super().on_headers_complete()
        # Stopped at once by on_message_complete for a request without a body.
        self._start_deadline("body")

    def on_message_complete(self) -> None:
        # Even when uvicorn no longer cares (the answer went before the body was in).
        self._stop_deadline()
        super().on_message_complete()

    # --- deadlines -------------------------------------------------------------------------

    def _start_deadline(self, part: Literal["headers", "body"]) -> None:
        if self._deadline is None:
            seconds = self.limits.header_seconds if part == "headers" else self.limits.body_seconds
            if self._over_cap:
                seconds = min(seconds, OVER_CAP_SECONDS)
            self._deadline = self.loop.call_later(seconds, self._deadline_passed, part)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self, part: Literal["headers", "body"]) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:
            # This side stopped reading (a pipelined request waits for the one before
            # it, or the application has not taken the body so far): the time is not
            # the client's.
            self._start_deadline(part)
            return
        if part == "body" and self.cycle is not None and not self.cycle.response_started:
            self._answer_and_close(
                408,
                "too_slow",
                f"The request body did not arrive within {self.limits.body_seconds:g} s.",
            )
        elif part == "headers" and self._request_begun and not self._answering_before():
            self._answer_and_close(
                408,
                "too_slow",
                f"The request headers did not arrive within {self.limits.header_seconds:g} s.",
            )
        else:
            # Nothing was asked (an idle connection), or an answer is on its way (no
            # room for another one): closed without a word.
            self.transport.close()

    def _answering_before(self) -> bool:
        """An answer to an earlier request on this connection is still being sent."""
        return self.cycle is not None and not self.cycle.response_complete

    def _answer_and_close(self, status: int, code: str, message: str) -> None:
        body = _json_error(code, message)
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        if self.cycle is not None:
            # The application, perhaps still waiting for the body, now sees the client
            # gone, and whatever it sends is dropped (what uvicorn does on a lost
            # connection).
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def limited_protocol(limits: ConnectionLimits) -> type[LimitedHttpProtocol]:
    """uvicorn's httptools protocol under ``limits``, for ``uvicorn.Config(http=...)``."""

    class Configured(LimitedHttpProtocol):
        pass

    Configured.limits = limits
    Configured.open_per_address = collections.Counter()
    return Configured
