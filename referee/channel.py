"""The referee's end of one agent's protocol stream, with deadlines on every read and write.

Nothing an agent sends can crash or stall the referee: every failure becomes an
``AgentFailure`` naming what went wrong, and every wait is bounded. An agent that stops
is seen at once: its stream ends (end of file), or, where the sandbox offers one, its
``exit_fd`` says the agent's own process ended even though something it started still
holds the stream open.

``gather`` waits for several agents at once, each against its own deadline, so that one
agent's silence never costs another one time.
"""

from __future__ import annotations

import errno
import json
import os
import select
import time
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple, TypeVar

import orjson

from referee.results import FaultKind
from sandboxes.base import SandboxedAgent

#: The referee's JSON: orjson, several times faster than the standard library's on both
#: ends of a move (the SDK, which must stay dependency-free, keeps ``json``). It refuses
#: what is not JSON (NaN, invalid UTF-8, nesting past 1,024 levels) as a malformed message.
_ENCODE_OPTIONS = orjson.OPT_APPEND_NEWLINE
#: A game whose messages hold objects with integer keys: orjson's slower path, about a
#: quarter slower on a Connect Four request, so only taken when the fast one refuses.
_ENCODE_ANY_KEYS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS


def encode(message: dict[str, Any]) -> bytes:
    """One message as a protocol line (compact JSON and a newline)."""
    try:
        return orjson.dumps(message, option=_ENCODE_OPTIONS)
    except orjson.JSONEncodeError:
        return orjson.dumps(message, option=_ENCODE_ANY_KEYS)


def decode(line: bytes) -> dict[str, Any]:
    """Parse one protocol line; raises ValueError unless it is a JSON object with a type."""
    message = orjson.loads(line)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError("a message must be a JSON object with a string 'type'")
    return message


#: Faults after which the process cannot be trusted to answer the next request.
FATAL_KINDS = frozenset(
    {FaultKind.TIMEOUT, FaultKind.CRASH, FaultKind.MEMORY_EXCEEDED, FaultKind.OVERSIZED_MESSAGE}
)


