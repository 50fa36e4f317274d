"""nginx, run throwaway on loopback with the configuration ``manage.py nginx_config``
renders, in front of stub upstreams: small HTTP servers that stand for the site (gunicorn)
and for the network gateway, record every request that reaches them, and answer the way
the proxy's tests need (a page, a stream of events line by line, a WebSocket upgrade)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from edge.nginx import Deployment, nginx_config_render
from tests.support.certificates import write_self_signed_certificate
from tests.support.redis import free_port
from tests.support.require import require

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
#: A non-root nginx, as in the compose stack: when the tests run as root, nginx runs as
#: nobody (and its files must be readable by it).
NOBODY = 65534
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: Long enough for gzip (nginx compresses from 1 KiB).
PAGE = ("<p>Arena: environments, leaderboards, tournaments and duels.</p>\n" * 60).encode()


def require_nginx() -> None:
    require(
        os.access(NGINX, os.X_OK),
        "nginx is not installed (apt-get install nginx), so the proxy's configuration "
        "cannot be checked",
    )


@dataclasses.dataclass
class Received:
    """A request as it reached an upstream."""

    method: str
    path: str
    headers: Message
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass  # the tests read what was received, not a log

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        upstream = self.server.upstream
        upstream.received.append(Received(self.command, self.path, self.headers, body))
        path = self.path.split("?", 1)[0]
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self._websocket()
        elif path.endswith("/events"):
            self._stream()
        elif self.command == "POST":
            self._answer(200, "application/json", json.dumps({"received": len(body)}).encode())
        elif path.endswith("/forwarded"):
            seen = {name: self.headers.get(name) for name in ("Host", "X-Forwarded-For")}
            seen["X-Forwarded-Proto"] = self.headers.get("X-Forwarded-Proto")
            self._answer(200, "application/json", json.dumps(seen).encode())
        elif path == "/framed":
            self._answer(200, "text/html; charset=utf-8", PAGE, {"X-Frame-Options": "SAMEORIGIN"})
        elif path.startswith("/api/"):
            self._answer(200, "application/json", json.dumps({"items": [PAGE.decode()]}).encode())
        else:
            self._answer(200, "text/html; charset=utf-8", PAGE)

    def _answer(
        self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Served-By", self.server.upstream.name)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _stream(self) -> None:
        """Two events: the second only once the test has seen the first through nginx
        (``Upstream.release``), so a proxy that buffered would never deliver it in time."""
        sse = "text/event-stream" in self.headers.get("Accept", "")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/x-ndjson")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Served-By", self.server.upstream.name)
        self.end_headers()
        try:
            for seq in (1, 2):
                if seq == 2 and not self.server.upstream.release.wait(10):
                    break
                event = json.dumps({"type": "ping", "seq": str(seq)})
                self._chunk(
                    f"id: {seq}\ndata: {event}\n\n".encode() if sse else f"{event}\n".encode()
                )
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True  # the client left: so does the stream

    def _websocket(self) -> None:
        """The handshake (RFC 6455), then every byte sent back as it came."""
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.send_header("X-Served-By", self.server.upstream.name)
        self.end_headers()
        self.connection.settimeout(10)
        try:
            while data := self.connection.recv(4096):
                self.connection.sendall(data)
        except OSError:
            pass
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: Upstream


class Upstream:
    """A stub of the site or of the gateway on a loopback port (``name`` says which, in
    an ``X-Served-By`` header), recording what reaches it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.received: list[Received] = []
        #: Lets a stream send its second event.
        self.release = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.upstream = self
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [request.path for request in self.received]

    def stop(self) -> None:
        """Stop answering: the port is closed, as when the container is down."""
        self.release.set()
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()
            self.thread.join()


