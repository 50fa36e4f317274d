"""Just enough HTTP/1.1 for the proxy: a request's head, its body, an answer of our own.

The proxy serves one request per connection and sends the engine one request per
connection, framed by itself (``Connection: close``): whatever framing tricks a client
tries (two lengths, a second request after the first), the engine sees exactly one
request, the one the policy checked.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import urllib.parse
from collections.abc import Iterator

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
CHUNK = 64 * 1024
_CHUNK_LINE = 1024


class BadRequest(Exception):
    """Not HTTP the proxy reads: answered with ``status`` and the connection closed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Wire:
    """A socket read through a buffer of our own, so no byte read ahead is lost."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def _fill(self) -> bool:
        data = self.sock.recv(CHUNK)
        self.buffer += data
        return bool(data)

    def readline(self, limit: int) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if 0 <= end < limit:
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) >= limit:
                raise BadRequest("a line of the request is too long", 431)
            if not self._fill():
                raise BadRequest("the connection closed in the middle of the request")

    def read_some(self, most: int) -> bytes:
        if not self.buffer and not self._fill():
            raise BadRequest("the connection closed in the middle of the body")
        data = bytes(self.buffer[:most])
        del self.buffer[:most]
        return data

    def take_buffered(self) -> bytes:
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    #: Lower-case names; each at most once.
    headers: dict[str, str]

    @property
    def length(self) -> int | None:
        """The body's length, or None for a chunked body."""
        if self.headers.get("transfer-encoding"):
            return None
        return int(self.headers.get("content-length", "0"))


def read_request(wire: Wire) -> Request | None:
    """The next request's head; None if the client closed without sending one."""
    if not wire.buffer and not wire._fill():
        return None
    line = wire.readline(MAX_HEAD_BYTES).decode("latin-1").rstrip("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("not an HTTP/1.1 request line")
    method, target, _ = parts
    headers: dict[str, str] = {}
    size = len(line)
    while True:
        raw = wire.readline(MAX_HEAD_BYTES).decode("latin-1")
        size += len(raw)
        if raw in {"\r\n", "\n"}:
            break
        if size > MAX_HEAD_BYTES or len(headers) >= MAX_HEADERS:
            raise BadRequest("the request's head is too large", 431)
        if raw[:1] in {" ", "\t"}:
            raise BadRequest("folded header lines are not accepted")
        name, colon, value = raw.partition(":")
        name = name.strip().lower()
        if not colon or not name or name != name.strip() or " " in name:
            raise BadRequest("a malformed header line")
        if name in headers:
            raise BadRequest(f"header {name} given twice")
        headers[name] = value.strip()
    encoding = headers.get("transfer-encoding")
    if encoding is not None and (encoding.lower() != "chunked" or "content-length" in headers):
        raise BadRequest("only a chunked body without Content-Length is accepted")
    if "content-length" in headers and not headers["content-length"].isdigit():
        raise BadRequest("Content-Length is not a number")
    if not target.startswith("/"):
        raise BadRequest("the request target must be a path")
    split = urllib.parse.urlsplit(target)
    if "%" in split.path:
        raise BadRequest("percent-encoded paths are not accepted")
    try:
        query = urllib.parse.parse_qs(
            split.query, keep_blank_values=True, strict_parsing=False, max_num_fields=100
        )
    except ValueError as error:
        raise BadRequest(f"the query string is not acceptable: {error}") from None
    return Request(method=method, path=split.path, query=query, headers=headers)


def _within(size: int, limit: int) -> None:
    if size > limit:
        raise BadRequest(f"the body may be at most {limit} bytes", 413)


def _exactly(wire: Wire, size: int) -> Iterator[bytes]:
    """The next ``size`` bytes, in pieces as they come."""
    while size > 0:
        data = wire.read_some(min(size, CHUNK))
        size -= len(data)
        yield data


def body_chunks(wire: Wire, request: Request, limit: int) -> Iterator[bytes]:
    """The request's body, in pieces as they come; ``BadRequest`` (413) past ``limit`` bytes."""
    length = request.length
    if length is not None:
        _within(length, limit)
        yield from _exactly(wire, length)
        return
    total = 0
    while True:
        size_line = wire.readline(_CHUNK_LINE).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise BadRequest("a malformed chunk size") from None
        if size == 0:
            while wire.readline(_CHUNK_LINE) not in {b"\r\n", b"\n"}:
                pass  # trailers: not forwarded
            return
        total += size
        _within(total, limit)
        yield from _exactly(wire, size)
        if wire.readline(_CHUNK_LINE) not in {b"\r\n", b"\n"}:
            raise BadRequest("a chunk does not end where its size says")


def read_body(wire: Wire, request: Request, limit: int) -> bytes:
    return b"".join(body_chunks(wire, request, limit))


def drain(wire: Wire, request: Request, limit: int) -> bool:
    """Read and drop the body (so that the client reads the answer instead of a broken
    pipe); False if it is longer than ``limit`` or broken."""
    try:
        for _ in body_chunks(wire, request, limit):
            pass
    except (BadRequest, OSError):
        return False
    return True


_REASONS = {
    200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 413: "Payload Too Large",
    431: "Request Header Fields Too Large", 502: "Bad Gateway",
}  # fmt: skip


def respond(sock: socket.socket, status: int, body: bytes) -> None:
    """A whole JSON answer, then the connection closes."""
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    sock.sendall(head.encode() + body)


def answer(sock: socket.socket, status: int, message: str) -> None:
    """An answer of the proxy's own, as the engine words errors: ``{"message": ...}``."""
    respond(sock, status, json.dumps({"message": message}).encode())


def request_head(
    *, method: str, target: str, content_type: str | None, length: int | None, upgrade: bool
) -> bytes:
    """The head sent to the engine: none of the client's headers, only the proxy's own
    (so no header of the client reaches the engine: no registry credentials either)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: docker", "User-Agent: arena-engine-proxy"]
    lines += ["Connection: Upgrade", "Upgrade: tcp"] if upgrade else ["Connection: close"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    if length is None:
        lines.append("Transfer-Encoding: chunked")
    elif length or method in {"POST", "PUT"}:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
