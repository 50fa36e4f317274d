"""OpenAI-compatible servers written on a bare socket, for the harness's client: each
answer is the exact bytes a test chooses, so every framing of HTTP/1.x can be served
(HTTP/1.0 ended by the close, chunked, ``Content-Length`` on a kept connection,
``Connection: close``), and broken (not HTTP, cut short, closed before answering). Also a
forwarding HTTP proxy that tunnels ``CONNECT`` too, and a self-signed certificate.
``llm.local_server`` is ``http.server``'s idea of HTTP; these are the rest of the world's.

No Django: the pure layer's tests use them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from tests.support.certificates import write_self_signed_certificate

#: Seconds a socket of these servers waits for its peer, so that a test that went wrong
#: ends its threads; never a measure of anything.
PATIENCE = 30.0


@dataclasses.dataclass(frozen=True)
class Received:
    """A request as it reached a server."""

    method: str
    #: As sent: a path, or a whole URL when sent to a proxy.
    target: str
    #: Names in lower case.
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclasses.dataclass(frozen=True)
class Answer:
    """The bytes a server writes for one request, and whether it then closes."""

    data: bytes
    close: bool = False
    #: Then say nothing more until this is set (a server gone silent), or ``PATIENCE``
    #: runs out, unless the client goes away first...
    hold: threading.Event | None = None
    #: ... and then send these bytes.
    after_hold: bytes = b""
    #: Then send a comment line every 50 ms until the client goes away (an answer that
    #: never ends, though bytes keep coming), or ``PATIENCE`` runs out.
    trickle: bool = False


def events(text: str, *, finish: bool = True, usage: bool = True) -> bytes:
    """The server-sent events of a streamed chat completion answering ``text``, a few
    characters an event as a model writes them; without ``finish``, they stop halfway
    and have no ``finish_reason`` (an answer cut short)."""
    base = {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "model": "raw"}
    pieces = [text[start : start + 5] for start in range(0, len(text), 5)]
    if not finish:
        pieces = pieces[: len(pieces) // 2]
    documents: list[dict[str, Any] | str] = [
        {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]
    if finish:
        documents.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if usage:
            counts = {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}
            documents.append({**base, "choices": [], "usage": counts})
        documents.append("[DONE]")
    return b"".join(
        f"data: {document if isinstance(document, str) else json.dumps(document)}\n\n".encode()
        for document in documents
    )


def whole(text: str) -> bytes:
    """A chat completion as one JSON document (a server that ignored ``stream``)."""
    document = {
        "id": "chatcmpl-raw",
        "object": "chat.completion",
        "model": "raw",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
    }
    return json.dumps(document).encode()


# --- the framings ------------------------------------------------------------------------


def http10_close_delimited(body: bytes) -> Answer:
    """HTTP/1.0 with no ``Content-Length``: the body ends when the server closes."""
    return Answer(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + body, close=True)


def chunked(body: bytes, size: int = 50) -> Answer:
    """HTTP/1.1 chunked, in chunks of ``size`` bytes that cut events and lines anywhere."""
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[start : start + size]), body[start : start + size])
        for start in range(0, len(body), size)
    )
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    return Answer(head + b"\r\n" + chunks + b"0\r\n\r\n")


def content_length(body: bytes, content_type: str = "text/event-stream") -> Answer:
    """HTTP/1.1 with ``Content-Length``: the connection stays open for the next request."""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return Answer(head.encode() + b"\r\n" + body)


def connection_close(body: bytes) -> Answer:
    """HTTP/1.1 with ``Connection: close`` and no length: the body ends with the close."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
    return Answer(head + b"\r\n" + body, close=True)


def status(code: int, message: str, *, headers: dict[str, str] | None = None) -> Answer:
    """An error status with an OpenAI-style JSON message, the connection kept."""
    body = json.dumps({"error": {"message": message}}).encode()
    lines = [f"HTTP/1.1 {code} Scripted\r\n", "Content-Type: application/json\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}\r\n\r\n")
    return Answer("".join(lines).encode() + body)


# --- and their failures ----------------------------------------------------------------------


def not_http() -> Answer:
    """What a port that is not an HTTP server says (here, an SSH server's greeting)."""
    return Answer(b"SSH-2.0-OpenSSH_9.6\r\n", close=True)


def closed_before_answering() -> Answer:
    return Answer(b"", close=True)


def shorter_than_its_length(body: bytes) -> Answer:
    """``Content-Length`` promises more than comes before the close."""
    answer = content_length(body + b"x" * 100)
    return Answer(answer.data[:-100], close=True)


def closed_mid_answer(body: bytes) -> Answer:
    """A chunked answer whose connection closes halfway: no last chunk."""
    answer = chunked(body)
    return Answer(answer.data[: len(answer.data) // 2], close=True)


# --- the server ----------------------------------------------------------------------------


def _read_head(reader: BinaryIO) -> list[str] | None:
    """The lines of a request's or response's head, None at the end of the stream."""
    lines: list[str] = []
    while True:
        line = reader.readline(65536)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return lines
        lines.append(line.decode("latin-1").rstrip("\r\n"))


def _read_request(reader: BinaryIO) -> Received | None:
    lines = _read_head(reader)
    if not lines:
        return None
    method, target, _ = lines[0].split(" ", 2)
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:])
    }
    body = reader.read(int(headers.get("content-length") or 0))
    return Received(method, target, headers, body)


