"""A running agent of the process sandbox (``ProcessAgent``): its streams, its log, how it
ended, and its close, which kills everything it started."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from sandboxes.base import (
    LoggedAgent,
    SandboxError,
    SandboxLimits,
    Termination,
    decode_exit_status,
    termination_from,
)
from sandboxes.cpus import away_from_duels, pin_process
from sandboxes.process_users import UserPool, kill_user_processes, status_field
from sandboxes.warm_pool import Reaper

#: How long ``ProcessAgent.close`` waits for the agent's log to end once its group is
#: killed (at once, unless something that escaped the group still holds the pipe).
LOG_END_WAIT = 0.05
#: How long a sweep waits for a confined agent's PID namespace to end after the kill of
#: its init (the kernel's work, at once) before it kills by user id instead.
NAMESPACE_END_WAIT = 5.0


def remove_tree(path: Path) -> None:
    def make_writable_and_retry(
        function: Callable[[str], object], failed_path: str, _error: object
    ) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed_path), 0o700)
            os.chmod(failed_path, 0o700)
        with contextlib.suppress(OSError):
            function(failed_path)

    shutil.rmtree(path, onerror=make_writable_and_retry)


def pidfd_of(pid: int) -> int | None:
    """A descriptor that polls readable when ``pid`` ends (Linux 5.3 and later)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def reported_pid(report: socket.socket) -> int | None:
    """The sender's process id of the byte on ``report`` (the kernel adds it as the
    receiver sees it: ``SO_PASSCRED``), or None while nothing came."""
    try:
        data, ancillary, _flags, _address = report.recvmsg(1, socket.CMSG_SPACE(12))
    except OSError:  # nothing yet (or the socket is closed)
        return None
    if data != b".":
        return None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, _uid, _gid = struct.unpack("iII", payload[:12])
            return pid
    return None


def _parent_pidfd(pid: int) -> int | None:
    """A descriptor of ``pid``'s parent (``pidfd_open``), if both still exist."""
    try:
        status = Path(f"/proc/{pid}/status").read_bytes()
        return os.pidfd_open(int(status_field(status, b"PPid")))
    except (OSError, ValueError):
        return None


