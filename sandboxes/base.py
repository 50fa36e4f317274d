"""The sandbox interface: start an agent in isolation and hand its byte streams to the referee.

A backend (``process`` here, ``docker`` later) turns an ``AgentSource`` into a
``SandboxedAgent``: a running agent with a stream the referee writes requests to
and a stream it reads replies from. The agent's stderr is collected by the
backend as its log, capped in size. ``close()`` kills everything the agent
started and removes its files; it is always called, and calling it twice is fine.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import select
import shutil
import signal
import threading
from pathlib import Path
from typing import Protocol

ENTRY_POINTS = ("main.py", "agent.py")
EXECUTABLE_ENTRY_POINT = "agent"


class SandboxError(Exception):
    """The sandbox itself failed (not the agent): the duel must not be scored."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidAgent(ValueError):
    """The path given as an agent is not a runnable agent; says what to fix."""


class EntryKind(enum.Enum):
    PYTHON = "python"
    EXECUTABLE = "executable"
    #: Nothing to start: the agent connects over the network.
    REMOTE = "remote"
    #: Nothing to start: a language model behind a server plays (``sandboxes.llm``).
    LLM = "llm"


@dataclasses.dataclass(frozen=True)
class AgentSource:
    """Where an agent's files are and how to start it.

    An agent is a ``.py`` file, or a folder whose entry point is ``main.py``,
    ``agent.py`` or an executable file named ``agent`` (any language).
    """

    path: Path
    entry: str
    kind: EntryKind
    #: Extra environment variables for this agent (its configuration, e.g. a depth).
    environment: tuple[tuple[str, str], ...] = ()
    #: An image that holds the agent's files at ``/agent`` and its dependencies (one is
    #: built per revision for the docker sandbox); the docker sandbox starts it instead
    #: of mounting ``path``. Other backends run ``path`` and ignore it.
    image: str | None = None
    #: An online agent's seat on the seat bus (``sandboxes.remote``): it connects over
    #: the network, and nothing is started; ``path`` only names it.
    seat: str | None = None

    @classmethod
    def remote(cls, name: str, *, seat: str) -> AgentSource:
        """An online agent called ``name``, reached through ``seat``."""
        return cls(path=Path(name), entry="", kind=EntryKind.REMOTE, seat=seat)

    @classmethod
    def llm(cls, name: str) -> AgentSource:
        """An LLM player called ``name``: its seat (``sandboxes.llm``) says which model."""
        return cls(path=Path(name), entry="", kind=EntryKind.LLM)

    @classmethod
    def from_path(cls, path: str | Path, environment: dict[str, str] | None = None) -> AgentSource:
        source = cls._from_path(Path(path))
        return dataclasses.replace(source, environment=tuple(sorted((environment or {}).items())))

    @classmethod
    def _from_path(cls, path: Path) -> AgentSource:
        if path.is_file():
            if path.suffix != ".py":
                raise InvalidAgent(f"{path}: an agent file must be a .py file")
            return cls(path=path.resolve(), entry=path.name, kind=EntryKind.PYTHON)
        if path.is_dir():
            for name in ENTRY_POINTS:
                if (path / name).is_file():
                    return cls(path=path.resolve(), entry=name, kind=EntryKind.PYTHON)
            executable = path / EXECUTABLE_ENTRY_POINT
            if executable.is_file():
                if not executable.stat().st_mode & 0o111:
                    raise InvalidAgent(f"{executable}: the entry point is not executable")
                return cls(
                    path=path.resolve(), entry=EXECUTABLE_ENTRY_POINT, kind=EntryKind.EXECUTABLE
                )
            raise InvalidAgent(
                f"{path}: no entry point; add main.py, agent.py or an executable named 'agent'"
            )
        raise InvalidAgent(f"{path}: no such file or folder")

    @property
    def name(self) -> str:
        if self.kind in (EntryKind.REMOTE, EntryKind.LLM):
            return str(self.path)
        return self.path.stem if self.path.is_file() else self.path.name

    def copy_into(self, destination: Path) -> None:
        """Copy the agent's files into ``destination`` (an existing, empty folder)."""
        if self.path.is_file():
            shutil.copy2(self.path, destination / self.entry)
        else:
            shutil.copytree(
                self.path,
                destination,
                dirs_exist_ok=True,
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"),
            )


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 512
    cpu_seconds: int = 600
    max_processes: int = 64
    max_file_mb: int = 64
    max_open_files: int = 256
    #: How much of the agent's stderr is kept: the first and last halves.
    log_bytes: int = 64 * 1024