@dataclasses.dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclasses.dataclass
class Proxy:
    """nginx on loopback: ``folder`` holds its files as the compose stack mounts them."""

    folder: Path
    deployment: Deployment
    config: Path
    web: Upstream
    gateway: Upstream
    process: subprocess.Popen[bytes] | None = None

    @property
    def static_root(self) -> Path:
        return self.folder / "static"

    @property
    def media_root(self) -> Path:
        return self.folder / "media"

    @property
    def access_log(self) -> Path:
        return Path(self.deployment.access_log)

    @property
    def certificate(self) -> Path:
        return self.deployment.certificate

    @property
    def error_log(self) -> Path:
        return self.deployment.runtime_dir / "error.log"

    def connection(
        self, *, https: bool = False, source: str = "127.0.0.1", timeout: float = 15
    ) -> http.client.HTTPConnection:
        if https:
            context = ssl.create_default_context(cafile=str(self.certificate))
            return http.client.HTTPSConnection(
                "127.0.0.1",
                self.deployment.https_port,
                timeout=timeout,
                context=context,
                source_address=(source, 0),
            )
        return http.client.HTTPConnection(
            "127.0.0.1", self.deployment.http_port, timeout=timeout, source_address=(source, 0)
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        https: bool = False,
        source: str = "127.0.0.1",
    ) -> Answer:
        """One request on a new connection; the body as it came (not decompressed)."""
        connection = self.connection(https=https, source=source)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            connection.close()

    def start(self) -> None:
        """Render the configuration now (certificates found or not) and run nginx, once it
        listens on each of its ports. A port found free can be taken by another test's
        server before nginx binds it (nginx then ends, after its retries): again on new
        ports then."""
        for _ in range(5):
            self.config.write_text(nginx_config_render(deployment=self.deployment))
            self.error_log.unlink(missing_ok=True)
            self.process = subprocess.Popen(
                [NGINX, "-e", str(self.error_log), "-c", str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                **_as_nobody(),
            )
            if self._listening():
                return
            errors = _read(self.error_log)
            if "Address already in use" not in errors:
                raise RuntimeError(f"nginx did not start:\n{errors}")
            https_port = free_port()
            self.deployment = dataclasses.replace(
                self.deployment,
                http_port=free_port(),
                https_port=https_port,
                public_https_port=https_port,
            )
        raise RuntimeError("no free port stayed free for nginx five times running")

    def _listening(self) -> bool:
        """Whether nginx listens on all its ports (True) or ended first (False), however
        long that takes on a loaded machine (ten minutes at the very most: a guard against
        a hang, not a measure of speed). Listening on one port is not enough: nginx binds
        them in turn, and ends if a later one is taken."""
        assert self.process is not None
        ports = [self.deployment.http_port]
        if self.certificate.is_file():
            ports.append(self.deployment.https_port)
        guard = time.monotonic() + 600
        while self.process.poll() is None:
            if all(_accepts(port) for port in ports):
                if "Address already in use" not in _read(self.error_log):
                    return True
                # Another server holds one of them: nginx retries, then ends.
                self.process.wait()
            if time.monotonic() > guard:
                raise RuntimeError(f"nginx neither listens nor ends:\n{_read(self.error_log)}")
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def reload(self) -> None:
        """``nginx -s reload``, as an operator would after renewing the certificate."""
        subprocess.run(
            [NGINX, "-s", "reload", "-e", str(self.error_log), "-c", str(self.config)],
            check=True,
            capture_output=True,
            timeout=30,
            **_as_nobody(),
        )

    def served_certificate(self) -> bytes:
        """The certificate HTTPS presents now (DER)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        address = ("127.0.0.1", self.deployment.https_port)
        with (
            socket.create_connection(address, 5) as plain,
            context.wrap_socket(plain) as secure,
        ):
            served = secure.getpeercert(binary_form=True)
        assert served is not None
        return served


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else "(no error log)"


def _as_nobody() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    return {"user": NOBODY, "group": NOBODY, "extra_groups": []}


def nginx_test(config: Path, runtime_dir: Path) -> subprocess.CompletedProcess[str]:
    """``nginx -t`` as the proxy would run (not as root)."""
    # nginx opens /dev/stdout (the default access log) again as its non-root user: a pipe
    # root made would refuse it (Docker hands a container's user its own stdio).
    return subprocess.run(
        [NGINX, "-t", "-e", str(runtime_dir / "error.log"), "-c", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=30,
        **_as_nobody(),
    )


def self_signed_certificate(folder: Path) -> None:
    """``fullchain.pem`` and ``privkey.pem`` for 127.0.0.1, as a mounted certificate."""
    folder.mkdir(parents=True, exist_ok=True)
    write_self_signed_certificate(certificate=folder / "fullchain.pem", key=folder / "privkey.pem")
    # nginx reads the key as its own, non-root user.
    (folder / "privkey.pem").chmod(0o644)


def proxy_folder() -> Path:
    """A folder nginx's non-root user can read, its runtime directory writable by it."""
    folder = Path(tempfile.mkdtemp(prefix="arena-test-nginx-"))
    folder.chmod(0o755)
    for name in ("static", "media", "maintenance", "tls", "acme", "run"):
        (folder / name).mkdir(mode=0o755)
    if os.geteuid() == 0:
        os.chown(folder / "run", NOBODY, NOBODY)
    return folder


def proxy_deployment(folder: Path, web: Upstream, gateway: Upstream) -> Deployment:
    https_port = free_port()
    return Deployment(
        web=web.address,
        gateway=gateway.address,
        resolver="",
        http_port=free_port(),
        https_port=https_port,
        public_https_port=https_port,
        tls_dir=folder / "tls",
        maintenance_flag=folder / "maintenance" / "on",
        acme_dir=folder / "acme",
        runtime_dir=folder / "run",
        access_log=str(folder / "run" / "access.log"),
        error_log=str(folder / "run" / "error.log"),
    )


def proxy_started(
    settings: Any,
    *,
    tls: bool = False,
    site_address: str | None = None,
    gateway_address: str | None = None,
) -> Iterator[Proxy]:
    """A started ``Proxy`` (HTTPS too with ``tls``), stopped and deleted afterwards. The
    site's settings (pytest-django's ``settings``) are read when it starts; its static
    files are the proxy's folder's. ``site_address``, ``gateway_address``: the
    ``host:port`` of the real one instead of the stub."""
    folder = proxy_folder()
    settings.STATIC_ROOT = folder / "static"
    web, gateway = Upstream("web"), Upstream("gateway")
    if tls:
        self_signed_certificate(folder / "tls")
    deployment = proxy_deployment(folder, web, gateway)
    if site_address is not None:
        deployment = dataclasses.replace(deployment, web=site_address)
    if gateway_address is not None:
        deployment = dataclasses.replace(deployment, gateway=gateway_address)
    proxy = Proxy(folder, deployment, folder / "run" / "nginx.conf", web, gateway)
    try:
        proxy.start()
        yield proxy
    finally:
        proxy.stop()
        for upstream in (web, gateway):
            upstream.stop()
        shutil.rmtree(folder, ignore_errors=True)
