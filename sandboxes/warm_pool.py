"""Work a sandbox does off a duel's critical path: agents started ahead, and removals.

Starting an agent costs its interpreter's start-up and its imports (about 0.05 s for a
Python agent; a container costs the engine about 0.2 s more), and removing one a few
milliseconds to tens of them. A duel should wait for as little of it as it can:

- ``WarmPool`` keeps agents started ahead, per key (the agent's files, its limits, its
  environment; in the docker sandbox the image too), each waiting for the referee's
  handshake, so no clock of the agent runs yet. ``take`` hands one out at most once;
  ``want`` starts one in the background. The docker sandbox asks for one when an agent's
  duel is over (on 2 cores, starting containers during a duel slows the duel by about
  what the start costs, measured); the process sandbox when its duel begins (a Python
  start takes one core for a few tens of milliseconds, and a turn-based duel keeps about
  one busy), so that back-to-back duels of one agent find theirs ready.
  The pool is bounded (``size`` agents, idle or starting, for all keys together), an
  agent idle for ``idle_seconds`` is discarded, and ``close`` discards the rest.
- ``Reaper`` runs discards in a background thread, in order, so a duel ends as soon as
  its agents are cut off; ``flush`` waits for them, and ``shut_down`` for everything.
- ``waiting_for_input`` tells whether a process sleeps waiting for its input, which is
  when a started agent is ready.

Nothing here knows about a sandbox: each passes the functions that start and discard an
agent. Threads are daemons, so a stuck engine never blocks the interpreter's exit; the
sandboxes close their pools at exit (``atexit``), and the docker sandbox's orphan sweep
removes what a killed worker left.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from sandboxes.base import AgentSource, SandboxError, SandboxLimits

logger = logging.getLogger(__name__)

Agent = TypeVar("Agent")


@dataclasses.dataclass(frozen=True)
class WarmKey:
    """What makes two agents started ahead interchangeable before their handshake."""

    source: AgentSource
    limits: SandboxLimits
    #: The docker sandbox's image (None elsewhere).
    image: str | None
    #: The agent's files when they are copied or mounted (None when in the image): an
    #: edited file must never be served by an agent started before the edit.
    files: str | None
    #: Names the agent's folder or container only.
    label: str = dataclasses.field(compare=False, hash=False)

    @classmethod
    def of(
        cls,
        source: AgentSource,
        limits: SandboxLimits,
        label: str,
        *,
        image: str | None = None,
        files_copied: bool = True,
    ) -> WarmKey:
        """The key of an agent to start; SandboxError if its files cannot be read."""
        try:
            files = files_fingerprint(source.path) if files_copied else None
        except OSError as error:
            raise SandboxError(f"cannot read the agent's files: {error}") from error
        return cls(source=source, limits=limits, image=image, files=files, label=label)


def files_fingerprint(path: Path) -> str:
    """A digest of the names, sizes and modification times of an agent's files."""
    digest = hashlib.sha256()
    paths = [path] if path.is_file() else sorted(path.rglob("*"))
    for entry in paths:
        if "__pycache__" in entry.parts or entry.suffix == ".pyc" or ".git" in entry.parts:
            continue
        info = entry.lstat()
        digest.update(f"{entry}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_mode}\n".encode())
    return digest.hexdigest()


#: x86-64 system calls an agent waiting for input sleeps in; for ``read`` and ``recvfrom``
#: only on a pipe or a socket (the SDK reads a copy of its stdin), since reading its own
#: files is still loading.
_READING = {0, 45}  # read, recvfrom
_WAITING_ON_ANYTHING = {7, 23, 232, 270, 271, 281}  # poll, select, epoll_wait, pselect6...


def waiting_for_input(pid: int) -> bool | None:
    """Whether process ``pid`` sleeps waiting for input (reading a pipe or a socket, or
    polling); None where that cannot be told (``/proc/PID/syscall`` needs the rights to
    trace the process, and its numbers are x86-64's)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        number = int(fields[0]) if fields and fields[0].lstrip("-").isdigit() else -1
        if number in _WAITING_ON_ANYTHING:
            return True
        if number not in _READING:
            return False
        read = os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}")
    except (OSError, ValueError, IndexError):
        return None
    return read.startswith(("pipe:", "socket:"))


def wait_until_reading(pid: Callable[[], int | None], *, timeout: float) -> bool:
    """Wait until the process ``pid()`` names sleeps waiting for input; best effort:
    False at once where that cannot be told, or after ``timeout``."""
    deadline = time.monotonic() + timeout
    # Often at once (a forked agent loads in a millisecond or two): looked at often at
    # first, then every 10 ms (a fresh interpreter takes tens of them).
    pause = 0.0005
    while time.monotonic() < deadline:
        current = pid()
        if current is not None:
            waiting = waiting_for_input(current)
            if waiting is None:
                return False
            if waiting:
                return True
        time.sleep(pause)
        pause = min(2 * pause, 0.01)
    return False


class Reaper:
    """Runs jobs (discarding a container, removing a folder) one after another in a
    background thread."""

    def __init__(self, name: str = "arena-sandbox-reaper") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._pending = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        with self._idle:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far has run; False if ``timeout`` passed first."""
        if threading.current_thread() is self._thread:
            return False  # a job waiting for the jobs would wait for itself
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:
                # What it left is found by the sandbox's next sweep: the docker sandbox's
                # orphan sweep, or in the process sandbox the sweep of the user id (kept
                # taken meanwhile) when it is next taken.
                logger.exception("arena sandbox: a background clean-up failed")
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


