"""The ``process`` sandbox: an agent as a confined child process of the referee.

Every agent gets its own session and process group, a scrubbed environment and rlimits
on CPU time, memory, processes, open files and file size; its files are a private copy.

Where the machine allows it (``confinement.probe``), the agent runs under bubblewrap:
its file system is its own files and its runtime, read-only, and a private ``/tmp``,
in its own PID, network, IPC and UTS namespaces, and a user namespace where the kernel
allows it (``sandboxes.confinement``). When the referee runs as root each agent also runs
under its own unprivileged user id taken from a pool. The user id is what makes the
process limit hold (it counts per user) and lets a close kill every process of the agent
in one ``kill(-1)`` that a fork bomb cannot outrun. A close also kills the sandbox's init
(bubblewrap's, PID 1 of the namespace) by a descriptor taken when the agent reported,
wherever the agent may have moved it, and with it the kernel kills everything in the
namespace: nothing the agent started outlives it.

Where it cannot (no ``bwrap``, or no root and no user namespaces), the sandbox runs
agents unconfined and says why (``unconfined_reason``): the limits still apply, and as
root the user id and an empty network namespace, but the agent can read every
world-readable file of the machine. That is for trusted agents only: the platform
refuses untrusted uploads then, unless its operator accepts it knowingly.
"""

from __future__ import annotations

import compileall
import contextlib
import fcntl
import hashlib
import os
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path

from sandboxes import confinement, jail
from sandboxes.base import (
    SAFE_PATH,
    AgentLog,
    AgentSource,
    EntryKind,
    MoveKey,
    SandboxError,
    SandboxLimits,
    Termination,
    agent_environment,
    decode_exit_status,
    termination_from,
)
from sandboxes.confinement import Confinement
from sandboxes.cpus import PROCESS_CPUS, away_from_duels, pin_process
from sandboxes.warm_pool import Reaper, WarmKey, WarmPool, shut_down, wait_until_reading

PROJECT_DIR = Path(__file__).resolve().parents[1]
SDK_DIR = PROJECT_DIR / "sdk" / "arena_sdk"
#: Agents run by this Python by default when confined: Debian's, as in the docker
#: sandbox's image (with NumPy where the package is installed).
SYSTEM_PYTHON = "/usr/bin/python3"
DEFAULT_ROOT = Path(tempfile.gettempdir()) / "arena-sandboxes"
UID_BASE = 1_900_000
UID_COUNT = 1000
#: The user ids' locks: one folder for the whole host, whatever each referee's sandbox
#: root, so that no two referees ever give one user id to two agents.
UID_LOCKS = Path(tempfile.gettempdir()) / "arena-sandbox-uids"
#: Room in the address space on top of the memory limit: runtimes such as Node.js
#: reserve gigabytes they never touch, so the real cap is RLIMIT_DATA.
ADDRESS_SPACE_EXTRA_MB = 4096
#: How long ``ProcessAgent.close`` waits for the agent's log to end once its group is
#: killed (at once, unless something that escaped the group still holds the pipe).
LOG_END_WAIT = 0.05
#: How long closing the sandbox waits for its agents started ahead and its sweeps.
SHUT_DOWN_SECONDS = 10.0


def _executable_by_anyone(path: Path) -> bool:
    """True if a user with no special rights could run ``path`` (every folder o+x)."""
    real = path.resolve()
    try:
        if not real.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)
    except OSError:
        return False


def _remove_tree(path: Path) -> None:
    def make_writable_and_retry(
        function: Callable[[str], object], failed_path: str, _error: object
    ) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed_path), 0o700)
            os.chmod(failed_path, 0o700)
        with contextlib.suppress(OSError):
            function(failed_path)

    shutil.rmtree(path, onerror=make_writable_and_retry)


