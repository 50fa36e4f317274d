"""The engine proxy for tests: started as production starts it, on a socket of its own.

``engine_proxy_running(bind_roots)`` starts ``python -m engine_proxy`` in front of the
local engine and stops it afterwards; ``using_engine_proxy(proxy)`` points this
process's ``sandboxes.docker_engine`` at it, as ``DOCKER_HOST`` points a worker's.
``raw_call`` speaks to it byte for byte, as a hostile client would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sandboxes import docker_engine
from tests.support.processes import ended

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
REAL_ENGINE = "/var/run/docker.sock"


@dataclasses.dataclass
class RunningProxy:
    socket: str
    log_path: Path

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"

    def log(self) -> str:
        return self.log_path.read_text()

    def refusals(self) -> list[str]:
        return [line for line in self.log().splitlines() if " refused " in line]

    def forwarded(self) -> list[str]:
        """The calls sent on to the engine (logged with ``--verbose``)."""
        return [line for line in self.log().splitlines() if " forwarding " in line]


@contextlib.contextmanager
def engine_proxy_running(
    bind_roots: list[Path], *options: str, engine: str = REAL_ENGINE
) -> Iterator[RunningProxy]:
    """The proxy in front of ``engine`` (the machine's, or a second one's socket)."""
    folder = Path(tempfile.mkdtemp(prefix="arena-engine-proxy-"))
    listen = folder / "docker.sock"
    log_path = folder / "proxy.log"
    command = [sys.executable, "-m", "engine_proxy", "--listen", str(listen), "--engine"]
    command += [engine, *[f"--bind-root={root}" for root in bind_roots], *options]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=REPOSITORY_ROOT, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 20
        # The socket's file exists once it is bound, before the proxy listens: ready is
        # when a connection is accepted (a loaded machine showed the difference).
        while not _accepts(listen):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the engine proxy did not start: {log_path.read_text()}")
            time.sleep(0.05)
        yield RunningProxy(socket=str(listen), log_path=log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        ended(process)
        for path in (listen, log_path):
            path.unlink(missing_ok=True)
        folder.rmdir()


@contextlib.contextmanager
def using_engine_proxy(proxy: RunningProxy) -> Iterator[None]:
    """``sandboxes.docker_engine`` (and every Docker client made from the environment)
    talks to the proxy instead of the engine, until the block ends."""
    before = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = proxy.docker_host
    docker_engine._client_for.cache_clear()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = before
        docker_engine._client_for.cache_clear()


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("docker", timeout=60)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def raw_call(
    path_to_socket: str,
    method: str,
    path: str,
    body: bytes | dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request; returns the status and the answer's JSON (or its text)."""
    connection = _UnixConnection(path_to_socket)
    try:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        sent = {"Content-Type": "application/json", **(headers or {})}
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        text = response.read()
    finally:
        connection.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text.decode(errors="replace")


def _accepts(path: Path) -> bool:
    """Whether something listens on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
