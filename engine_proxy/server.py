"""The engine proxy's server: one thread per connection, one request per connection.

For each request: find its route (``routes.route``), read its JSON body if it has one
(at most ``policy.MAX_JSON_BYTES``), let the route's check decide (``routes.decide``),
then either answer it (a refusal, or an inspection the check already made) or open a
connection to the engine, send the request as the check rebuilt it, stream the client's
body if the call takes one, and relay the engine's answer as it comes (build output,
logs). A client that goes away drops the engine's connection too, which is how an
abandoned build is cancelled. An attach becomes a raw byte pipe both ways after the
engine's ``101``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import selectors
import socket
import socketserver
import stat
import struct
import urllib.parse
from typing import Any

from engine_proxy import policy, routes, validators
from engine_proxy.policy import Call, Forward, Lookup, Policy, Refused
from engine_proxy.wire import (
    CHUNK,
    BadRequest,
    Request,
    Wire,
    answer,
    body_chunks,
    drain,
    read_body,
    read_request,
    request_head,
    respond,
)

logger = logging.getLogger("engine_proxy")

#: How long a client may take to send a request's head and body.
REQUEST_TIMEOUT = 60.0
#: How long an inspection may take the engine.
LOOKUP_TIMEOUT = 30.0
#: What the proxy reads of a refused request's body so that the client sees the refusal.
DRAIN_BYTES = 64 * 1024 * 1024


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("docker", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class EngineDown(Exception):
    """The engine did not answer a lookup: the call gets 502, as a forward would."""


class UnixEngine:
    """The real engine, asked to inspect what a call names (``policy.Engine``)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _inspect(self, path: str) -> Lookup:
        connection = _UnixConnection(self.path, LOOKUP_TIMEOUT)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return Lookup(status=response.status, body=response.read(policy.MAX_JSON_BYTES * 4))
        except (OSError, http.client.HTTPException) as error:
            raise EngineDown(str(error) or type(error).__name__) from None
        finally:
            connection.close()

    def container(self, version: str, reference: str) -> Lookup:
        return self._inspect(f"{version}/containers/{reference}/json")

    def image(self, version: str, reference: str) -> Lookup:
        return self._inspect(f"{version}/images/{reference}/json")


def _peer(sock: socket.socket) -> str:
    """Who is on the other end, for the log (``SO_PEERCRED``)."""
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        pid, uid, _ = struct.unpack("3i", credentials)
    except OSError:
        return "an unknown client"
    return f"pid {pid} uid {uid}"


def _strict_json(body: bytes) -> Any:
    def no_constants(name: str) -> None:
        raise Refused(f"{name} is not JSON the engine reads")

    try:
        return json.loads(
            body, object_pairs_hook=validators.unique_keys, parse_constant=no_constants
        )
    except ValueError:
        raise Refused("the body is not valid JSON") from None


