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

A running agent is a ``sandboxes.process_agent.ProcessAgent``; the user ids and their
sweeps are ``sandboxes.process_users``.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Hashable, Iterable
from pathlib import Path

from sandboxes import confinement, jail
from sandboxes.base import (
    SAFE_PATH,
    AgentSource,
    EntryKind,
    SandboxError,
    SandboxLimits,
    agent_environment,
)
from sandboxes.confinement import CONTROL_FD, Confinement
from sandboxes.cpus import PROCESS_CPUS, away_from_duels
from sandboxes.fork_servers import ForkedAgent, ForkServers, started_ahead
from sandboxes.process_agent import ProcessAgent, remove_tree
from sandboxes.process_users import UID_BASE, UID_COUNT, UserPool, processes_of_user
from sandboxes.warm_pool import Reaper, WarmKey, shut_down, wait_until_reading

PROJECT_DIR = Path(__file__).resolve().parents[1]
SDK_DIR = PROJECT_DIR / "sdk" / "arena_sdk"
#: Agents run by this Python by default when confined: Debian's, as in the docker
#: sandbox's image (with NumPy where the package is installed).
SYSTEM_PYTHON = "/usr/bin/python3"
DEFAULT_ROOT = Path(tempfile.gettempdir()) / "arena-sandboxes"
#: Room in the address space on top of the memory limit: runtimes such as Node.js
#: reserve gigabytes they never touch, so the real cap is RLIMIT_DATA.
ADDRESS_SPACE_EXTRA_MB = 4096
#: The file of the SDK that runs a fork server (``sandboxes.fork_servers``), as the agent
#: sees it: run from its file, so that nothing of the agent's folder is imported by the
#: server (``arena_sdk.fork_server``).
FORK_SERVER = f"{confinement.SDK_DIR}/arena_sdk/fork_server.py"
#: How long closing the sandbox waits for its agents started ahead and its sweeps.
SHUT_DOWN_SECONDS = 10.0
#: How long ``start`` waits for an agent its warm pool is starting for the same key (a
#: fork takes milliseconds) before it starts one of its own (tens of them, and both
#: then compete for the CPU).
WARM_WAIT = 2.0


def _executable_by_anyone(path: Path) -> bool:
    """True if a user with no special rights could run ``path`` (every folder o+x)."""
    real = path.resolve()
    try:
        if not real.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)
    except OSError:
        return False


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
        #: Confined, the pool's Python agents are forked by a server kept per agent
        #: (``sandboxes.fork_servers``).
        self.pool, self.fork_servers = started_ahead(
            pool_size, pool_idle_seconds, self._start_warm, forking=self.confined
        )
        #: Sweeps closed agents' user ids and removes their folders (``ProcessAgent.close``).
        self.reaper = Reaper("arena-process-reaper")
        # At exit (or when the sandbox is collected): no agent started ahead outlives us,
        # every sweep is done, and no fork server is left.
        self._finalizer = weakref.finalize(
            self, shut_down, self.pool, self.reaper, SHUT_DOWN_SECONDS, self.fork_servers
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
                remove_tree(staging)
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

    def start(
        self, source: AgentSource, *, limits: SandboxLimits, label: str
    ) -> ProcessAgent | ForkedAgent:
        if self.pool is None:
            return self._launch(source, limits=limits, label=label)
        key = WarmKey.of(source, limits, label)
        agent = self.pool.take(key, wait=WARM_WAIT)
        if agent is None:
            agent = self._launch(source, limits=limits, label=label)
        else:
            agent.warm = True
        # The agent's next duel finds one ready: started now, on the core this duel
        # leaves free (a turn-based duel keeps about one busy).
        self.pool.want(key)
        return agent

    def _start_warm(self, key: Hashable) -> ProcessAgent | ForkedAgent:
        assert isinstance(key, WarmKey)
        # Started and loaded on CPUs that no duel of this process plays on; ready once
        # it sleeps waiting for the handshake, where that can be told (at worst the
        # handshake waits for the rest, as when fresh), then free to run anywhere again.
        agent: ProcessAgent | ForkedAgent
        with away_from_duels():
            if self.fork_servers is not None and key.source.kind is not EntryKind.EXECUTABLE:
                agent = self._fork(key, self.fork_servers)
            else:
                agent = self._launch(key.source, limits=key.limits, label=key.label)
        wait_until_reading(agent.agent_pid, timeout=5.0)
        agent.pin_to(set(PROCESS_CPUS))
        return agent

    def _fork(self, key: WarmKey, servers: ForkServers) -> ForkedAgent:
        """The agent of ``key`` forked by an idle server of it, or by a new one."""
        return servers.fork(
            key,
            key.limits,
            self.reaper,
            lambda control: self._launch(
                key.source, limits=key.limits, label=key.label, control=control
            ),
        )

    def _take_user(self) -> tuple[int, int]:
        """A user id for a new agent; when none is free, once the sweeps pending here are
        done (each keeps its agent's user id taken until then)."""
        try:
            return self.users.acquire()
        except SandboxError:
            if not self.reaper.flush(SHUT_DOWN_SECONDS):
                raise
        return self.users.acquire()

    def _launch(
        self,
        source: AgentSource,
        *,
        limits: SandboxLimits,
        label: str,
        control: socket.socket | None = None,
    ) -> ProcessAgent:
        """A fresh agent; with ``control`` (confined only), a fork server of it on that
        socket instead (``sandboxes.fork_servers``)."""
        self._prepare_root()
        uid, uid_lock = self._take_user() if self.isolate_users else (None, None)
        token = os.urandom(8).hex()
        workdir: Path | None = None
        options: int | None = None  # bubblewrap's options file, confined
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
                running = len(processes_of_user(os.getuid(), count_threads=True))
                allowed = running + limits.max_processes
                rlimits["RLIMIT_NPROC"] = (allowed, allowed)
            command = self._command(source, workdir)
            if control is not None:
                assert self._view is not None
                command = [*command[:3], FORK_SERVER, source.entry, str(CONTROL_FD)]
            environment = self._environment(source, workdir, token)
            if self._view is not None:
                launch, options = confinement.launcher(
                    self.confinement,
                    self._view,
                    agent_dir=workdir,
                    sdk_dir=self._sdk(),
                    uid=uid,
                    environment=environment,
                    command=command,
                    rlimits=rlimits,
                    report_fd=report_end.fileno(),
                    control_fd=None if control is None else control.fileno(),
                )
                passed: tuple[int, ...] = (report_end.fileno(), options)
                if control is not None:
                    passed += (control.fileno(),)
            else:
                config: dict[str, object] = {
                    "uid": uid,
                    "gid": uid,
                    "workdir": str(workdir),
                    "command": command,
                    "env": environment,
                    "rlimits": rlimits,
                    "unshare_network": self.isolate_users,
                    "ready_fd": report_end.fileno(),
                }
                launch = [sys.executable, "-I", "-S", jail.__file__, jail.encode(config)]
                passed = (report_end.fileno(),)
            process = subprocess.Popen(
                launch,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=passed,
                cwd="/",
                env={"PATH": SAFE_PATH},
            )
        except (OSError, SandboxError) as error:
            report.close()
            if workdir is not None:
                remove_tree(workdir)
            if uid_lock is not None:
                UserPool.release(uid_lock)
            if isinstance(error, SandboxError):
                raise
            raise SandboxError(f"cannot start the agent in the process sandbox: {error}") from error
        finally:
            report_end.close()
            if options is not None:
                os.close(options)
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
            as_init=control is not None,
        )
