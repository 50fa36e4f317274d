"""Fork servers: a confined sandbox kept from one duel of an agent to the next.

A fresh confined agent costs the machine some 35 ms of CPU before its own code runs
(bash, setpriv and bubblewrap making namespaces and mounts, then an interpreter): on two
cores, more than a 10-match duel's play. A fork server (``arena_sdk.fork_server``) is
started once for an agent's files and limits, confined exactly as an agent is, with the
SDK loaded and none of the agent's code; each duel's agent is a child it forks
(``ForkServer.fork``), which takes its streams, reports as a fresh agent does, then loads
the agent and serves it. A child costs about a millisecond.

What a fresh sandbox gives, a child gets: when a child has ended the server kills
everything else in its namespace and empties ``/tmp`` and ``/dev/shm`` before it says it
is ready (the referee waits for that before handing the server another duel); a child's
memory is the server's, which holds no code of the agent's. The server runs one child at a
time, as PID 1 of its namespace (no process inside may signal it), and cannot be traced
or read by its children. The referee trusts nothing else of it: a server that does not
answer in time, or says anything unexpected, is killed with its namespace
(``ForkServer.discard``) and the duel's agent comes from a new one.

What holds a server (``ServerHolder``) is the sandbox's: a bubblewrap process in the
process sandbox, a container in the docker sandbox (``docker_agent.ServerContainer``),
started with the server as its command. Where the referee cannot see the processes of
the server's namespace (a worker in a container of its own, beside the agents'
containers: a child reports process id 0), it learns of a child's end from the server's
word alone, has the server move the child to its duel's CPU (``ForkServer.pin_child``; a
server of an older SDK cannot, and is pinned through its holder), and a child that must
be killed costs its server: the holder is discarded, as a fresh agent's container would
be.

``ForkServers`` keeps the idle servers of a sandbox, per key (``warm_pool.WarmKey``), for
``idle_seconds``; the warm pool asks it for its next agents.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Protocol, TypeVar

from arena_sdk.fork_server import EXITED, FORK, OUT_OF_MEMORY, PIN, PINS, READY

from sandboxes.base import (
    LoggedAgent,
    SandboxError,
    SandboxLimits,
    Termination,
    decode_exit_status,
    termination_from,
)
from sandboxes.cpus import pin_process
from sandboxes.process_agent import pidfd_of, reported_pid
from sandboxes.warm_pool import Reaper, WarmPool

#: How long the server may take to fork and the child to report, and to clean up after it.
REPORT_SECONDS = 5.0
CLEAN_SECONDS = 5.0
#: Idle servers kept for one key at most (a duel's seat needs one playing and one ready).
IDLE_PER_KEY = 2


class ServerHolder(Protocol):
    """What holds a fork server, as its sandbox started it."""

    #: Its user id on this host (None: the sandbox's fixed one, or none of its own).
    uid: int | None
    #: The copy of the agent's files it serves, and its token (each child's too).
    workdir: Path
    token: str

    def agent_pid(self) -> int | None:
        """The server's process id as seen here (None: not seen from here)."""

    def pin_to(self, cpus: set[int]) -> bool:
        """The server's processes (so its child's) on ``cpus``; whether they are."""

    def log(self) -> str:
        """What the server wrote (its messages, not its children's)."""

    def close(self) -> None:
        """Kill the server and everything of it; idempotent."""