def _status_field(status: bytes, name: bytes) -> bytes:
    """The value of field ``name`` in a /proc/PID/status text ("" if absent). The kernel
    escapes newlines in a process's name, so no process can forge a line."""
    start = status.find(b"\n" + name + b":\t")
    if start < 0:
        return b""
    start += len(name) + 3
    return status[start : status.find(b"\n", start)]


def _processes_of_user(uid: int, *, count_threads: bool = False) -> list[int]:
    """Live (non-zombie) processes whose real user id is ``uid``.

    With ``count_threads`` each process appears once per thread, which is what
    RLIMIT_NPROC counts. Every close of an agent scans all of /proc (see
    ``kill_user_processes``), so the files are read as bytes with plain system calls.
    """
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/status", os.O_RDONLY)
        except OSError:
            continue
        try:
            status = os.read(fd, 1 << 16)
        except OSError:
            continue
        finally:
            os.close(fd)
        real_uid = _status_field(status, b"Uid").split(b"\t", 1)[0]
        if real_uid != str(uid).encode() or _status_field(status, b"State").startswith(b"Z"):
            continue
        threads = int(_status_field(status, b"Threads") or 1) if count_threads else 1
        found.extend([int(name)] * threads)
    return found


#: The exit status of ``kill_user_processes``'s child when no other process has its uid.
_ALONE = 4


def _alone_under_own_uid() -> bool:  # pragma: no cover - runs in a child
    """True if no other process (zombies included) has this process's real user id.

    The kernel refuses a fork past RLIMIT_NPROC, which counts the user's processes: with a
    limit of 2, this process and its new child, a fork succeeds only when nothing else of
    the user exists. (kill(-1) cannot tell: it reports success whenever the machine has any
    other process, even one it may not signal.) Needs no privilege: a non-root user cannot
    exceed the limit.
    """
    resource.setrlimit(resource.RLIMIT_NPROC, (2, 2))
    try:
        child = os.fork()
    except BlockingIOError:
        return False
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return True


def kill_user_processes(uid: int) -> None:
    """Kill every process of ``uid``: a child takes that uid and calls kill(-1, SIGKILL).

    kill(-1) signals all of the caller's processes under the kernel's task list lock, and a
    process with SIGKILL pending cannot fork, so once it has been called nothing of ``uid``
    can appear any more: a scan of /proc afterwards is reliable. A scan before it is not
    (it can miss a process forked while it reads, such as a daemon that double-forks as
    its agent exits), so there is always at least one kill(-1).

    The scan reads every process's status, a cost that grows with the host; the child
    first asks the kernel instead (``_ALONE``), which answers for the usual case of a user
    id with nothing left to kill.
    """
    for _attempt in range(20):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 3
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
                code = _ALONE if _alone_under_own_uid() else 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        # Otherwise wait for the killed to die (zombies waiting for a parent to reap them
        # do not count).
        if os.waitstatus_to_exitcode(status) == _ALONE or not _processes_of_user(uid):
            return
        time.sleep(0.005)
    raise SandboxError(f"processes of sandbox user {uid} survive SIGKILL")


