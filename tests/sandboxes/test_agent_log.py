"""An agent's log cut into moves (``sandboxes.base.AgentLog``): a mark is a position in the
stream, so what a move gets never depends on when the reading thread reads."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from sandboxes.base import DRAIN_READS, AgentLog, SandboxLimits
from tests.support.processes import joined


def pipe_ends() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    return read_end, write_end


def socket_ends() -> tuple[int, int]:
    # The docker sandbox's log stream is a Unix socket.
    reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return reader.detach(), writer.detach()


@pytest.fixture(params=[pipe_ends, socket_ends], ids=["pipe", "unix socket"])
def stream(request) -> Iterator[tuple[int, int]]:
    read_end, write_end = request.param()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


def read_to_the_end(log: AgentLog, write_end: int) -> None:
    os.close(write_end)
    while log.read_some():
        pass
    log.finish()


def test_each_move_gets_what_was_written_before_its_mark_however_late_it_is_read(stream):
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits())

    os.write(write_end, b"loading the model\n")
    log.mark_move(None)  # the handshake: start-up output is no move's
    os.write(write_end, b"thinking\nchose 3")
    log.mark_move((0, 0))
    os.write(write_end, b"\nthinking again\n")
    log.mark_move((0, 2))
    os.write(write_end, b"after the last answer\n")
    # Nothing was read while the marks were made: the thread could have been asleep.
    read_to_the_end(log, write_end)

    assert log.move_logs() == {(0, 0): "thinking\nchose 3", (0, 2): "\nthinking again\n"}
    assert log.text() == (
        "loading the model\nthinking\nchose 3\nthinking again\nafter the last answer\n"
    )


def test_a_mark_after_the_reading_caught_up_closes_the_move_at_once(stream):
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits())

    os.write(write_end, b"first move")
    while log.read_some() and log.position < len(b"first move"):
        pass
    log.mark_move((0, 1))
    log.mark_move((0, 3))  # it wrote nothing during this move
    os.write(write_end, b"third move")
    log.mark_move((1, 0))
    read_to_the_end(log, write_end)

    assert log.move_logs() == {(0, 1): "first move", (1, 0): "third move"}


def test_it_keeps_the_first_bytes_of_a_move_and_says_how_many_were_cut(stream):
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits(move_log_bytes=100))
    reader = threading.Thread(target=log.run, args=(threading.Event(),))
    reader.start()

    # More than a pipe holds: the writer waits for the reading thread, as an agent would.
    flood = b"x" * 300_000
    for offset in range(0, len(flood), 65536):
        os.write(write_end, flood[offset : offset + 65536])
    log.mark_move((0, 0))
    os.write(write_end, b"next move")
    log.mark_move((0, 2))
    os.close(write_end)
    joined(reader)

    moves = log.move_logs()
    assert moves[(0, 0)] == "x" * 100 + "\n[... 299900 more bytes of this move's log cut]"
    assert moves[(0, 2)] == "next move"


def test_it_stops_keeping_moves_once_the_duels_limit_is_reached(stream):
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits(log_bytes=250, move_log_bytes=100))

    for step in range(4):
        os.write(write_end, b"z" * 100)
        log.mark_move((0, step))
    read_to_the_end(log, write_end)

    moves = log.move_logs()
    assert moves[(0, 0)] == moves[(0, 1)] == "z" * 100
    assert moves[(0, 2)] == "z" * 50 + (
        "\n[... 50 bytes of this move's log cut: its log limit for the duel is reached]"
    )
    assert moves[(0, 3)] == (
        "[... 100 bytes of this move's log cut: its log limit for the duel is reached]"
    )
    assert sum(text.count("z") for text in moves.values()) == 250


def test_invalid_utf8_is_replaced_not_refused(stream):
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits())

    os.write(write_end, b"caf\xc3\xa9 \xff\xfe")
    log.mark_move((2, 5))
    read_to_the_end(log, write_end)

    assert log.move_logs() == {(2, 5): "café \ufffd\ufffd"}


def test_the_caller_finds_the_logs_end_itself_once_no_process_holds_it(stream):
    # A duel's end reads the last of an exited agent's log without waiting for the
    # reading thread (there is none here) to wake up and end.
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits())
    os.write(write_end, b"thinking")
    log.mark_move((0, 0))
    os.write(write_end, b"\ngoodbye\n")
    log.mark_move((0, 2))

    assert not log.drain()  # the agent still holds its log: not whole
    assert log.text() == "thinking\ngoodbye\n"
    os.close(write_end)
    assert log.drain() and log.ended
    assert log.move_logs() == {(0, 0): "thinking", (0, 2): "\ngoodbye\n"}


def test_a_caller_reading_an_agent_that_writes_all_the_time_comes_back(tmp_path):
    # A stream that always has more to give, as a live agent's that writes faster than it
    # is read: a file four times what the caller reads at the most.
    flood = tmp_path / "flood"
    flood.write_bytes(b"x" * (DRAIN_READS * (1 << 16) * 4))
    read_end = os.open(flood, os.O_RDONLY)
    try:
        log = AgentLog(read_end, SandboxLimits(log_bytes=1 << 30))

        assert not log.drain()  # back, the rest left to the log's thread
        assert log.position == DRAIN_READS * (1 << 16)
        while log.read_some():
            pass
        assert log.ended and len(log.text()) == flood.stat().st_size
    finally:
        os.close(read_end)


def test_a_stopped_log_is_read_no_more(stream):
    # Its stream is closed next, and the number may be another file's by then.
    read_end, write_end = stream
    log = AgentLog(read_end, SandboxLimits())
    log.stop()
    os.write(write_end, b"late")
    os.close(write_end)

    assert not log.drain() and not log.read_some()
    assert log.text() == ""