class ForkServer:
    """A running fork server: ``agent`` is what holds it (``ServerHolder``)."""

    def __init__(self, key: Hashable, agent: ServerHolder, control: socket.socket) -> None:
        self.key = key
        self.agent = agent
        self.control = control
        self.idle_since = time.monotonic()
        self.broken = False
        #: Whether the server moves its child to other CPUs when asked (``PIN``): what a
        #: server of this SDK says first (``PINS``), one of an older image's does not.
        #: Learnt once its first child has reported (None until then).
        self.pins: bool | None = None

    def _answer(self, timeout: float) -> bytes:
        """The server's next message; b"" if it said nothing in time or is gone."""
        ready = select.poll()
        ready.register(self.control, select.POLLIN)
        if not ready.poll(timeout * 1000):
            return b""
        try:
            return self.control.recv(64)
        except OSError:
            return b""

    def _run_here(self) -> None:
        """Move the server to the CPUs the calling thread may run on (a warm pool's start
        runs off the CPUs duels hold): its child, which inherits them, then loads there,
        and its clean-ups after the child run there too, not on a duel's CPU."""
        pid = self.agent.agent_pid()
        cpus = os.sched_getaffinity(0)
        with contextlib.suppress(OSError):
            if pid is not None and os.sched_getaffinity(pid) != cpus:
                pin_process(pid, cpus)

    def fork(self, limits: SandboxLimits, reaper: Reaper, servers: ForkServers) -> ForkedAgent:
        """The next agent: a child of the server, reported (its process id known). The
        server goes back to ``servers`` once the child's duel is over and it is clean."""
        self._run_here()
        ends: list[int] = []  # the child's, closed here once sent
        kept: list[int] = []  # the referee's, closed here if nothing is sent
        report, report_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        report.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        try:
            # Its requests (the child reads), its replies and its log (the child writes).
            read, write = os.pipe()
            ends.append(read)
            kept.append(write)
            for _written_by_the_child in range(2):
                read, write = os.pipe()
                kept.append(read)
                ends.append(write)
            socket.send_fds(self.control, [FORK], [*ends, report_end.fileno()])
        except OSError as error:
            report.close()
            for descriptor in kept:
                os.close(descriptor)
            self.broken = True
            raise SandboxError(f"the agent's fork server is gone: {error}") from error
        finally:
            report_end.close()
            for descriptor in ends:
                os.close(descriptor)
        request_fd, reply_fd, log_fd = kept
        reported = select.poll()
        reported.register(report, select.POLLIN)
        pid = reported_pid(report) if reported.poll(REPORT_SECONDS * 1000) else None
        report.close()
        agent = ForkedAgent(
            server=self,
            # 0: the child reported from a namespace this process cannot see into.
            pid=pid or None,
            request_fd=request_fd,
            reply_fd=reply_fd,
            log_fd=log_fd,
            limits=limits,
            reaper=reaper,
            servers=servers,
        )
        if pid is None:
            self.broken = True
            agent.close()
            raise SandboxError(f"the agent's fork server did not start it: {self.agent.log()}")
        if self.pins is None:
            self.pins = self._said_it_pins()
        return agent

    def _said_it_pins(self) -> bool:
        """Whether the server said ``PINS`` first, taken off its socket if so. Asked once
        its first child has reported: a server says it before it reads its first request,
        so it is there by then if ever; anything else there (an early child's end) is only
        looked at, and left for its reader."""
        try:
            first = self.control.recv(64, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return False
        if first != PINS:
            return False
        with contextlib.suppress(OSError):
            self.control.recv(64)
        return True

    def pin_child(self, cpus: set[int]) -> bool:
        """Ask the server to move its running child to ``cpus`` (``PIN``; it does it in a
        few microseconds, where the engine takes milliseconds); whether it was asked."""
        if not self.pins or self.broken:
            return False
        request = PIN + ",".join(str(cpu) for cpu in sorted(cpus)).encode()
        try:
            self.control.send(request)
        except OSError:
            return False
        return True

    def child_ended(self, wait: float) -> bool:
        """Whether the server has something to say (after a fork: its child has ended)."""
        if self.broken:
            return True
        ready = select.poll()
        ready.register(self.control, select.POLLIN)
        return bool(ready.poll(wait * 1000))

    def exit_status(self, timeout: float) -> tuple[int, bool] | None:
        """The child's exit status as the server reports it (bubblewrap's way), and whether
        the kernel killed a process of the server's container for its memory meanwhile;
        None if the server says nothing in time, or something else."""
        answer = self._answer(timeout)
        out_of_memory = answer.endswith(OUT_OF_MEMORY)
        status = answer[1 : len(answer) - out_of_memory]
        if not answer.startswith(EXITED) or not status.isdigit():
            self.broken = True
            return None
        return int(status), out_of_memory

    def wait_clean(self, timeout: float) -> bool:
        """Whether the server says, in time, that nothing of its last child is left."""
        if self.broken or self._answer(timeout) != READY:
            self.broken = True
            return False
        self.idle_since = time.monotonic()
        return True

    def discard(self) -> None:
        """Kill the server and everything in its namespace; let its user id go."""
        self.broken = True
        with contextlib.suppress(OSError):
            self.control.close()
        self.agent.close()


class ForkedAgent(LoggedAgent):
    """An agent forked by a ``ForkServer`` (see ``SandboxedAgent``)."""

    confined = True

    def __init__(
        self,
        *,
        server: ForkServer,
        pid: int | None,
        request_fd: int,
        reply_fd: int,
        log_fd: int,
        limits: SandboxLimits,
        reaper: Reaper,
        servers: ForkServers,
    ) -> None:
        self.server = server
        #: As seen here; None where the server's namespace cannot be seen into.
        self.pid = pid
        #: The server's: its user id, its copy of the agent's files, its token.
        self.uid = server.agent.uid
        self.workdir = server.agent.workdir
        self.token = server.agent.token
        self.request_fd = request_fd
        self.reply_fd = reply_fd
        os.set_blocking(request_fd, False)
        os.set_blocking(reply_fd, False)
        self.exit_fd: int | None = pidfd_of(pid) if pid is not None else None
        self.warm = False
        self._read_log(log_fd, limits)
        self._reaper = reaper
        self._servers = servers
        self._status: tuple[int, bool] | None = None
        self._status_lock = threading.Lock()
        self._closed = False

    def agent_pid(self) -> int | None:
        return self.pid

    def pin_to(self, cpus: set[int]) -> bool:
        """The child moved from here where it is seen and may be; else by its server
        (``ForkServer.pin_child``); else, with a server of an older SDK, through what holds
        the server, which runs one child at a time (a docker server's container is then
        pinned through the engine, the child with it: ``PinnedContainer``)."""
        if self.pid is not None and pin_process(self.pid, cpus):
            return True
        return self.server.pin_child(cpus) or self.server.agent.pin_to(cpus)

    def _ended(self, wait: float) -> bool:
        if self.exit_fd is None:
            # Unseen from here: the server says when it has reaped its child.
            return self._status is not None or self.server.child_ended(wait)
        exited = select.poll()
        exited.register(self.exit_fd, select.POLLIN)
        return bool(exited.poll(wait * 1000))

    def wait_for_exit(self, seconds: float) -> None:
        self._ended(seconds)

    def has_ended(self) -> bool:
        """Whether it has ended, or its server (whose namespace ends with it) is gone."""
        return self._ended(0)

    def _exit_status(self) -> tuple[int, bool] | None:
        """Asked of the server once the child has ended (it says so right after)."""
        with self._status_lock:
            if self._status is None and not self.server.broken:
                self._status = self.server.exit_status(CLEAN_SECONDS)
            return self._status

    def termination(self, wait: float = 0.0) -> Termination | None:
        if not self._ended(wait):
            return None
        reported = self._exit_status()
        self._log_ended(0.5)
        if reported is None:
            # A server that cannot say how its child ended: killed, as far as anyone knows.
            return termination_from(-signal.SIGKILL, self.log())
        status, out_of_memory = reported
        if status == 0:
            return Termination(0)
        return termination_from(decode_exit_status(status), self.log(), oom_killed=out_of_memory)

    def close(self) -> None:
        """Kills the child's process group at once; the rest (the server's word on its exit
        and its clean-up, the streams) goes to the reaper, which gives the server back
        (``done``) or discards it."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.pid is not None:
                os.killpg(self.pid, signal.SIGKILL)
            elif not self._ended(0):
                raise PermissionError("its processes are not seen from here")
        except ProcessLookupError:
            pass
        except PermissionError:
            # Out of reach from here: the server goes, and everything of it.
            self.server.discard()
        self._ended(CLEAN_SECONDS)
        self._log_ended(0.05)
        self._servers.cleaning(self.server)
        self._reaper.submit(self._release)

    def _release(self) -> None:
        """Once the child has ended: the server's report and clean-up, then the streams."""
        self._exit_status()
        clean = self.server.wait_clean(CLEAN_SECONDS)
        # Everything that held the log is gone now (or the server is about to be killed).
        if clean:
            self._servers.give_back(self.server)
        else:
            self._servers.lost(self.server)
        self._stop_reading()
        for descriptor in (self.request_fd, self.reply_fd, self.exit_fd):
            if descriptor is not None:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        self.exit_fd = None


#: The name of the thread that discards a sandbox's idle servers once they wait too long.
EXPIRY_TIMER = "arena-fork-servers-expiry"


class ForkServers:
    """The idle fork servers of one sandbox, per key, each kept ``idle_seconds`` at most."""

    def __init__(self, idle_seconds: float, most: int) -> None:
        """At most ``most`` idle servers in all (the oldest are discarded first)."""
        self.idle_seconds = idle_seconds
        self.most = most
        self._idle: dict[Hashable, list[ForkServer]] = {}
        #: Servers whose child's duel is over, cleaning up, per key.
        self._cleaning: dict[Hashable, int] = {}
        self._changed = threading.Condition()
        self._closed = False
        #: The one timer that discards the idle servers that waited too long, armed while
        #: any is idle (``_expire_later``).
        self._expiry: threading.Timer | None = None

    def fork(
        self,
        key: Hashable,
        limits: SandboxLimits,
        reaper: Reaper,
        launch: Callable[[socket.socket], ServerHolder],
    ) -> ForkedAgent:
        """The agent of ``key`` forked by an idle server of it, or by a new one: ``launch``
        starts it on the end of a control socket (``SOCK_SEQPACKET``) it is given."""
        idle = self.take(key)
        if idle is not None:
            try:
                return idle.fork(limits, reaper, self)
            except SandboxError:
                # Gone while idle (its container removed, say): a new one instead.
                idle.discard()
        control, control_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            holder = launch(control_end)
        except SandboxError:
            control.close()
            raise
        finally:
            control_end.close()
        server = ForkServer(key, holder, control)
        try:
            return server.fork(limits, reaper, self)
        except SandboxError:
            server.discard()
            raise

    def take(self, key: Hashable) -> ForkServer | None:
        """An idle server for ``key``: one there is, else one cleaning up after its last
        child once it is done (a few milliseconds; starting a server costs tens), else None."""
        self._discard_expired()
        deadline = time.monotonic() + CLEAN_SECONDS
        with self._changed:
            while True:
                servers = self._idle.get(key)
                if servers:
                    return servers.pop()
                remaining = deadline - time.monotonic()
                if self._closed or not self._cleaning.get(key) or remaining <= 0:
                    return None
                self._changed.wait(remaining)

    def cleaning(self, server: ForkServer) -> None:
        """``server``'s child is closed: the server comes back (``give_back``) or not
        (``lost``) once it has cleaned up."""
        with self._changed:
            self._cleaning[server.key] = self._cleaning.get(server.key, 0) + 1

    def _cleaned(self, server: ForkServer) -> None:
        left = self._cleaning.get(server.key, 0) - 1
        if left > 0:
            self._cleaning[server.key] = left
        else:
            self._cleaning.pop(server.key, None)
        self._changed.notify_all()

    def give_back(self, server: ForkServer) -> None:
        """A clean server, idle from now on (discarded if there are enough, or if closed)."""
        with self._changed:
            servers = self._idle.setdefault(server.key, [])
            keep = not self._closed and len(servers) < IDLE_PER_KEY
            if keep:
                servers.append(server)
            elif not servers:
                del self._idle[server.key]
            self._cleaned(server)
            surplus = self._surplus_locked()
        if not keep:
            server.discard()
        for extra in surplus:
            extra.discard()
        self._discard_expired()
        if keep:
            self._expire_later()

    def _expire_later(self) -> None:
        """Idle servers discarded once they have waited too long, even if nothing asks for
        a server again: one timer at a time, set for the oldest (a timer for each server
        given back kept a thread alive for ``idle_seconds`` each: two hundred in a process
        that had played a hundred short duels in a few seconds)."""
        with self._changed:
            if self._expiry is not None or self._closed or not self._idle:
                return
            oldest = min(server.idle_since for group in self._idle.values() for server in group)
            wait = max(0.0, oldest + self.idle_seconds - time.monotonic()) + 0.1
            self._expiry = threading.Timer(wait, self._expire)
            self._expiry.name = EXPIRY_TIMER
            self._expiry.daemon = True
            self._expiry.start()

    def _expire(self) -> None:
        with self._changed:
            self._expiry = None
        self._discard_expired()
        self._expire_later()

    def _surplus_locked(self) -> list[ForkServer]:
        """The oldest idle servers past ``most``, taken out."""
        idle = sorted(
            (server for servers in self._idle.values() for server in servers),
            key=lambda server: server.idle_since,
        )
        surplus = idle[: max(0, len(idle) - self.most)]
        for server in surplus:
            servers = self._idle[server.key]
            servers.remove(server)
            if not servers:
                del self._idle[server.key]
        return surplus

    def lost(self, server: ForkServer) -> None:
        """A server that did not clean up in time: killed."""
        server.discard()
        with self._changed:
            self._cleaned(server)

    def _discard_expired(self) -> None:
        limit = time.monotonic() - self.idle_seconds
        expired: list[ForkServer] = []
        with self._changed:
            for key, servers in list(self._idle.items()):
                expired += [server for server in servers if server.idle_since < limit]
                servers[:] = [server for server in servers if server.idle_since >= limit]
                if not servers:
                    del self._idle[key]
        for server in expired:
            server.discard()

    def close(self) -> None:
        """Discard every idle server; servers given back later are discarded too."""
        with self._changed:
            self._closed = True
            servers = [server for group in self._idle.values() for server in group]
            self._idle.clear()
            self._changed.notify_all()
            if self._expiry is not None:
                self._expiry.cancel()
                self._expiry = None
        for server in servers:
            server.discard()


class WarmAgent(Protocol):
    def close(self) -> None: ...

    def has_ended(self) -> bool: ...


Warm = TypeVar("Warm", bound=WarmAgent)


def started_ahead(
    size: int, idle_seconds: float, start: Callable[[Hashable], Warm], *, forking: bool
) -> tuple[WarmPool[Warm] | None, ForkServers | None]:
    """A sandbox's agents started ahead of need (none for a ``size`` of 0), each closed when
    discarded and never handed out once it has ended; with ``forking``, the fork servers
    that start its Python agents (twice as many idle at most as the pool holds)."""
    pool = WarmPool.of_size(
        size,
        idle_seconds,
        start=start,
        discard=lambda agent: agent.close(),
        ended=lambda agent: agent.has_ended(),
    )
    servers = ForkServers(idle_seconds, most=2 * size) if pool is not None and forking else None
    return pool, servers
