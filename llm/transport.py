"""Arena's transport (``SeatTransport``) under the official client of ``llm.provider``:
the last code before the wire, so that what it guarantees holds whatever the client does:

- the only credential sent is the player's key, as ``Authorization: Bearer`` (none when
  the player has none), and only the headers the request needs go out: the official client
  also reads ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``, ``OPENAI_ADMIN_KEY`` and
  ``OPENAI_CUSTOM_HEADERS`` from the worker's environment, and none of that may reach a
  server a player chose;
- a refusal's body is read to its first ``ERROR_BODY_LIMIT`` bytes only (the client reads
  a refusal whole, for its message);
- the socket of the seat's connection is known, so that closing the seat, or the end of
  the request's time, cuts a request short at once, even while the server is silent.

Redirects are not followed (one could send the request, key included, to an address the
player may not reach). A proxy is used as ``curl`` does, from ``https_proxy`` and
``http_proxy`` (``no_proxy`` excepted), read by the standard library's rules; nothing else
is taken from the environment. TLS is verified against the system's certificates.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import socket
import ssl
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx2

#: Bytes of a refusal's body read for its message; the rest is never read.
ERROR_BODY_LIMIT = 64 * 1024
#: A kept connection idle longer than this is closed rather than used (the official
#: client's keep-alive expiry): routers drop idle connections without telling either side.
KEEPALIVE_SECONDS = 5.0
#: The request headers that go out as the client built them (names in lower case); the
#: transport adds ``Authorization`` and ``Accept-Encoding`` itself, and drops the rest.
SENT_HEADERS = frozenset(
    {
        "host",
        "accept",
        "connection",
        "content-type",
        "content-length",
        "transfer-encoding",
        "user-agent",
    }
)

# httpx logs every request at INFO, a line per move in a worker's log; the harness
# records every request itself.
logging.getLogger("httpx2").setLevel(logging.WARNING)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # One for the process: loading the CA bundle costs about 20 ms of CPU each time.
    return ssl.create_default_context()


def check_base_url(base_url: str) -> None:
    """Raises ``ValueError`` for what is not an ``http(s)://host...`` URL."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the base URL {base_url!r} is not an http:// or https:// URL")


def proxy_for(base_url: str) -> str | None:
    """The proxy the environment names for ``base_url``'s scheme (``https_proxy``,
    ``http_proxy``, in either case), unless ``no_proxy`` names its host. An ``https://``
    server is reached through a ``CONNECT`` tunnel, so the proxy sees neither the key nor
    the conversation; an ``http://`` one through the proxy's forwarding, as with ``curl``."""
    parts = urlsplit(base_url)
    proxy = urllib.request.getproxies_environment().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    if urlsplit(proxy).scheme != "http" or not urlsplit(proxy).hostname:
        raise ValueError(f"the {parts.scheme} proxy {proxy!r} is not an http:// proxy")
    return proxy


class _FirstBytes(httpx2.SyncByteStream):
    """A response body cut after its first ``limit`` bytes; closing it before its end
    closes the connection, so what is left is never read."""

    def __init__(self, stream: httpx2.SyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    def __iter__(self) -> Iterator[bytes]:
        left = self._limit
        for chunk in self._stream:
            yield chunk[:left]
            left -= len(chunk)
            if left <= 0:
                return

    def close(self) -> None:
        self._stream.close()


class SeatTransport(httpx2.BaseTransport):
    """httpx's own transport, with Arena's rules on what goes out and comes back (see the
    module's docstring). One connection at most: a seat asks one thing at a time."""

    def __init__(self, *, api_key: str, proxy: str | None, connection: SeatConnection) -> None:
        self._authorization = f"Bearer {api_key}" if api_key else None
        self._connection = connection
        self._transport = httpx2.HTTPTransport(
            verify=_tls_context(),
            trust_env=False,
            proxy=proxy,
            limits=httpx2.Limits(
                max_connections=1, max_keepalive_connections=1, keepalive_expiry=KEEPALIVE_SECONDS
            ),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        headers = [
            (name, value)
            for name, value in request.headers.multi_items()
            if name.lower() in SENT_HEADERS
        ]
        # Compressed answers would make every byte limit here a limit on compressed bytes.
        headers.append(("Accept-Encoding", "identity"))
        if self._authorization:
            headers.append(("Authorization", self._authorization))
        # A copy: the client reads its own markers back from the request it sent.
        outgoing = httpx2.Request(
            request.method,
            request.url,
            headers=headers,
            stream=request.stream,
            extensions={**request.extensions, "trace": self._connection.trace},
        )
        response = self._transport.handle_request(outgoing)
        if response.is_success:
            return response
        assert isinstance(response.stream, httpx2.SyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_FirstBytes(response.stream, ERROR_BODY_LIMIT),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._transport.close()


class SeatConnection:
    """The socket of a seat's connection, followed through httpcore's trace of each
    request, so that a request under way can be cut short from another thread: closing
    a socket does not wake a read blocked on it, shutting it down does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        #: The seat was closed: every request is cut short from now on.
        self._stopped = False
        #: The request under way (a count), so that a timer left from an earlier one,
        #: firing as it ends, cuts nothing short.
        self._request = 0
        #: The request under way is past its time and was cut short.
        self.timed_out = False
        #: The request under way opened a connection (else it used the kept one).
        self.opened = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith(".connect_tcp.started"):
            self.opened = True
        elif event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            # TLS wraps the TCP socket in a new one: the last is the one in use.
            with self._lock:
                self._socket = info["return_value"].get_extra_info("socket")
                if self._stopped or self.timed_out:
                    self._shut_down()

    def begin(self) -> int:
        """A request starts: its number, for ``time_out``."""
        with self._lock:
            self.timed_out = self.opened = False
            self._request += 1
            return self._request

    def time_out(self, request: int) -> None:
        """Request ``request`` is past its time: if it is still under way, its read fails
        at once."""
        with self._lock:
            if request == self._request:
                self.timed_out = True
                self._shut_down()

    def stop(self) -> None:
        """The seat is closed: a request under way fails at once, as will any other."""
        with self._lock:
            self._stopped = True
            self._shut_down()

    def _shut_down(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):  # already closed
                self._socket.shutdown(socket.SHUT_RDWR)