class Closable(Protocol):
    def close(self) -> None: ...


def shut_down(
    pool: WarmPool[Agent] | None,
    reaper: Reaper,
    timeout: float,
    servers: Closable | None = None,
) -> None:
    """What a sandbox does when it closes: discard the agents started ahead, then its idle
    fork servers (``servers``, ``fork_servers.ForkServers``), then wait up to ``timeout``
    seconds for every removal."""
    if pool is not None:
        pool.close()
        # An agent being started when the pool closed is discarded once it is ready.
        pool.wait_until_ready(timeout)
    reaper.flush(timeout)
    if servers is not None:
        servers.close()
        # Their removals (a user id's sweep, a container) too.
        reaper.flush(timeout)


class WarmPool(Generic[Agent]):
    """Agents started ahead of need, per key; each is handed out at most once."""

    def __init__(
        self,
        *,
        size: int,
        idle_seconds: float,
        start: Callable[[Hashable], Agent],
        discard: Callable[[Agent], None],
        ended: Callable[[Agent], bool] | None = None,
        starters: int = 2,
    ) -> None:
        self.size = size
        self.starters = starters
        self.idle_seconds = idle_seconds
        self._start = start
        self._discard = discard
        #: Whether a ready agent has ended while it waited, as its sandbox can tell at once
        #: (killed by the host's OOM killer, its fork server gone): such an agent is
        #: discarded, never handed out, so that no duel charges it a crash it did not make.
        self._ended = ended
        self._lock = threading.Lock()
        #: Per key, the ready agents with the monotonic time each became ready, oldest first.
        self._ready: dict[Hashable, collections.deque[tuple[float, Agent]]] = {}
        #: Keys waiting to be started, in order; ``_in_flight`` counts them with the one
        #: being started, per key, so the bound holds before a container exists.
        self._wanted: collections.deque[Hashable] = collections.deque()
        self._in_flight = collections.Counter[Hashable]()
        #: The callers of ``take`` waiting for one of those, per key.
        self._takers = collections.Counter[Hashable]()
        #: Expired agents the background thread is discarding.
        self._discarding = 0
        self._closed = False
        self._wake = threading.Condition(self._lock)
        self._threads: list[threading.Thread] = []
        #: Counters for benchmarks and tests: handed out, missed, started, expired, ended.
        self.stats = collections.Counter[str]()

    @classmethod
    def of_size(
        cls,
        size: int,
        idle_seconds: float,
        *,
        start: Callable[[Hashable], Agent],
        discard: Callable[[Agent], None],
        ended: Callable[[Agent], bool] | None = None,
    ) -> WarmPool[Agent] | None:
        """A pool of ``size`` agents, or None for none (a size of 0)."""
        if size <= 0:
            return None
        return cls(size=size, idle_seconds=idle_seconds, start=start, discard=discard, ended=ended)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(agents) for agents in self._ready.values()) + self._starting()

    def want(self, key: Hashable) -> None:
        """Start one more agent for ``key`` in the background, if the pool has room."""
        with self._lock:
            if not self._closed:
                self._want_locked(key)

    def take(self, key: Hashable, *, wait: float = 0.0) -> Agent | None:
        """A ready agent for ``key`` (removed from the pool), or None. With ``wait``, when
        none is ready but one is being started for ``key`` that no other caller waits for,
        waits up to ``wait`` seconds for it: it is ready sooner than a new start would be,
        and a new start beside it would slow both."""
        # Ready agents too old to hand out, or ended while they waited: discarded here.
        gone: list[Agent]
        found: Agent | None = None
        with self._lock:
            if self._closed:
                return None
            gone = self._expire_locked(time.monotonic())
            found = self._pop_locked(key, gone)
            if found is None and wait > 0 and self._in_flight[key] > self._takers[key]:
                deadline = time.monotonic() + wait
                self._takers[key] += 1
                try:
                    while found is None and not self._closed:
                        found = self._pop_locked(key, gone)
                        remaining = deadline - time.monotonic()
                        # Given up when its start failed and fewer are left than takers.
                        if found is not None or remaining <= 0:
                            break
                        if self._in_flight[key] < self._takers[key]:
                            break
                        self._wake.wait(remaining)
                finally:
                    self._takers[key] -= 1
                    if not self._takers[key]:
                        del self._takers[key]
                if found is not None:
                    self.stats["waited"] += 1
            self.stats["taken" if found is not None else "missed"] += 1
        for agent in gone:
            self._discard(agent)
        return found

    def _pop_locked(self, key: Hashable, ended: list[Agent]) -> Agent | None:
        """The oldest ready agent of ``key`` still running; those found ended on the way go
        to ``ended``, for the caller to discard."""
        ready = self._ready.get(key)
        found: Agent | None = None
        while ready and found is None:
            _, found = ready.popleft()
            if self._ended is not None and self._ended(found):
                self.stats["ended"] += 1
                ended.append(found)
                found = None
        if ready is not None and not ready:
            del self._ready[key]
        return found

    def close(self) -> None:
        """Discard every ready agent and start no more; an agent being started is
        discarded as soon as it is ready. Idempotent."""
        with self._lock:
            self._closed = True
            self._in_flight.subtract(self._wanted)
            self._wanted.clear()
            ready = [agent for agents in self._ready.values() for _, agent in agents]
            self._ready.clear()
            self._wake.notify_all()
        for agent in ready:
            self._discard(agent)

    def wait_until_ready(self, timeout: float) -> bool:
        """Wait until nothing is being started or discarded (for tests, benchmarks and
        ``close``'s callers)."""
        with self._lock:
            return self._wake.wait_for(
                lambda: self._starting() == 0 and self._discarding == 0, timeout
            )

    def _starting(self) -> int:
        """Agents wanted or being started, for every key."""
        return self._in_flight.total()

    # -- the background thread ------------------------------------------------------

    def _want_locked(self, key: Hashable) -> None:
        held = sum(len(agents) for agents in self._ready.values())
        if self.size <= 0 or held + self._starting() >= self.size:
            return
        self._in_flight[key] += 1
        self._wanted.append(key)
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        if len(self._threads) < min(self.starters, self._starting()):
            thread = threading.Thread(target=self._run, name="arena-sandbox-pool", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._wake.notify_all()

    def _expire_locked(self, now: float) -> list[Agent]:
        expired = []
        for key in list(self._ready):
            ready = self._ready[key]
            while ready and now - ready[0][0] > self.idle_seconds:
                expired.append(ready.popleft()[1])
            if not ready:
                del self._ready[key]
        self.stats["expired"] += len(expired)
        return expired

    def _next_wake(self, now: float) -> float | None:
        oldest = [agents[0][0] for agents in self._ready.values() if agents]
        return None if not oldest else max(0.0, min(oldest) + self.idle_seconds - now) + 0.01

    def _run(self) -> None:
        # ``starters`` threads: the engine overlaps a few starts, but not many on 2 cores.
        while True:
            with self._lock:
                while not self._wanted and not self._closed:
                    expired = self._expire_locked(time.monotonic())
                    if expired:
                        break
                    self._wake.wait(self._next_wake(time.monotonic()))
                else:
                    expired = []
                self._discarding += len(expired)
                stop = self._closed and not self._wanted
                key = self._wanted.popleft() if self._wanted else None
            for stale in expired:
                try:
                    self._discard(stale)
                finally:
                    with self._lock:
                        self._discarding -= 1
                        self._wake.notify_all()
            if stop:
                return
            if key is None:
                continue
            warm: Agent | None
            try:
                warm = self._start(key)
            except Exception as error:  # the next start() for the key tries again, in the open
                logger.info("arena sandbox: a warm start failed: %s", error)
                warm = None
            with self._lock:
                if warm is not None and not self._closed:
                    self._ready.setdefault(key, collections.deque()).append(
                        (time.monotonic(), warm)
                    )
                    self.stats["started"] += 1
                    warm = None
            if warm is not None:
                # Closed meanwhile: discarded before it stops counting as being started,
                # so whoever waits for ``wait_until_ready`` then sees its removal queued.
                self._discard(warm)
            with self._lock:
                self._in_flight[key] -= 1
                if self._in_flight[key] <= 0:
                    del self._in_flight[key]
                self._wake.notify_all()
