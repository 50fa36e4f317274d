"""The sandbox interface: start an agent in isolation and hand its byte streams to the referee.

A backend (``process`` here, ``docker`` later) turns an ``AgentSource`` into a
``SandboxedAgent``: a running agent with a stream the referee writes requests to
and a stream it reads replies from. The agent's stderr is collected by the
backend as its log, capped in size. ``close()`` kills everything the agent
started and removes its files; it is always called, and calling it twice is fine.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import enum
import fcntl
import os
import select
import shutil
import signal
import termios
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
    #: How much of the agent's stderr is kept: the first and last halves. Also what is
    #: kept of its moves' logs, all moves together (``AgentLog``).
    log_bytes: int = 64 * 1024
    #: How much of what it writes during one move is kept for that move (the first bytes).
    move_log_bytes: int = 4 * 1024


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
    #: A remote seat whose player resigned (``SeatBus.resign``): it plays no more.
    resigned: bool = False
    #: Said instead of the generic description, where the backend knows better.
    detail: str = ""

    def describe(self) -> str:
        if self.detail:
            return self.detail
        if self.resigned:
            return "it resigned"
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

    def wait_for_exit(self, seconds: float) -> None:
        """Give the agent told ``bye`` up to ``seconds`` to end by itself, returning as soon
        as the sandbox can tell cheaply that it has: how it ended is not asked (that is
        ``termination``, which in a container waits for the engine to learn of the exit,
        tens of milliseconds later)."""

    def log(self) -> str:
        """The agent's stderr so far, capped to ``SandboxLimits.log_bytes``."""

    def mark_move(self, move: MoveKey | None) -> None:
        """Everything the agent has written on stderr until now that no earlier mark took
        belongs to ``move`` (None: to no move). Called by the referee once it has the
        agent's answer, before it asks it anything else; takes no time to speak of,
        whatever the agent writes."""

    def move_logs(self) -> dict[MoveKey, str]:
        """What it wrote during each marked move, capped (``AgentLog``); complete once
        ``close()`` has returned."""

    def pin_to(self, cpus: set[int]) -> bool:
        """Run the agent's processes on ``cpus`` from now on (``sandboxes.cpus``), where
        the backend can; returns whether it did."""

    def timeout_excuse(self) -> str | None:
        """Arena's failure that is keeping the agent from answering, asked when its move's
        clock runs out: the referee then ends the duel in error, unrated, instead of
        charging the agent a timeout (an LLM seat whose provider is failing). None when
        the time is the agent's own, as it always is for an agent that runs code."""

    def close(self) -> None:
        """Kill everything the agent started and remove its files. Its own processes are
        stopped and its logs complete when this returns; a sandbox may finish the rest
        (what escaped, the files) in the background, which its ``flush`` waits for."""


class SandboxBackend(Protocol):
    name: str

    @property
    def confined(self) -> bool:
        """Its agents see nothing of the machine but their own files and runtime (the
        process sandbox's bubblewrap, the docker sandbox's container; a remote or LLM seat
        runs nothing of ours)."""

    @property
    def unconfined_reason(self) -> str:
        """Why they do not ("" when they do), with what to do about it."""

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


#: Reads of 64 KiB at most that a caller makes of an agent's log to find its end
#: (``AgentLog.drain``) before it leaves the rest to the log's thread.
DRAIN_READS = 16
#: A move of a duel: (match index, step), as in the ``act`` request.
MoveKey = tuple[int, int]