@dataclasses.dataclass(frozen=True)
class Termination:
    """How an agent process ended, as far as the backend can tell."""

    returncode: int | None
    #: Killed by the memory limit (or failed to allocate and said so).
    out_of_memory: bool = False
    #: Killed by the CPU-time limit.
    out_of_cpu: bool = False
    #: Stopped by the file size limit (killed by SIGXFSZ, or a write failed and it said so).
    file_too_large: bool = False
    #: A remote seat whose client stayed away past its grace period: it cannot come back.
    disconnected: bool = False
    #: Said instead of the generic description, where the backend knows better.
    detail: str = ""

    def describe(self) -> str:
        if self.detail:
            return self.detail
        if self.disconnected:
            return "it disconnected and did not come back in time"
        if self.out_of_memory:
            return "it ran out of memory"
        if self.out_of_cpu:
            return "it used up its CPU-time limit"
        if self.returncode is None:
            return "it closed its output but is still running"
        cause = " after exceeding the file size limit" if self.file_too_large else ""
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = str(-self.returncode)
            return f"it was killed by signal {name}{cause}"
        return f"it exited with status {self.returncode}{cause}"


class SandboxedAgent(Protocol):
    """A running agent. A backend whose agents talk over a network also sets
    ``latency_allowance`` (seconds added to every deadline and taken off every measured
    time, for the round trip); the referee reads it with a default of 0."""

    #: File descriptor the referee writes requests to (non-blocking).
    request_fd: int
    #: File descriptor the referee reads replies from (non-blocking).
    reply_fd: int
    #: Readable once the agent's own process has ended, even if something it started
    #: still holds ``reply_fd`` open; None where the backend needs no such signal (a
    #: container's streams close when its first process ends).
    exit_fd: int | None

    def termination(self, wait: float = 0.0) -> Termination | None:
        """How the agent ended, waiting up to ``wait`` seconds; None if still running."""

    def log(self) -> str:
        """The agent's stderr so far, capped to ``SandboxLimits.log_bytes``."""

    def close(self) -> None:
        """Kill everything the agent started and remove its files."""


class SandboxBackend(Protocol):
    name: str

    def start(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> SandboxedAgent:
        """Start the agent; raises SandboxError if the sandbox (not the agent) failed."""


class CappedLog:
    """Keeps the first and last ``limit / 2`` bytes of a stream and counts the rest.

    Fed from a thread that drains the agent's stderr so a chatty agent never blocks
    on a full pipe (which would look like a timeout that is not its fault).
    """

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()

    def write(self, chunk: bytes) -> None:
        with self.lock:
            room = self.head_limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if not chunk:
                return
            self.tail += chunk
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self) -> str:
        with self.lock:
            middle = f"\n[... {self.dropped} bytes of log dropped ...]\n" if self.dropped else ""
            return (bytes(self.head) + middle.encode() + bytes(self.tail)).decode(
                "utf-8", errors="replace"
            )


def drain_log(fd: int, log: CappedLog, stop: threading.Event) -> None:
    """Read an agent's log stream into ``log`` until it closes or ``stop`` is set.

    Run in a thread that reads all the time, so a chatty agent never blocks on a full
    pipe or socket buffer (which would look like a timeout that is not its fault).
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not stop.is_set():
        if not poller.poll(100):
            continue
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return
        if not chunk:
            return
        log.write(chunk)


FILE_SIZE_MARKERS = ("File too large", "EFBIG")
MEMORY_ERROR_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "JavaScript heap out of memory",
    "out of memory",
)

#: The only programs an agent finds by name, in either sandbox.
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


def agent_environment(
    source: AgentSource, *, sandbox: str, token: str, home: str, pythonpath: str
) -> dict[str, str]:
    """An agent's whole environment (nothing of the referee's leaks into it): ``home`` is
    its writable folder, ``pythonpath`` puts the SDK first, then what the sandbox adds."""
    return {
        "PATH": SAFE_PATH,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # Numerical libraries would otherwise start a thread per core each.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "ARENA_SANDBOX": sandbox,
        "ARENA_SANDBOX_TOKEN": token,
        **dict(source.environment),
    }


def termination_from(returncode: int | None, log: str, *, oom_killed: bool = False) -> Termination:
    """How an agent that has ended ended, from its exit status and its last words."""
    return Termination(
        returncode,
        out_of_memory=oom_killed or any(marker in log for marker in MEMORY_ERROR_MARKERS),
        out_of_cpu=returncode == -signal.SIGXCPU,
        file_too_large=returncode == -signal.SIGXFSZ
        or any(marker in log for marker in FILE_SIZE_MARKERS),
    )
