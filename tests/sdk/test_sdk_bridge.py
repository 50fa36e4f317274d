"""``python -m arena_sdk.bridge`` on the host: it asks the referee for the agent's streams
and receives pipes, which become the agent's stdin, stdout and stderr."""

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


def hand_pipes(server: socket.socket) -> tuple[int, int, int]:
    """What the docker sandbox does when the bridge asks: three pipes, the agent's ends
    sent; returns the referee's (requests to write, replies and log to read)."""
    connection, _ = server.accept()
    with connection:
        assert connection.recv(1) == b"P"
        requests, replies, log = os.pipe(), os.pipe(), os.pipe()
        socket.send_fds(connection, [b"P"], [requests[0], replies[1], log[1]])
    for descriptor in (requests[0], replies[1], log[1]):
        os.close(descriptor)
    return requests[1], replies[0], log[0]


def read_all(descriptor: int) -> bytes:
    received = b""
    while chunk := os.read(descriptor, 1 << 16):
        received += chunk
    return received


def close(*descriptors: int) -> None:
    for descriptor in descriptors:
        os.close(descriptor)


def test_it_puts_the_pipes_on_stdin_stdout_and_stderr_in_that_order(listener):
    server, path = listener
    bridge = start_bridge(path, sys.executable, "-c", ECHO_AGENT)
    requests, replies, log = hand_pipes(server)

    os.write(requests, b"move 7\n")

    assert read_all(replies) == b"reply to move 7\n"
    assert read_all(log) == b"log: got move 7\n"
    assert bridge.wait(timeout=10) == 0
    close(requests, replies, log)


def test_it_leaves_the_agent_nothing_but_its_three_streams(listener):
    server, path = listener
    agent = "import os; print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    bridge = start_bridge(path, sys.executable, "-c", agent)
    requests, replies, log = hand_pipes(server)

    # 0, 1, 2, and the descriptor listdir itself opens: no connection, no spare pipe end.
    assert read_all(replies) == b"[0, 1, 2, 3]\n"
    assert bridge.wait(timeout=10) == 0
    close(requests, replies, log)


def test_it_shows_a_closed_stdout_as_the_end_of_the_replies(listener):
    server, path = listener
    agent = "import os, time; os.close(1); time.sleep(5)"
    bridge = start_bridge(path, sys.executable, "-c", agent)
    requests, replies, log = hand_pipes(server)

    try:
        assert os.read(replies, 10) == b""  # end of file while the agent still runs
        assert bridge.poll() is None
    finally:
        bridge.kill()
        bridge.wait()
        close(requests, replies, log)


def test_it_exits_125_when_the_referee_is_not_listening(tmp_path):
    bridge = start_bridge(str(tmp_path / "absent.sock"), "true", stderr=subprocess.PIPE)
    _, stderr = bridge.communicate(timeout=10)

    assert bridge.returncode == 125
    assert b"cannot reach the referee" in stderr


def test_it_exits_125_when_the_referee_answers_without_the_streams(listener):
    server, path = listener
    bridge = start_bridge(path, "true", stderr=subprocess.PIPE)
    connection, _ = server.accept()
    with connection:
        assert connection.recv(1) == b"P"
        connection.sendall(b"P")  # no descriptors with it

        _, stderr = bridge.communicate(timeout=10)

    assert bridge.returncode == 125
    assert b"without the agent's streams" in stderr


def test_it_reports_a_command_it_cannot_run_in_the_agents_log(listener):
    server, path = listener
    bridge = start_bridge(path, "/nonexistent/agent")
    requests, replies, log = hand_pipes(server)

    assert bridge.wait(timeout=10) == 127
    assert b"cannot start /nonexistent/agent" in read_all(log)
    close(requests, replies, log)
