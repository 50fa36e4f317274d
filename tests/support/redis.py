"""A throwaway Redis server: ``redis_server()`` starts ``redis-server`` on a free loopback
port (no persistence, its folder deleted at the end); the ``redis_url`` fixture holds one
for the test session. Django-free, so the seat bus's tests use it too, and the benchmarks."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ended
from tests.support.require import require


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def redis_server(*options: str) -> Iterator[str]:
    """The URL of a new ``redis-server`` (with these extra command-line ``options``), once it
    accepts connections; stopped and its folder deleted afterwards. RuntimeError when it is
    not installed or does not start."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    folder = Path(tempfile.mkdtemp(prefix="arena-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        ended(process)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    require(
        shutil.which("redis-server"),
        "redis-server is not installed (apt-get install redis-server), so "
        "pipeline tests with a real broker cannot run",
    )
    with contextlib.ExitStack() as running:
        try:
            url = running.enter_context(redis_server())
        except RuntimeError as error:
            pytest.fail(str(error), pytrace=False)
        yield url