class EngineProxy(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Listens on ``listen`` (a Unix socket it creates) and forwards to ``engine``."""

    daemon_threads = True

    def __init__(
        self,
        listen: str,
        engine: str,
        rules: Policy,
        *,
        socket_mode: int = 0o660,
        socket_group: int | None = None,
    ) -> None:
        self.engine_path = engine
        self.engine = UnixEngine(engine)
        self.rules = rules
        if os.path.lexists(listen):
            if not stat.S_ISSOCK(os.lstat(listen).st_mode):
                raise OSError(f"{listen} exists and is not a socket")
            os.unlink(listen)  # a previous run's
        super().__init__(listen, socketserver.BaseRequestHandler, bind_and_activate=True)
        os.chmod(listen, socket_mode)
        if socket_group is not None:
            os.chown(listen, -1, socket_group)

    def server_close(self) -> None:
        super().server_close()
        if isinstance(self.server_address, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.server_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        self.serve_connection(request)

    # -- one connection ------------------------------------------------------------------

    def serve_connection(self, client: socket.socket) -> None:
        wire = Wire(client)
        client.settimeout(REQUEST_TIMEOUT)
        try:
            request = read_request(wire)
            if request is not None:
                self._serve(client, wire, request)
        except BadRequest as error:
            logger.warning("bad request from %s: %s", _peer(client), error.message)
            answer(client, error.status, f"engine proxy: {error.message}")
        except OSError as error:
            logger.debug("connection from %s ended: %s", _peer(client), error)

    def _serve(self, client: socket.socket, wire: Wire, request: Request) -> None:
        body_kind = "none"
        try:
            chosen, version, path, found = routes.route(request.method, request.path)
            body_kind = chosen.body
            document = None
            if body_kind == "json":
                try:
                    body = read_body(wire, request, policy.MAX_JSON_BYTES)
                except BadRequest as error:
                    if error.status == 413:  # read the rest, so the client sees the answer
                        drain(wire, request, DRAIN_BYTES)
                    raise
                document = _strict_json(body)
            elif body_kind == "none" and request.length != 0:
                raise Refused("this call takes no body")
            call = Call(request.method, version, path, request.query, request.headers, document)
            forward = routes.decide(self.rules, self.engine, chosen, call, found)
        except Refused as refusal:
            logger.warning(
                "refused %s %s from %s: %s", request.method, request.path, _peer(client),
                refusal.rule,
            )  # fmt: skip
            if body_kind != "json":  # a JSON body was read whole already
                drain(wire, request, DRAIN_BYTES)
            answer(client, refusal.status, f"engine proxy: {refusal.rule}")
            return
        except EngineDown as error:
            if body_kind != "json":
                drain(wire, request, DRAIN_BYTES)
            answer(client, 502, f"engine proxy: the Docker engine does not answer: {error}")
            return
        if forward.answer is not None:
            respond(client, forward.answer.status, forward.answer.body)
            return
        logger.debug("forwarding %s %s%s", request.method, version, forward.path)
        self._forward(client, wire, request, version, forward)

    def _forward(
        self, client: socket.socket, wire: Wire, request: Request, version: str, forward: Forward
    ) -> None:
        target = version + forward.path
        if forward.query:
            target += "?" + urllib.parse.urlencode(forward.query, doseq=True)
        engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                engine.connect(self.engine_path)
            except OSError as error:
                answer(client, 502, f"engine proxy: the Docker engine does not answer: {error}")
                return
            if forward.body is not None:
                head = request_head(
                    method=request.method, target=target, content_type="application/json",
                    length=len(forward.body), upgrade=False,
                )  # fmt: skip
                engine.sendall(head + forward.body)
            elif forward.stream:
                if not self._stream_body(client, wire, request, engine, target):
                    return
            else:
                engine.sendall(
                    request_head(
                        method=request.method, target=target, content_type=None, length=0,
                        upgrade=forward.upgrade,
                    )
                )  # fmt: skip
            client.settimeout(None)
            engine.settimeout(None)
            if forward.upgrade:
                self._upgrade(client, wire, engine)
            else:
                _relay(client, engine, both_ways=False)
        finally:
            engine.close()

    def _stream_body(
        self, client: socket.socket, wire: Wire, request: Request, engine: socket.socket,
        target: str,
    ) -> bool:  # fmt: skip
        """Send the client's body on as it comes; False if the client's body was refused."""
        chunked = request.length is None
        engine.sendall(
            request_head(
                method=request.method, target=target, content_type="application/tar",
                length=request.length, upgrade=False,
            )
        )  # fmt: skip
        try:
            for piece in body_chunks(wire, request, self.rules.max_stream_bytes):
                engine.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                engine.sendall(b"0\r\n\r\n")
        except BadRequest as error:
            # Part of it went to the engine: dropping its connection abandons the call.
            logger.warning("refused %s %s from %s: %s", request.method, request.path,
                           _peer(client), error.message)  # fmt: skip
            answer(client, error.status, f"engine proxy: {error.message}")
            return False
        except OSError:
            pass  # the engine answered early (an error) and closed: relay its answer
        return True

    def _upgrade(self, client: socket.socket, wire: Wire, engine: socket.socket) -> None:
        """Relay the engine's answer to an attach; after a 101, bytes flow both ways."""
        head = b""
        while b"\r\n\r\n" not in head:
            data = engine.recv(CHUNK)
            if not data:
                client.sendall(head)
                return
            head += data
            if len(head) > 64 * 1024:
                raise OSError("the engine's answer has no end of head")
        client.sendall(head)
        status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/1.") else b""
        if status != b"101":
            _relay(client, engine, both_ways=False)
            return
        pending = wire.take_buffered()
        if pending:
            engine.sendall(pending)
        _relay(client, engine, both_ways=True)


def _relay(client: socket.socket, engine: socket.socket, *, both_ways: bool) -> None:
    """The engine's bytes to the client until the engine closes; the client's to the
    engine too when ``both_ways``. A client that closes ends the call, unless both ways,
    where its end of input is passed on (the container's stdin closes)."""
    with selectors.DefaultSelector() as selector:
        selector.register(engine, selectors.EVENT_READ)
        selector.register(client, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is engine:
                    data = engine.recv(CHUNK)
                    if not data:
                        return
                    client.sendall(data)
                    continue
                data = client.recv(CHUNK)
                if data and both_ways:
                    engine.sendall(data)
                elif both_ways:
                    engine.shutdown(socket.SHUT_WR)
                    selector.unregister(client)
                else:
                    return  # gone, or a second request: one request per connection