class AgentLog:
    """An agent's stderr, read all the time by a thread (``run``): the whole of it, capped
    (``CappedLog``), and what it wrote during each move, cut at the referee's marks.

    A mark (``mark_move``) is a position in the stream, not a time: the bytes the thread
    has read plus those waiting in the pipe or socket (FIONREAD), taken under the lock the
    thread reads with. A write the agent made before its answer has reached the pipe before
    the answer reached the referee, so it lies before the mark however late the thread
    reads it: a move's log is exactly what the agent wrote between its previous answer and
    this one, and the mark costs the referee an ``ioctl``, never a read of a flood.

    Kept: the first ``move_log_bytes`` of each move, and ``log_bytes`` over all moves;
    what is cut is counted and said in the move's text.
    """

    def __init__(self, fd: int, limits: SandboxLimits) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.whole = CappedLog(limits.log_bytes)
        self.move_limit = limits.move_log_bytes
        self.budget = limits.log_bytes
        self.lock = threading.Lock()
        #: The buffer FIONREAD answers in (``mark_move``, under the lock).
        self._waiting = array.array("i", [0])
        #: Bytes read from the stream so far: the position of the next byte.
        self.position = 0
        #: Marks not reached by the reading yet: (position, move), in order.
        self.marks: collections.deque[tuple[int, MoveKey | None]] = collections.deque()
        #: What the current move wrote so far (its first ``move_limit`` bytes), and the rest's size.
        self.piece = bytearray()
        self.piece_cut = 0
        self.moves: dict[MoveKey, str] = {}
        #: Bytes kept in ``moves`` so far, for the duel's limit.
        self.kept = 0
        #: The stream's end was read: no process holds it any more, the log is whole.
        self.ended = False
        #: Read no more (``stop``).
        self.stopped = False

    # -- the reading thread -----------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Read the stream until it closes or ``stop`` is set.

        Run in a thread that reads all the time, so a chatty agent never blocks on a full
        pipe or socket buffer (which would look like a timeout that is not its fault).
        """
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not stop.is_set():
            if poller.poll(100) and not self.read_some():
                break
        self.finish()

    def read_some(self) -> bool:
        """Read what is waiting; False once the stream has ended."""
        with self.lock:
            if self.stopped:
                return False
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                self.ended = True
                return False
            if not chunk:
                self.ended = True
                return False
            self.whole.write(chunk)
            start = self.position
            self.position += len(chunk)
            taken = 0
            while self.marks and self.marks[0][0] <= self.position:
                at, move = self.marks.popleft()
                self._keep(chunk[taken : at - start])
                taken = at - start
                self._close_piece(move)
            self._keep(chunk[taken:])
            return True

    def _keep(self, data: bytes) -> None:
        room = max(0, self.move_limit - len(self.piece))
        self.piece += data[:room]
        self.piece_cut += max(0, len(data) - room)

    def _close_piece(self, move: MoveKey | None) -> None:
        piece, cut = bytes(self.piece), self.piece_cut
        self.piece.clear()
        self.piece_cut = 0
        if move is None or not (piece or cut):
            return
        room = max(0, self.budget - self.kept)
        if len(piece) > room:
            cut += len(piece) - room
            piece = piece[:room]
            note = (
                f"[... {cut} bytes of this move's log cut: its log limit for the duel is reached]"
            )
        else:
            note = f"[... {cut} more bytes of this move's log cut]" if cut else ""
        self.kept += len(piece)
        text = piece.decode("utf-8", "replace")
        if note:
            text += ("" if not text or text.endswith("\n") else "\n") + note
        self.moves[move] = self.moves.get(move, "") + text

    # -- the referee's side -----------------------------------------------------------

    def mark_move(self, move: MoveKey | None) -> None:
        with self.lock:
            # Bytes in the pipe or socket not read yet (FIONREAD): an instant answer,
            # whatever the amount.
            try:
                fcntl.ioctl(self.fd, termios.FIONREAD, self._waiting, True)
                at = self.position + self._waiting[0]
            except OSError:
                at = self.position
            if at > self.position or self.marks:
                self.marks.append((at, move))
            elif self.piece or self.piece_cut:
                # The usual move, in which the agent wrote nothing, has nothing to close.
                self._close_piece(move)

    def drain(self) -> bool:
        """Read what is waiting without waiting for more (from any thread, a few reads at
        the most: a live agent may write all the time); whether the stream has ended and
        the log is whole: the marks it never reached then take what there is."""
        for _ in range(DRAIN_READS):
            read_before = self.position
            if not self.read_some() or self.position == read_before:
                break
        if self.ended:
            self.finish()
        return self.ended

    def stop(self) -> None:
        """Read no more (its stream is about to be closed, and its number may be given to
        another file): a read under way ends first."""
        with self.lock:
            self.stopped = True

    def finish(self) -> None:
        """The stream is over: marks it never reached take what there is."""
        with self.lock:
            while self.marks:
                self._close_piece(self.marks.popleft()[1])

    def move_logs(self) -> dict[MoveKey, str]:
        with self.lock:
            return dict(self.moves)

    def text(self) -> str:
        return self.whole.text()


class LoggedAgent:
    """What every agent whose stderr this host reads shares (the process sandbox's, a
    forked one, a container's): its log (``AgentLog``), read by a thread of its own from
    the start, and the three calls of ``SandboxedAgent`` about it; its time is its own."""

    _log: AgentLog

    def _read_log(self, fd: int, limits: SandboxLimits) -> None:
        """Read ``fd`` as the agent's log from now on."""
        self._log = AgentLog(fd, limits)
        self._log_stop = threading.Event()
        self._log_reader = threading.Thread(
            target=self._log.run, args=(self._log_stop,), daemon=True
        )
        self._log_reader.start()

    def _log_ended(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the log's end (no process holds it any more:
        it is whole); whether it came.

        What is waiting is read here first: where the agent has exited, its end is there
        at once, and the reader thread, which sees it too, is not waited for (waking it
        and being woken by its end cost a duel's end a third of a millisecond an agent)."""
        if self._log.ended or self._log.drain():
            self._log_stop.set()
            return True
        self._log_reader.join(timeout=timeout)
        return not self._log_reader.is_alive()

    def _stop_reading(self) -> None:
        """Read the last of the log (a second at most), then stop reading it."""
        self._log_reader.join(timeout=1)
        self._log_stop.set()
        self._log.stop()
        self._log_reader.join(timeout=1)

    def log(self) -> str:
        return self._log.text()

    def mark_move(self, move: MoveKey | None) -> None:
        self._log.mark_move(move)

    def move_logs(self) -> dict[MoveKey, str]:
        return self._log.move_logs()

    def timeout_excuse(self) -> str | None:
        """An agent that runs code answers in its own time."""
        return None


FILE_SIZE_MARKERS = ("File too large", "EFBIG")
MEMORY_ERROR_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "JavaScript heap out of memory",
    "out of memory",
)

#: The size of an agent's private ``/tmp`` in either sandbox: a tmpfs, which counts as
#: memory, so it is bounded.
TMPFS_MB = 64
#: The size of its private ``/dev/shm`` (``multiprocessing``'s locks and queues need one).
SHM_MB = 64

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


def decode_exit_status(code: int | None) -> int | None:
    """An exit status reported by a process that waited for the agent (docker's init,
    bubblewrap's) as a return code: such a parent reports death by signal N as 128 + N."""
    if code is not None and 128 < code <= 128 + signal.NSIG:
        return -(code - 128)
    return code


def termination_from(returncode: int | None, log: str, *, oom_killed: bool = False) -> Termination:
    """How an agent that has ended ended, from its exit status and its last words."""
    return Termination(
        returncode,
        out_of_memory=oom_killed or any(marker in log for marker in MEMORY_ERROR_MARKERS),
        out_of_cpu=returncode == -signal.SIGXCPU,
        file_too_large=returncode == -signal.SIGXFSZ
        or any(marker in log for marker in FILE_SIZE_MARKERS),
    )
