"""A running agent of the ``docker`` sandbox: its container, the referee's ends of its
three streams, its log read by a thread of its own, its pin to the duel's CPU, and its
removal (``DockerSandbox`` starts it: ``sandboxes.docker``)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sandboxes import cpus as cpu_claims
from sandboxes import docker_engine
from sandboxes.base import (
    LoggedAgent,
    MoveKey,
    SandboxError,
    SandboxLimits,
    Termination,
    decode_exit_status,
    termination_from,
)
from sandboxes.docker_engine import EngineError
from sandboxes.warm_pool import Reaper

logger = logging.getLogger(__name__)

#: How long the engine may take to learn of an exit once the agent's log has ended.
EXIT_NOTICE_WAIT = 5.0
#: How long reading a closed agent's log waits for it to be whole.
REMOVAL_WAIT = 10.0


class Stream:
    """One of the three streams the referee keeps of an agent: its end of a pipe handed to
    the bridge, or a connection of a bridge older than the pipes (``arena_sdk.bridge``)."""

    def __init__(self, descriptor: int, connection: socket.socket | None = None) -> None:
        self.descriptor = descriptor
        self.connection = connection
        self._closed = False

    def fileno(self) -> int:
        return self.descriptor

    def cut(self) -> None:
        """The agent reaches the referee here no more, while the descriptor's number stays
        taken until ``close`` (the referee's threads may still name it): a connection is
        shut down; a pipe's end is replaced by ``/dev/null``, so that the agent reads the
        end of its requests and its writes fail."""
        if self.connection is not None:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            os.dup2(null, self.descriptor, inheritable=False)
        finally:
            os.close(null)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            if self.connection is not None:
                self.connection.close()
            else:
                os.close(self.descriptor)


class PinnedContainer:
    """How a container of this sandbox is pinned to a duel's CPU, one rule for an agent's
    own container (``DockerAgent``) and a fork server's (``ServerContainer``, which runs one
    child at a time: pinning it pins the child).

    Where its process is seen from here (the worker on the engine's host), at once, as the
    process sandbox pins its agents (what it forks later inherits that): the duel's first
    moves are played on the duel's CPU (with the engine's pin, they were played elsewhere
    until it landed, about 7 ms, each move of them waking the other CPU). Otherwise, or
    where this process may not move it (a worker without ``CAP_SYS_NICE`` and of another
    user id than the agent's), through the engine (its cpuset:
    ``docker_engine.container_pin``), by a thread of its own (both agents' side by side),
    so a duel's first moves do not wait for it. Asked for CPUs it may run on already (a
    duel's end gives its agents back every CPU), nothing is done: a pinned container is
    not widened again. An agent's container serves one duel and is removed at its end,
    and an engine call for a container about to be killed would only take CPU from the
    next duel; a server's is pinned again by its next duel."""

    container: docker_engine.Container
    #: Its process id as seen here (None: the worker is in a container of its own).
    pid: int | None
    #: The CPUs the engine last pinned it to (None: never).
    cpus: frozenset[int] | None
    _closed: bool

    def pin_to(self, cpus: set[int]) -> bool:
        if self.pid is not None and cpu_claims.pin_process(self.pid, cpus):
            return True
        wanted = frozenset(cpus)
        if _engine_pin_needed(self.cpus, wanted):
            self.cpus = wanted
            _in_background(self._pin, wanted)
        return True

    def _pin(self, cpus: frozenset[int]) -> None:
        if self._closed:
            return  # its duel is over: nothing left to speed up
        try:
            docker_engine.container_pin(self.container, cpus)
        except EngineError as error:
            # Closed or ended meanwhile (a short duel's agents exit after their farewell):
            # nothing to pin. Else the engine or its proxy refused, which an operator hears.
            if not self._closed and not self._ended():
                logger.warning("arena docker sandbox: %s; its duel is played unpinned", error)

    def _ended(self) -> bool:
        """Whether its process has ended (an engine's refusal to pin it is no news then)."""
        return False


class DockerAgent(PinnedContainer, LoggedAgent):
    """A running agent in the docker sandbox (see ``SandboxedAgent``)."""

    def __init__(
        self,
        *,
        container: docker_engine.Container,
        streams: list[Stream],
        folder: Path,
        token: str,
        limits: SandboxLimits,
        reaper: Reaper | None = None,
        pid: int | None = None,
    ) -> None:
        self.container = container
        self._reaper = reaper
        #: The agent's process id as seen here (None: the worker is in a container of its
        #: own, beside this one).
        self.pid = pid
        #: The CPUs the engine last pinned its container to (None: never).
        self.cpus: frozenset[int] | None = None
        #: Taken from the warm pool (started before this duel asked for it).
        self.warm = False
        #: Run once when closed (the pool starts a replacement then).
        self.on_close: Callable[[], None] | None = None
        self.folder = folder
        self.token = token
        self.requests, self.replies, self.log_stream = streams
        self.request_fd = self.requests.fileno()
        self.reply_fd = self.replies.fileno()
        # When the agent's process ends the container stops and its streams close.
        self.exit_fd: int | None = None
        os.set_blocking(self.request_fd, False)
        os.set_blocking(self.reply_fd, False)
        self._read_log(self.log_stream.fileno(), limits)
        self._termination: Termination | None = None
        self._closed = False

    def agent_pid(self) -> int | None:
        return self.pid

    def log(self) -> str:
        """The log so far; after ``close()``, the whole log (``_whole_log``)."""
        self._whole_log()
        return super().log()

    def _whole_log(self) -> None:
        """Once closed, wait until the log is whole: its reader ends when no process of the
        agent holds the log any more (an agent told ``bye`` exits by itself within
        milliseconds; else the kill ends it), not when the engine has removed the
        container, which a duel's end need not wait for."""
        if self._closed:
            self._log_ended(REMOVAL_WAIT)

    def _ended(self) -> bool:
        with contextlib.suppress(SandboxError):
            return self.termination() is not None
        return False

    def move_logs(self) -> dict[MoveKey, str]:
        """Each move's log; after ``close()``, complete (``_whole_log``)."""
        self._whole_log()
        return super().move_logs()

    def wait_for_exit(self, seconds: float) -> None:
        """Until its log ends: no process of the agent holds it any more."""
        self._log_ended(seconds)

    def has_ended(self) -> bool:
        """Whether its log has ended: no process of it is left (told without the engine)."""
        return self._log_ended(0)

    def termination(self, wait: float = 0.0) -> Termination | None:
        if self._termination is not None:
            return self._termination
        deadline = time.monotonic() + wait
        # Its processes gone, its log ends: the engine need not be asked before that.
        if self._log_ended(wait):
            # Ended (or its log closed): the engine learns of an exit within milliseconds,
            # later on a loaded machine, and only it can tell an out-of-memory kill.
            deadline = max(deadline, time.monotonic() + EXIT_NOTICE_WAIT)
        while True:
            try:
                state = docker_engine.container_state(self.container)
            except EngineError as error:
                raise SandboxError(f"cannot tell how the agent's container is: {error}") from error
            if state is None:
                # Removed: only close() does that, and it kills first.
                return Termination(-signal.SIGKILL)
            if not state.running:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            # The engine notices an exit a few milliseconds after the process ends.
            time.sleep(min(0.02, remaining))
        # Everything in the container is dead, so the log is at its end: read it all.
        self._log_ended(0.5)
        log = self.log()
        returncode = decode_exit_status(state.exit_code)
        self._termination = termination_from(returncode, log, oom_killed=state.oom_killed)
        return self._termination

    def close(self) -> None:
        """Cut the agent off now; kill and remove its container in the background when
        the sandbox has a reaper (``DockerSandbox.flush`` waits for that), else here."""
        if self._closed:
            return
        self._closed = True
        if self.on_close is not None:
            self.on_close()
        if self._reaper is None:
            self._remove()
            return
        # Its requests end (a well-behaved agent exits on that) and nothing it writes
        # reaches the referee any more; the reaper kills it within moments.
        for stream in (self.requests, self.replies):
            stream.cut()
        self._reaper.submit(self._remove)

    def _remove(self) -> None:
        _remove_container(self.container)
        # With every writer dead the drain thread reads the last of the log and hits EOF.
        self._stop_reading()
        for stream in (self.requests, self.replies, self.log_stream):
            stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _engine_pin_needed(pinned: frozenset[int] | None, wanted: frozenset[int]) -> bool:
    """Whether a container pinned to ``pinned`` (None: never) needs the engine to run on
    ``wanted`` only: not if it may run on all of them already."""
    return not wanted >= (cpu_claims.PROCESS_CPUS if pinned is None else pinned)


def _in_background(pin: Callable[[frozenset[int]], None], cpus: frozenset[int]) -> None:
    """``pin(cpus)`` in a thread of its own: an engine call takes about 7 ms."""
    threading.Thread(target=pin, args=(cpus,), name="arena-docker-pin", daemon=True).start()


def _remove_container(container: docker_engine.Container) -> None:
    try:
        # Killing the container kills every process in it, forks included.
        docker_engine.container_discard(container)
    except EngineError as error:
        # Not fatal to the duel: sweep_orphans() removes it at the next worker start.
        logger.warning("arena docker sandbox: could not remove a container: %s", error)


class ServerContainer(PinnedContainer):
    """A container kept for one agent's duels: its command is the agent's fork server
    (``sandboxes.fork_servers``), which the referee reaches on a control socket handed to
    the container's bridge (``DockerSandbox._launch`` with ``control``). What holds the
    server for ``ForkServer`` (``fork_servers.ServerHolder``)."""

    uid: int | None = None

    def __init__(
        self,
        *,
        container: docker_engine.Container,
        pid: int | None,
        folder: Path,
        token: str,
        reaper: Reaper,
        engine_log: Callable[[], str],
    ) -> None:
        self.container = container
        #: The server's process id as seen here (None: the worker is in a container of
        #: its own, beside this one).
        self.pid = pid
        self.folder = folder
        self.workdir = folder / "agent"
        self.token = token
        self.cpus: frozenset[int] | None = None
        self._reaper = reaper
        self._engine_log = engine_log
        #: Its log as it was when the container was removed (the engine's goes with it).
        self._last_log: str | None = None
        self._closed = False

    def agent_pid(self) -> int | None:
        return self.pid

    def log(self) -> str:
        """What the server wrote (the engine's log of its container), kept once the
        container is removed: why a server ended (retired, say) is still told then."""
        if self._last_log is not None:
            return self._last_log
        return self._engine_log()

    def close(self) -> None:
        """Kill and remove the container (in the background) and its folder."""
        if self._closed:
            return
        self._closed = True
        self._reaper.submit(self._remove)

    def _remove(self) -> None:
        # Stopped first: a server that has just retired may not be in the engine's log yet.
        with contextlib.suppress(EngineError):
            docker_engine.container_stop(self.container)
        self._last_log = self._engine_log()
        _remove_container(self.container)
        shutil.rmtree(self.folder, ignore_errors=True)