class AgentFailure(Exception):
    def __init__(
        self, kind: FaultKind, message: str, *, fatal: bool | None = None, final: bool = False
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        #: True when the agent's process must be replaced before it can play again.
        self.fatal = final or (kind in FATAL_KINDS if fatal is None else fatal)
        #: True when it cannot be replaced either (a remote seat whose client left for good).
        self.final = final


class Channel:
    def __init__(self, agent: SandboxedAgent, *, max_message_bytes: int) -> None:
        self.agent = agent
        self.max_message_bytes = max_message_bytes
        self.buffer = bytearray()
        self.closed = False
        #: Readable when the agent wrote, closed its output or (``exit_fd``) ended.
        self.watched_fds = [agent.reply_fd]
        exit_fd = getattr(agent, "exit_fd", None)
        self.exit_fd: int | None = exit_fd
        if exit_fd is not None:
            self.watched_fds.append(exit_fd)
        self._reader = select.poll()
        for fd in self.watched_fds:
            self._reader.register(fd, select.POLLIN)
        self._writer = select.poll()
        self._writer.register(agent.request_fd, select.POLLOUT)

    def _lost(self) -> AgentFailure:
        """The agent stopped talking: work out why from how its process ended."""
        self.closed = True
        termination = self.agent.termination(wait=0.5)
        if termination is None:
            return AgentFailure(FaultKind.CRASH, "it closed its output stream")
        if termination.resigned:
            return AgentFailure(FaultKind.RESIGNED, termination.describe(), final=True)
        if termination.disconnected:
            return AgentFailure(FaultKind.TIMEOUT, termination.describe(), final=True)
        if termination.out_of_memory:
            return AgentFailure(
                FaultKind.MEMORY_EXCEEDED, "it exceeded its memory limit and stopped"
            )
        if termination.out_of_cpu:
            return AgentFailure(FaultKind.TIMEOUT, "it used up its CPU-time limit")
        return AgentFailure(FaultKind.CRASH, f"it stopped: {termination.describe()}")

    def send(self, message: dict[str, Any], deadline: float) -> None:
        if self.closed:
            raise AgentFailure(FaultKind.CRASH, "it is no longer running")
        data = encode(message)
        view: memoryview | None = None
        while True:
            try:
                written = os.write(self.agent.request_fd, data if view is None else view)
            except BlockingIOError:
                written = 0
            except OSError as error:
                if error.errno in (errno.EPIPE, errno.EBADF):
                    raise self._lost() from None
                raise
            if view is None:
                if written == len(data):
                    return  # the usual case: the whole line fitted in the pipe at once
                view = memoryview(data)
            view = view[written:]
            if not view:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFailure(FaultKind.TIMEOUT, "it stopped reading its input")
            self._writer.poll(remaining * 1000)

    def _take_line(self) -> bytes | None:
        """A complete line from the buffer, if there is one."""
        buffer = self.buffer
        end = buffer.find(b"\n")
        if end >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if len(line) > self.max_message_bytes:
                raise AgentFailure(
                    FaultKind.OVERSIZED_MESSAGE,
                    f"it sent a message of {len(line)} bytes; the limit is "
                    f"{self.max_message_bytes}",
                )
            return line
        if len(buffer) > self.max_message_bytes:
            # The rest of this line is unknown, so the stream cannot be resynchronised.
            self.closed = True
            raise AgentFailure(
                FaultKind.OVERSIZED_MESSAGE,
                f"it sent more than {self.max_message_bytes} bytes without a newline",
            )
        return None

    def _fill(self) -> bool:
        """Read what the agent has written; False if there was nothing to read."""
        try:
            chunk = os.read(self.agent.reply_fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            raise self._lost()
        self.buffer += chunk
        return True

    def _on_events(self, events: list[tuple[int, int]]) -> None:
        """Take in what ``poll`` reported: new output, or the end of the agent's process."""
        exit_fd = self.exit_fd
        for fd, _ in events:
            if fd == exit_fd:
                break
        else:
            self._fill()
            return
        # Its last words may still be in the pipe: read them before calling it lost.
        while self._incomplete() and self._fill():
            pass
        if self._incomplete():
            raise self._lost()

    def _incomplete(self) -> bool:
        """True while the buffer holds neither a whole line nor too much for one."""
        return b"\n" not in self.buffer and len(self.buffer) <= self.max_message_bytes

    def _read_line(self, deadline: float) -> bytes:
        while True:
            # Between two messages the buffer is usually empty: no line to look for.
            line = self._take_line() if self.buffer else None
            if line is not None:
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFailure(FaultKind.TIMEOUT, "no answer in time")
            events = self._reader.poll(remaining * 1000)
            if events:
                self._on_events(events)

    def _parse(self, line: bytes) -> dict[str, Any]:
        try:
            return decode(line)
        except (ValueError, RecursionError) as error:
            shown = line[:120].decode("utf-8", errors="replace")
            detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
            raise AgentFailure(
                FaultKind.MALFORMED_MESSAGE, f"it sent {shown!r}, which is not valid: {detail}"
            ) from None

    @staticmethod
    def _is_reply_to(message: dict[str, Any], request_id: int) -> bool:
        """True for the reply, False for a late reply to an earlier request."""
        reply_id = message.get("id")
        if reply_id == request_id and not isinstance(reply_id, bool):
            return True
        if isinstance(reply_id, int) and not isinstance(reply_id, bool) and reply_id < request_id:
            return False
        raise AgentFailure(
            FaultKind.MALFORMED_MESSAGE, f"it answered request {request_id} with id {reply_id!r}"
        )

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message; raises AgentFailure on timeout, EOF or bad input."""
        if self.closed:
            raise AgentFailure(FaultKind.CRASH, "it is no longer running")
        return self._parse(self._read_line(deadline))

    def receive_reply(self, request_id: int, deadline: float) -> dict[str, Any]:
        """The answer to request ``request_id``, skipping late answers to earlier ones."""
        while True:
            message = self.receive(deadline)
            if self._is_reply_to(message, request_id):
                return message

    def poll(self) -> dict[str, Any] | None:
        """The next message if it has fully arrived, without waiting."""
        if self.closed:
            raise AgentFailure(FaultKind.CRASH, "it is no longer running")
        while True:
            line = self._take_line()
            if line is not None:
                return self._parse(line)
            events = self._reader.poll(0)
            if not events:
                return None
            self._on_events(events)

    def poll_reply(self, request_id: int) -> dict[str, Any] | None:
        """The answer to ``request_id`` if it has fully arrived, without waiting."""
        while (message := self.poll()) is not None:
            if self._is_reply_to(message, request_id):
                return message
        return None


Key = TypeVar("Key", bound=Hashable)


class Wait(NamedTuple):
    """What ``gather`` waits for from one agent: the reply to ``request_id``, or its next
    message of any kind when None (the handshake)."""

    channel: Channel
    deadline: float
    request_id: int | None = None

    def attempt(self) -> dict[str, Any] | None:
        """The message if it has fully arrived, without waiting."""
        if self.request_id is None:
            return self.channel.poll()
        return self.channel.poll_reply(self.request_id)

    def receive(self) -> dict[str, Any]:
        """The message, waiting for it until the deadline."""
        if self.request_id is None:
            return self.channel.receive(self.deadline)
        return self.channel.receive_reply(self.request_id, self.deadline)


# Tuples rather than dataclasses: one of each is made for every move.
class Arrival(NamedTuple):
    """A message that arrived (``message``) or why none will (``failure``), and when."""

    at: float
    message: dict[str, Any] | None = None
    failure: AgentFailure | None = None


def gather(waits: Mapping[Key, Wait]) -> dict[Key, Arrival]:
    """Wait for every agent in ``waits`` at once, each until its own deadline.

    Each arrival is timed when it is seen, so an agent's time never includes another
    agent's: a silent agent is charged its own timeout and nothing else.
    """
    if len(waits) == 1:
        # One agent (a turn-based game's mover): a plain blocking read is the fastest wait.
        [(key, wait)] = waits.items()
        try:
            reply = wait.receive()
        except AgentFailure as failure:
            return {key: Arrival(time.monotonic(), failure=failure)}
        return {key: Arrival(time.monotonic(), message=reply)}
    arrivals: dict[Key, Arrival] = {}
    pending = dict(waits)
    while pending:
        for key, wait in list(pending.items()):
            try:
                message = wait.attempt()
            except AgentFailure as failure:
                arrivals[key] = Arrival(time.monotonic(), failure=failure)
                del pending[key]
                continue
            if message is not None:
                arrivals[key] = Arrival(time.monotonic(), message=message)
                del pending[key]
        now = time.monotonic()
        for key, wait in list(pending.items()):
            if wait.deadline <= now:
                timeout = AgentFailure(FaultKind.TIMEOUT, "no answer in time")
                arrivals[key] = Arrival(now, failure=timeout)
                del pending[key]
        if not pending:
            break
        poller = select.poll()
        for wait in pending.values():
            for fd in wait.channel.watched_fds:
                poller.register(fd, select.POLLIN)
        earliest = min(wait.deadline for wait in pending.values())
        poller.poll(max(0.0, earliest - now) * 1000)
    return arrivals