def _pidfd(pid: int) -> int | None:
    """A descriptor that polls readable when ``pid`` ends (Linux 5.3 and later)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _reported_pid(report: socket.socket) -> int | None:
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
        return os.pidfd_open(int(_status_field(status, b"PPid")))
    except (OSError, ValueError):
        return None


class UserPool:
    """Unprivileged user ids, one per running agent, shared by every referee on the host."""

    def __init__(
        self, directory: Path = UID_LOCKS, base: int = UID_BASE, count: int = UID_COUNT
    ) -> None:
        self.directory = directory
        self.base = base
        self.count = count

    def acquire(self) -> tuple[int, int]:
        """Returns (uid, lock fd); the lock is held until ``release``."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        start = (os.getpid() * 7) % self.count
        for offset in range(self.count):
            uid = self.base + (start + offset) % self.count
            fd = os.open(self.directory / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            # A referee that died may have left processes behind under this uid.
            kill_user_processes(uid)
            return uid, fd
        raise SandboxError(f"all {self.count} sandbox user ids are in use")

    @staticmethod
    def release(fd: int) -> None:
        os.close(fd)


class ProcessAgent:
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
    ) -> None:
        """``report`` receives the byte sent just before the agent's own code runs
        (``jail``, ``confinement``); ``confined``: run under bubblewrap, in a PID namespace
        of its own. ``reaper``, if given, takes the sweep of the agent's user id and the
        removal of its folder off ``close``'s path, when nothing of the agent is left on
        its log (``close``)."""
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
        self.exit_fd: int | None = _pidfd(process.pid)
        self._report = report
        self._report.setblocking(False)
        #: The agent's own process as this host sees it, once it has reported.
        self._agent_pid: int | None = None
        self._report_lock = threading.Lock()
        #: Confined, the sandbox's init (the agent's parent, PID 1 of its namespace), held
        #: from the report on: killed by ``close`` whatever process group it is in then.
        self._init_fd: int | None = None
        self._log = AgentLog(process.stderr.fileno(), limits)
        self._closing = threading.Event()
        self._drain = threading.Thread(target=self._log.run, args=(self._closing,), daemon=True)
        self._drain.start()
        self._reaper = reaper
        self._closed = False

    def agent_pid(self) -> int | None:
        """The process that runs the agent's code (under bubblewrap, a grandchild of
        ``process``), once the sandbox around it is set up; None until then."""
        # Asked from several threads (the referee's, the warm pool's): one reads the byte.
        with self._report_lock:
            if self._agent_pid is None:
                self._agent_pid = _reported_pid(self._report)
                if self._agent_pid is not None and self.confined:
                    self._init_fd = _parent_pidfd(self._agent_pid)
            return self._agent_pid

    def log(self) -> str:
        return self._log.text()

    def mark_move(self, move: MoveKey | None) -> None:
        self._log.mark_move(move)

    def move_logs(self) -> dict[MoveKey, str]:
        return self._log.move_logs()

    def pin_to(self, cpus: set[int]) -> bool:
        pid = self.agent_pid()
        return pid is not None and pin_process(pid, cpus)

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
            self._drain.join(timeout=0.5)
            raise SandboxError(f"the process sandbox could not start the agent: {self.log()}")
        if returncode == 0:
            return Termination(returncode)
        if self.confined and returncode > 0:
            # Reported by bubblewrap, which waited for the agent.
            returncode = decode_exit_status(returncode)
        # The drain thread may still hold the last words of the agent.
        self._drain.join(timeout=0.5)
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

    def _kill_escaped(self) -> None:
        """Kill what left the agent's process group: every process of its user id, or
        without one, every process that carries its token."""
        if self.uid is not None:
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
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            self._drain.join(timeout=LOG_END_WAIT)
            # Confined, the kill took the sandbox's init, and with it the kernel kills all of
            # the agent's PID namespace: nothing of it can be left outside.
            if not self._drain.is_alive() and (self.confined or not self._group_left()):
                self._reaper.submit(self._sweep_in_background)
                return
        self._sweep()

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
        folder and the user id are let go."""
        self._kill_escaped()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        # With every writer dead the drain thread reads the last of the log and hits
        # EOF; the flag only matters if something escaped with the pipe still open.
        self._drain.join(timeout=1)
        self._closing.set()
        self._drain.join(timeout=1)
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
        _remove_tree(self.workdir)
        if self.uid_lock is not None:
            UserPool.release(self.uid_lock)


class ProcessSandbox:
    """The ``process`` backend.

    With ``pool_size`` > 0 it keeps up to that many agents started ahead
    (``warm_pool.WarmPool``): each ``start`` takes a ready one for the same files, limits
    and environment if there is one, and has another started at once, beside the duel
    that begins, for the agent's next duel. A ready agent has started its interpreter and
    loaded its module and sleeps until the referee's handshake (its clocks start there,
    as a fresh agent's do); it waits at most ``pool_idle_seconds``, is confined exactly
    as the others and serves one duel only. ``close`` (also run at exit) kills them.
    Keep one long-lived sandbox per worker process for the pool to pay off.
    """

    name = "process"

    def __init__(
        self,
        root: Path | None = None,
        *,
        python: str | None = None,
        confine: bool | None = None,
        hidden: Iterable[Path] = (),
        isolate_users: bool | None = None,
        uid_base: int = UID_BASE,
        uid_count: int = UID_COUNT,
        pool_size: int = 0,
        pool_idle_seconds: float = 60.0,
    ) -> None:
        """``root`` holds the agents' folders; ``python`` runs Python agents (by default
        Debian's when confined, else the referee's own or a system one that the sandbox
        users may execute).

        ``confine``: run agents under bubblewrap (``sandboxes.confinement``); None (the
        default) where this machine can, saying why not in ``unconfined_reason``; True
        raises ``SandboxError`` with that reason instead; False never (trusted agents,
        or a benchmark's baseline). ``hidden`` folders (Arena's data) are covered in the
        agent's view when its runtime holds them; the checkout and ``root`` always are.

        As root, agents run under user ids ``uid_base`` to ``uid_base + uid_count - 1``;
        the warm pool is above."""
        self.root = Path(root or DEFAULT_ROOT)
        self.isolate_users = os.geteuid() == 0 if isolate_users is None else isolate_users
        if self.isolate_users and os.geteuid() != 0:
            raise SandboxError("isolating agents under their own user ids needs root")
        found = (
            confinement.probe()
            if confine is not False
            else Confinement(None, reason="confinement turned off")
        )
        if found.mode == "userns" and self.isolate_users:
            # There the agents' own user ids start bubblewrap, which must reach their
            # folders: below a root only root may traverse, root does it (setpriv).
            self._prepare_root()
            if not _executable_by_anyone(self.root):
                found = Confinement(found.bwrap, "setpriv")
        self.confinement = found
        self.python = python or self._default_python()
        self._view: confinement.AgentView | None = None
        if found.confined:
            # Checked with the agents' own Python: one that cannot run in the view would
            # fail every agent after its report, as if each one had crashed.
            try:
                self._view = confinement.agent_view(
                    self.python, hidden=[PROJECT_DIR, self.root, *hidden]
                )
                failure = confinement.checked_view(found, self._view)
            except confinement.ViewError as error:
                failure = str(error)
            if failure:
                self._view = None
                self.confinement = Confinement(
                    None, reason=f"the agents' Python cannot run confined: {failure}"
                )
        if confine and not self.confinement.confined:
            raise SandboxError(self.confinement.reason)
        self.users = UserPool(base=uid_base, count=uid_count)
        self._sdk_path: Path | None = None
        # Agents start side by side: one of them makes the copy, the other waits for it.
        self._sdk_lock = threading.Lock()
        self.pool: WarmPool[ProcessAgent] | None = WarmPool.of_size(
            pool_size, pool_idle_seconds, start=self._start_warm, discard=ProcessAgent.close
        )
        #: Sweeps closed agents' user ids and removes their folders (``ProcessAgent.close``).
        self.reaper = Reaper("arena-process-reaper")
        # At exit (or when the sandbox is collected): no agent started ahead outlives us,
        # and every sweep is done.
        self._finalizer = weakref.finalize(
            self, shut_down, self.pool, self.reaper, SHUT_DOWN_SECONDS
        )

    @property
    def confined(self) -> bool:
        """Agents see their own files and runtime only (``sandboxes.confinement``)."""
        return self.confinement.confined

    @property
    def unconfined_reason(self) -> str:
        """Why agents can read the machine's world-readable files ("" when they cannot)."""
        return self.confinement.reason

    def close(self) -> None:
        """Kill the agents started ahead and finish every sweep; idempotent."""
        self._finalizer()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every closed agent's sweep is done; False if ``timeout`` passed."""
        return self.reaper.flush(timeout)

    def _default_python(self) -> str:
        if self.confinement.confined:
            # Bound into the agent's view whatever its folder's rights.
            if os.access(SYSTEM_PYTHON, os.X_OK):
                return SYSTEM_PYTHON
            return os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        if not self.isolate_users or _executable_by_anyone(Path(sys.executable)):
            return sys.executable
        # The referee's own interpreter may sit in a private home (a pyenv under
        # /root): agents running as another user need one they can execute.
        for candidate in ("/usr/local/bin/python3", SYSTEM_PYTHON):
            if Path(candidate).exists() and _executable_by_anyone(Path(candidate)):
                return candidate
        raise SandboxError(
            "no Python interpreter that an unprivileged sandbox user can run; "
            "set ARENA_AGENT_PYTHON"
        )

    def _prepare_root(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Unconfined agents under their own user ids reach their folder through the root:
        # they may traverse it, never list it (each folder is its agent's alone). Confined
        # ones never see it, but a sandbox of each kind may share the root.
        os.chmod(self.root, 0o711 if self.isolate_users else 0o700)

    def _sdk(self) -> Path:
        """A world-readable copy of the SDK, made once per content version, with its
        bytecode, so that agents (which run with -B) do not compile it at every start."""
        with self._sdk_lock:
            if self._sdk_path is None:
                self._sdk_path = self._copy_sdk()
        return self._sdk_path

    def _copy_sdk(self) -> Path:
        digest = hashlib.sha256()
        for path in sorted(SDK_DIR.glob("*.py")):
            digest.update(path.name.encode() + path.read_bytes())
        target = self.root / f"sdk-{digest.hexdigest()[:16]}"
        if not (target / "arena_sdk" / "__init__.py").exists():
            staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".sdk-"))
            shutil.copytree(
                SDK_DIR, staging / "arena_sdk", ignore=shutil.ignore_patterns("__pycache__")
            )
            # Compiled by this interpreter: an agents' interpreter of another minor version
            # looks for its own cache tag, finds none and compiles as before.
            compileall.compile_dir(staging, quiet=2)
            for path in [staging, *staging.rglob("*")]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            try:
                staging.rename(target)
            except OSError:  # another referee made it first
                _remove_tree(staging)
        return target

    def _command(self, source: AgentSource, workdir: Path) -> list[str]:
        """The agent's command line, with its paths as the agent sees them."""
        if self._view is not None:
            if source.kind is EntryKind.EXECUTABLE:
                return [f"{confinement.AGENT_DIR}/{source.entry}"]
            return [self._view.python, "-s", "-B", "-m", "arena_sdk", source.entry]
        if source.kind is EntryKind.EXECUTABLE:
            return [str(workdir / source.entry)]
        return [self.python, "-s", "-B", "-m", "arena_sdk", source.entry]

    def _environment(self, source: AgentSource, workdir: Path, token: str) -> dict[str, str]:
        if self._view is not None:
            home, pythonpath = confinement.SCRATCH_DIR, confinement.SDK_DIR
        else:
            home, pythonpath = str(workdir), str(self._sdk())
        return agent_environment(
            source, sandbox=self.name, token=token, home=home, pythonpath=pythonpath
        )

    @staticmethod
    def _rlimits(limits: SandboxLimits) -> dict[str, tuple[int, int]]:
        mib = 1024 * 1024
        memory = limits.memory_mb * mib
        return {
            "RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + 1),
            "RLIMIT_DATA": (memory, memory),
            "RLIMIT_AS": (memory + ADDRESS_SPACE_EXTRA_MB * mib,) * 2,
            "RLIMIT_NPROC": (limits.max_processes, limits.max_processes),
            "RLIMIT_FSIZE": (limits.max_file_mb * mib, limits.max_file_mb * mib),
            "RLIMIT_NOFILE": (limits.max_open_files, limits.max_open_files),
            "RLIMIT_CORE": (0, 0),
        }

    def start(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> ProcessAgent:
        if self.pool is None:
            return self._launch(source, limits=limits, label=label)
        key = WarmKey.of(source, limits, label)
        agent = self.pool.take(key)
        if agent is None:
            agent = self._launch(source, limits=limits, label=label)
        else:
            agent.warm = True
        # The agent's next duel finds one ready: started now, on the core this duel
        # leaves free (a turn-based duel keeps about one busy).
        self.pool.want(key)
        return agent

    def _start_warm(self, key: Hashable) -> ProcessAgent:
        assert isinstance(key, WarmKey)
        # Started and loaded on CPUs that no duel of this process plays on; ready once
        # it sleeps waiting for the handshake, where that can be told (at worst the
        # handshake waits for the rest, as when fresh), then free to run anywhere again.
        with away_from_duels():
            agent = self._launch(key.source, limits=key.limits, label=key.label)
        wait_until_reading(agent.agent_pid, timeout=5.0)
        agent.pin_to(set(PROCESS_CPUS))
        return agent

    def _take_user(self) -> tuple[int, int]:
        """A user id for a new agent; when none is free, once the sweeps pending here are
        done (each keeps its agent's user id taken until then)."""
        try:
            return self.users.acquire()
        except SandboxError:
            if not self.reaper.flush(SHUT_DOWN_SECONDS):
                raise
        return self.users.acquire()

    def _launch(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> ProcessAgent:
        self._prepare_root()
        uid, uid_lock = self._take_user() if self.isolate_users else (None, None)
        token = os.urandom(8).hex()
        workdir: Path | None = None
        # The byte that says the sandbox is set up, with the agent's process id (``jail``).
        report, report_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        report.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        try:
            workdir = Path(tempfile.mkdtemp(dir=self.root, prefix=f"{label}-"))
            source.copy_into(workdir)
            if uid is not None:
                for path in [workdir, *workdir.rglob("*")]:
                    os.lchown(path, uid, uid)
            os.chmod(workdir, 0o700)
            rlimits = self._rlimits(limits)
            if not self.isolate_users:
                # Without a user of its own, the process limit counts every process
                # of the calling user, so leave room for those already running.
                running = len(_processes_of_user(os.getuid(), count_threads=True))
                allowed = running + limits.max_processes
                rlimits["RLIMIT_NPROC"] = (allowed, allowed)
            command = self._command(source, workdir)
            environment = self._environment(source, workdir, token)
            if self._view is not None:
                config = confinement.launch_config(
                    self.confinement,
                    self._view,
                    agent_dir=workdir,
                    sdk_dir=self._sdk(),
                    uid=uid,
                    environment=environment,
                    command=command,
                    rlimits=rlimits,
                )
            else:
                config = {
                    "uid": uid,
                    "gid": uid,
                    "workdir": str(workdir),
                    "command": command,
                    "env": environment,
                    "rlimits": rlimits,
                    "unshare_network": self.isolate_users,
                }
            config["ready_fd"] = report_end.fileno()
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", jail.__file__, jail.encode(config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=(report_end.fileno(),),
                cwd="/",
                env={"PATH": SAFE_PATH},
            )
        except (OSError, SandboxError) as error:
            report.close()
            if workdir is not None:
                _remove_tree(workdir)
            if uid_lock is not None:
                UserPool.release(uid_lock)
            if isinstance(error, SandboxError):
                raise
            raise SandboxError(f"cannot start the agent in the process sandbox: {error}") from error
        finally:
            report_end.close()
        return ProcessAgent(
            process=process,
            workdir=workdir,
            uid=uid,
            uid_lock=uid_lock,
            token=token,
            limits=limits,
            report=report,
            confined=self.confined,
            reaper=self.reaper,
        )