class ProcessAgent(LoggedAgent):
    """A running agent in the process sandbox (see ``SandboxedAgent``)."""

    def __init__(
        self,
        *,
        process: subprocess.Popen[bytes],
        workdir: Path,
        uid: int | None,
        uid_lock: int | None,
        token: str,
        limits: SandboxLimits,
        report: socket.socket,
        confined: bool,
        reaper: Reaper | None = None,
        as_init: bool = False,
    ) -> None:
        """``report`` receives the byte sent just before the agent's own code runs
        (``jail``, ``confinement``); ``confined``: run under bubblewrap, in a PID namespace
        of its own. ``reaper``, if given, takes the sweep of the agent's user id and the
        removal of its folder off ``close``'s path, when nothing of the agent is left on
        its log (``close``). ``as_init``: confined, the agent is its namespace's init
        itself (a fork server, ``sandboxes.fork_servers``), not bubblewrap's child."""
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.workdir = workdir
        self.uid = uid
        self.uid_lock = uid_lock
        self.token = token
        self.confined = confined
        #: Taken from the warm pool (started before its duel asked for it).
        self.warm = False
        self.request_fd = process.stdin.fileno()
        self.reply_fd = process.stdout.fileno()
        os.set_blocking(self.request_fd, False)
        os.set_blocking(self.reply_fd, False)
        # An agent that daemonizes a child holding its stdout, then exits, is seen
        # ending at once rather than at its deadline.
        self.exit_fd: int | None = pidfd_of(process.pid)
        self._report = report
        self._report.setblocking(False)
        #: The agent's own process as this host sees it, once it has reported.
        self._agent_pid: int | None = None
        self._report_lock = threading.Lock()
        #: Confined, the sandbox's init (the agent's parent, PID 1 of its namespace), held
        #: from the report on: killed by ``close`` whatever process group it is in then.
        self._init_fd: int | None = None
        self._as_init = as_init
        self._read_log(process.stderr.fileno(), limits)
        self._reaper = reaper
        self._closed = False

    def agent_pid(self) -> int | None:
        """The process that runs the agent's code (under bubblewrap, a grandchild of
        ``process``), once the sandbox around it is set up; None until then."""
        # Asked from several threads (the referee's, the warm pool's): one reads the byte.
        with self._report_lock:
            if self._agent_pid is None:
                self._agent_pid = reported_pid(self._report)
                if self._agent_pid is not None and self.confined:
                    self._init_fd = (
                        pidfd_of(self._agent_pid)
                        if self._as_init
                        else _parent_pidfd(self._agent_pid)
                    )
            return self._agent_pid

    def pin_to(self, cpus: set[int]) -> bool:
        pid = self.agent_pid()
        return pid is not None and pin_process(pid, cpus)

    def wait_for_exit(self, seconds: float) -> None:
        self.termination(wait=seconds)  # its pidfd: told at once

    def has_ended(self) -> bool:
        """Whether its process has ended (a warm pool's agent is checked before it is
        handed out)."""
        return self.process.poll() is not None

    def termination(self, wait: float = 0.0) -> Termination | None:
        if wait and self.exit_fd is not None:
            # Readable the moment the process ends (Popen.wait would poll, sleeping up to
            # twice as long as the agent took to exit).
            exited = select.poll()
            exited.register(self.exit_fd, select.POLLIN)
            exited.poll(wait * 1000)
            returncode = self.process.poll()
        else:
            try:
                returncode = self.process.wait(timeout=wait) if wait else self.process.poll()
            except subprocess.TimeoutExpired:
                returncode = None
        if returncode is None:
            return None
        # The report precedes the agent's code: without it, nothing of the agent ran.
        if self.agent_pid() is None:
            self._log_ended(0.5)
            raise SandboxError(f"the process sandbox could not start the agent: {self.log()}")
        if returncode == 0:
            return Termination(returncode)
        if self.confined and returncode > 0:
            # Reported by bubblewrap, which waited for the agent.
            returncode = decode_exit_status(returncode)
        # The drain thread may still hold the last words of the agent.
        self._log_ended(0.5)
        log = self.log()
        return termination_from(returncode, log)

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        # The init is in the group unless the agent moved it (in a user namespace it may
        # trace it); killed by its descriptor, it takes the whole PID namespace with it.
        self.agent_pid()
        if self._init_fd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._init_fd, signal.SIGKILL)

    def _namespace_ended(self) -> bool:
        """Confined: whether the agent's PID namespace has ended, and with it everything
        the agent started. The kernel kills and reaps every process of a namespace before
        its init ends (a process there cannot start one outside it), and bubblewrap's
        first process, the only other one under the agent's user id, is reaped: nothing
        of the agent can run any more. False where that cannot be told (its init was
        never seen: the sweep kills by user id instead)."""
        if not self.confined or self._init_fd is None or self.process.returncode is None:
            return False
        ended = select.poll()
        ended.register(self._init_fd, select.POLLIN)
        return bool(ended.poll(NAMESPACE_END_WAIT * 1000))

    def _kill_escaped(self) -> None:
        """Kill what left the agent's process group: every process of its user id (no
        fork needed when its PID namespace is known to have ended), or without one, every
        process that carries its token."""
        if self.uid is not None:
            if not self._namespace_ended():
                kill_user_processes(self.uid)
        elif not self.confined:
            # (Confined, nothing is left: its PID namespace ended with its init.)
            # Without a uid of its own, find the agent's escaped descendants by the
            # token in their environment.
            marker = f"ARENA_SANDBOX_TOKEN={self.token}".encode()
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        if marker in Path(entry.path, "environ").read_bytes().split(b"\0"):
                            os.kill(int(entry.name), signal.SIGKILL)

    def close(self) -> None:
        """Kills the agent's process group at once. Once the group is gone and its log has
        ended (no process holds its stderr any more: the log is complete), the rest (the
        sweep of its user id for anything that left the group, closing the streams,
        removing the folder, freeing the user id) goes to the reaper, when there is one: a
        process sandbox sweeps with a fork, several milliseconds that a duel's end no
        longer waits for. The user id stays taken until its sweep is done, so no other
        agent gets it while something of this one may still run."""
        if self._closed:
            return
        self._closed = True
        self._kill_group()
        if self._reaper is not None:
            self._wait_exit(5.0)
            log_ended = self._log_ended(LOG_END_WAIT)
            # Confined, the kill took the sandbox's init, and with it the kernel kills all of
            # the agent's PID namespace: nothing of it can be left outside.
            if log_ended and (self.confined or not self._group_left()):
                self._reaper.submit(self._sweep_in_background)
                return
        self._sweep()

    def _wait_exit(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the launched process to end, and reap it
        (Popen.wait would poll, sleeping up to twice as long as it took to end)."""
        if self.process.returncode is not None:
            return
        if self.exit_fd is not None:
            exited = select.poll()
            exited.register(self.exit_fd, select.POLLIN)
            exited.poll(timeout * 1000)
            self.process.poll()
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)

    def _group_left(self) -> bool:
        """Whether any process of the agent's group still exists, dying or a zombie (one
        signal 0, which only asks)."""
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def _sweep_in_background(self) -> None:
        # Off the CPUs duels hold (the reaper's thread may have been started by a duel's
        # pinned thread), as the warm pool's starts are.
        with away_from_duels():
            self._sweep()

    def _sweep(self) -> None:
        """What follows the group's kill: what escaped it is killed (never the group again,
        whose number may have been given to another agent's since), then the streams, the
        folder and the user id are let go, said to have nothing left under it (what
        ``_kill_escaped`` does not kill, it raises for, and the id stays taken)."""
        self._wait_exit(5.0)
        self._kill_escaped()
        # With every writer dead the drain thread reads the last of the log and hits
        # EOF; the flag only matters if something escaped with the pipe still open.
        self._stop_reading()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None
        self._report.close()
        if self._init_fd is not None:
            os.close(self._init_fd)
            self._init_fd = None
        remove_tree(self.workdir)
        if self.uid_lock is not None:
            UserPool.release(self.uid_lock, nothing_left=True)
