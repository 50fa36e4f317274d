"""A seat with no process of its own: the referee talks to a socket whose other end is
served by threads of this process (the ``remote`` seat relays it to a network client,
the ``llm`` seat answers it with the LLM harness).

To the referee it is a sandboxed agent like any other: ``request_fd`` and ``reply_fd`` are
one end of a socket pair; ``exit_fd`` becomes readable, and the stream ends, as soon as
the seat is over. How it ended is ``termination()``: Arena's own failure (``_fail``)
raises ``SandboxError``, so that the duel ends in error, unrated, and is never charged
to the agent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator

from sandboxes.base import CappedLog, MoveKey, SandboxError, Termination

#: How often a seat's threads look up from a wait to see whether the seat was stopped.
POLL_SECONDS = 0.2


class SocketSeat:
    def __init__(self, *, log_bytes: int) -> None:
        self._log = CappedLog(log_bytes)
        referee_end, self._relay_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        referee_end.setblocking(False)
        self._referee_end = referee_end
        self.request_fd = self.reply_fd = referee_end.fileno()
        exit_read, self._exit_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.exit_fd: int | None = exit_read
        self._stop = threading.Event()
        #: Set once the seat has nothing more to do: its duel said bye, or it ended.
        self._done = threading.Event()
        self._said_bye = False
        self._ended = False
        #: Why the seat is gone for good (a remote client that stayed away, or resigned),
        #: if it is.
        self._gone: str | None = None
        self._resigned = False
        #: Arena's own failure, if any: never charged to the agent.
        self._failure: str | None = None
        self._closed = False

    def _note(self, text: str) -> None:
        self._log.write(f"[{time.strftime('%H:%M:%S')}] {text}\n".encode())

    def _fail(self, why: str) -> None:
        if self._failure is None and self._gone is None:
            self._failure = why
            self._note(f"Arena failed: {why}")
        self._end()

    def _end(self) -> None:
        """The seat is over: the referee sees its end at once (``exit_fd``, then EOF)."""
        self._done.set()
        if self._ended:
            return
        self._ended = True
        with contextlib.suppress(OSError):
            os.write(self._exit_write, b"x")
        with contextlib.suppress(OSError):
            self._relay_end.shutdown(socket.SHUT_RDWR)

    def _referee_lines(self) -> Iterator[bytes]:
        """The referee's messages, a line each, until the seat stops or the stream ends."""
        buffer = b""
        self._relay_end.settimeout(POLL_SECONDS)
        while not self._stop.is_set():
            try:
                chunk = self._relay_end.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line, buffer = buffer[:end], buffer[end + 1 :]
                yield line

    def _heard_bye(self) -> None:
        self._note("duel over")
        self._said_bye = True
        self._done.set()

    # -- the SandboxedAgent interface -----------------------------------------------------

    def termination(self, wait: float = 0.0) -> Termination | None:
        self._done.wait(wait)
        if self._failure is not None:
            raise SandboxError(self._failure)
        if self._gone is not None:
            return Termination(None, disconnected=True, resigned=self._resigned, detail=self._gone)
        if self._closed or self._said_bye:
            return Termination(0)
        return None

    def wait_for_exit(self, seconds: float) -> None:
        self._done.wait(seconds)

    def log(self) -> str:
        return self._log.text()

    def pin_to(self, cpus: set[int]) -> bool:
        """Nothing runs here to pin: a remote agent runs on its own machine, an LLM
        player's model behind its provider's API."""
        return False

    def mark_move(self, move: MoveKey | None) -> None:
        """No stderr here: a remote agent's log stays on its machine; an LLM seat keeps
        its conversation instead (``transcript``)."""

    def move_logs(self) -> dict[MoveKey, str]:
        return {}

    def timeout_excuse(self) -> str | None:
        """Arena's failure, if the seat has failed (it may not have ended yet)."""
        return self._failure

    def _close_fds(self) -> None:
        for closing in (self._referee_end.close, self._relay_end.close):
            with contextlib.suppress(OSError):
                closing()
        for fd in (self.exit_fd, self._exit_write):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.exit_fd = None