def _close_after_sending(connection: socket.socket) -> None:
    """Closes so that what was sent arrives whole: a close with unread bytes waiting would
    reset the connection and lose them, so the client's end is waited for first."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_WR)
        while connection.recv(65536):
            pass
    connection.close()


class RawChatServer:
    """A chat server on loopback (TLS with ``tls``) answering each request with the bytes
    of ``answer(request)``: a test's choice of framing, or of breakage."""

    def __init__(
        self, answer: Callable[[Received], Answer], *, tls: ssl.SSLContext | None = None
    ) -> None:
        self.answer = answer
        self.requests: list[Received] = []
        self.connections = 0
        #: Set when a client goes away from an answer while the server is silent or
        #: trickling (its ``hold`` or ``trickle``).
        self.abandoned = threading.Event()
        self._tls = tls
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> RawChatServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(PATIENCE)
        try:
            if self._tls:
                connection = self._tls.wrap_socket(connection, server_side=True)
            reader = connection.makefile("rb")
            while (request := _read_request(reader)) is not None:
                with self._lock:
                    self.requests.append(request)
                answer = self.answer(request)
                connection.sendall(answer.data)
                if answer.hold is not None:
                    if _left_while_silent(connection, answer.hold):
                        self.abandoned.set()
                        break
                    connection.sendall(answer.after_hold)
                if answer.trickle and _left_while_trickling(connection):
                    self.abandoned.set()
                    break
                if answer.close or request.headers.get("connection") == "close":
                    break
        except (OSError, ValueError):
            pass  # a client that went away, a handshake refused: the test says what it saw
        _close_after_sending(connection)


def _left_while_silent(connection: socket.socket, release: threading.Event) -> bool:
    """Says nothing until ``release`` is set or ``PATIENCE`` runs out; True if the client
    went away meanwhile."""
    ends = time.monotonic() + PATIENCE
    while not release.is_set() and time.monotonic() < ends:
        readable, _, _ = select.select([connection], [], [], 0.05)
        try:
            if readable and not connection.recv(1, socket.MSG_PEEK):
                return True
        except OSError:
            return True
    return False


def _left_while_trickling(connection: socket.socket) -> bool:
    """Sends a comment line every 50 ms for ``PATIENCE``; True if the client went away
    meanwhile."""
    ends = time.monotonic() + PATIENCE
    while time.monotonic() < ends:
        try:
            connection.sendall(b": still thinking\n")
        except OSError:
            return True
        time.sleep(0.05)
    return False


def answering(*answers: Answer, then: Answer | None = None) -> Callable[[Received], Answer]:
    """Answers with ``answers`` in turn, then with ``then`` (the last one, by default)."""
    queue = list(answers)
    last = then or answers[-1]

    def answer(request: Received) -> Answer:
        return queue.pop(0) if queue else last

    return answer


# --- a proxy -------------------------------------------------------------------------------


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class ForwardingProxy:
    """An HTTP proxy on loopback, as simple proxies are: it forwards each request sent to
    it in absolute form (``POST http://host:port/path``) to that server, one request per
    connection (it answers ``Connection: close``), and tunnels ``CONNECT``. It records
    each request line with its ``Proxy-Authorization``, which it does not pass on."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://user:pa%40ss@127.0.0.1:{self._listener.getsockname()[1]}"
        self.requests: list[tuple[str, str | None]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> ForwardingProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(PATIENCE)
        reader = client.makefile("rb")
        try:
            request = _read_request(reader)
            if request is None:
                return
            self.requests.append(
                (f"{request.method} {request.target}", request.headers.get("proxy-authorization"))
            )
            if request.method == "CONNECT":
                host, port = request.target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)), timeout=PATIENCE)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
                _pipe(client, upstream)
                return
            self._forward(request, client)
        except (OSError, ValueError):
            pass
        finally:
            _close_after_sending(client)

    def _forward(self, request: Received, client: socket.socket) -> None:
        parts = urlsplit(request.target)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        skipped = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}
        lines = [f"{request.method} {path} HTTP/1.1"]
        lines += [
            f"{name}: {value}" for name, value in request.headers.items() if name not in skipped
        ]
        lines.append("Connection: close")
        upstream = socket.create_connection((parts.hostname, parts.port or 80), timeout=PATIENCE)
        with upstream:
            upstream.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + request.body)
            reader = upstream.makefile("rb")
            head = _read_head(reader)
            if not head:
                return
            kept = [line for line in head if not line.lower().startswith("connection:")]
            client.sendall("\r\n".join([*kept, "Connection: close"]).encode() + b"\r\n\r\n")
            # The rest as it comes, to the server's close: whatever its framing.
            while data := reader.read1(65536):
                client.sendall(data)


# --- TLS -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A self-signed certificate for 127.0.0.1 and its key."""

    certificate: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, self.key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client's context that trusts this certificate, and only it."""
        return ssl.create_default_context(cafile=str(self.certificate))


def self_signed_certificate(folder: Path) -> Certificate:
    certificate = Certificate(folder / "certificate.pem", folder / "key.pem")
    write_self_signed_certificate(certificate=certificate.certificate, key=certificate.key)
    return certificate


def use_proxy(monkeypatch: Any, proxy: ForwardingProxy) -> None:
    """``http_proxy`` and ``https_proxy`` name ``proxy``; no other proxy setting is set."""
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.setenv("https_proxy", proxy.url)
