"""``python -m arena_sdk.bridge`` on the host: the agent's streams become the referee's sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SDK_DIR = Path(__file__).resolve().parents[2] / "sdk"

ECHO_AGENT = """
import sys
line = sys.stdin.readline()
sys.stderr.write("log: got " + line)
sys.stderr.flush()
sys.stdout.write("reply to " + line)
sys.stdout.flush()
"""


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, str]]:
    # Short path: Unix socket paths are limited to about 100 bytes.
    folder = tempfile.mkdtemp(prefix="bridge-")
    path = os.path.join(folder, "agent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(3)
    server.settimeout(10)
    yield server, path
    server.close()
    os.unlink(path)
    os.rmdir(folder)


def start_bridge(path: str, *command: str, stderr: int = subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "arena_sdk.bridge", path, "--", *command],
        env={**os.environ, "PYTHONPATH": str(SDK_DIR)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def read_all(connection: socket.socket) -> bytes:
    received = b""
    while chunk := connection.recv(1 << 16):
        received += chunk
    return received


def test_it_connects_stdin_stdout_and_stderr_in_that_order(listener):
    server, path = listener
    bridge = start_bridge(path, sys.executable, "-c", ECHO_AGENT)
    requests, replies, log = (server.accept()[0] for _ in range(3))

    requests.sendall(b"move 7\n")

    assert read_all(replies) == b"reply to move 7\n"
    assert read_all(log) == b"log: got move 7\n"
    assert bridge.wait(timeout=10) == 0
    for connection in (requests, replies, log):
        connection.close()


def test_it_shows_a_closed_stdout_as_the_end_of_the_replies(listener):
    server, path = listener
    agent = "import os, time; os.close(1); time.sleep(5)"
    bridge = start_bridge(path, sys.executable, "-c", agent)
    requests, replies, log = (server.accept()[0] for _ in range(3))
    replies.settimeout(3)

    try:
        assert replies.recv(10) == b""  # end of file while the agent still runs
        assert bridge.poll() is None
    finally:
        bridge.kill()
        bridge.wait()
        for connection in (requests, replies, log):
            connection.close()


def test_it_exits_125_when_the_referee_is_not_listening(tmp_path):
    bridge = start_bridge(str(tmp_path / "absent.sock"), "true", stderr=subprocess.PIPE)
    _, stderr = bridge.communicate(timeout=10)

    assert bridge.returncode == 125
    assert b"cannot reach the referee" in stderr


def test_it_reports_a_command_it_cannot_run_in_the_agents_log(listener):
    server, path = listener
    bridge = start_bridge(path, "/nonexistent/agent")
    requests, replies, log = (server.accept()[0] for _ in range(3))

    assert bridge.wait(timeout=10) == 127
    assert b"cannot start /nonexistent/agent" in read_all(log)
    for connection in (requests, replies, log):
        connection.close()
