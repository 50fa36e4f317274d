"""Work the docker sandbox does off a duel's critical path: warm containers and removals.

Starting a container costs the engine about 0.2 s and the agent's Python start-up
another tenth; removing one about 0.05 s more. A duel should wait for none of it:

- ``WarmPool`` keeps containers started ahead, per key (an image, the agent, its limits
  and environment), each already connected to the referee's sockets and waiting for its
  handshake, so no clock of the agent runs yet. ``take`` hands one out at most once;
  ``want`` starts one in the background. The sandbox calls it when an agent's duel is
  over, not when it begins: on 2 cores, starting containers during a duel slows the duel
  by about what the start costs (measured), while the next duel of the same agent still
  finds its container ready.
  The pool is bounded (``size`` containers, idle or starting, for all keys together),
  a container idle for ``idle_seconds`` is discarded, and ``close`` discards the rest.
- ``Reaper`` runs discards in a background thread, in order, so a duel ends as soon as
  its agents are cut off; ``flush`` waits for them.

Nothing here knows about Docker: the sandbox passes the functions that start and
discard an agent. Threads are daemons, so a stuck engine never blocks the interpreter's
exit; the sandbox closes the pool and flushes the reaper at exit (``atexit``), and the
orphan sweep removes what a killed worker left.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

Agent = TypeVar("Agent")


class Reaper:
    """Runs jobs (discarding a container, removing a folder) one after another in a
    background thread."""

    def __init__(self, name: str = "arena-docker-reaper") -> None:
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
            except Exception:  # a failed removal is left to the orphan sweep
                logger.exception("arena docker sandbox: a background clean-up failed")
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


class WarmPool(Generic[Agent]):
    """Agents started ahead of need, per key; each is handed out at most once."""

    def __init__(
        self,
        *,
        size: int,
        idle_seconds: float,
        start: Callable[[Hashable], Agent],
        discard: Callable[[Agent], None],
        starters: int = 2,
    ) -> None:
        self.size = size
        self.starters = starters
        self.idle_seconds = idle_seconds
        self._start = start
        self._discard = discard
        self._lock = threading.Lock()
        #: Per key, the ready agents with the monotonic time each became ready, oldest first.
        self._ready: dict[Hashable, collections.deque[tuple[float, Agent]]] = {}
        #: Keys waiting to be started, in order; ``_starting`` counts them with the one
        #: being started, so the bound holds before a container exists.
        self._wanted: collections.deque[Hashable] = collections.deque()
        self._starting = 0
        self._closed = False
        self._wake = threading.Condition(self._lock)
        self._threads: list[threading.Thread] = []
        #: Counters for benchmarks and tests: handed out, missed, started, expired.
        self.stats = collections.Counter[str]()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(agents) for agents in self._ready.values()) + self._starting

    def want(self, key: Hashable) -> None:
        """Start one more agent for ``key`` in the background, if the pool has room."""
        with self._lock:
            if not self._closed:
                self._want_locked(key)

    def take(self, key: Hashable) -> Agent | None:
        """A ready agent for ``key`` (removed from the pool), or None."""
        expired: list[Agent] = []
        found: Agent | None = None
        with self._lock:
            if self._closed:
                return None
            expired = self._expire_locked(time.monotonic())
            ready = self._ready.get(key)
            if ready:
                _, found = ready.popleft()
                if not ready:
                    del self._ready[key]
            self.stats["taken" if found is not None else "missed"] += 1
        for agent in expired:
            self._discard(agent)
        return found

    def close(self) -> None:
        """Discard every ready agent and start no more; an agent being started is
        discarded as soon as it is ready. Idempotent."""
        with self._lock:
            self._closed = True
            self._starting -= len(self._wanted)
            self._wanted.clear()
            ready = [agent for agents in self._ready.values() for _, agent in agents]
            self._ready.clear()
            self._wake.notify_all()
        for agent in ready:
            self._discard(agent)

    def wait_until_ready(self, timeout: float) -> bool:
        """Wait until nothing is being started (for tests and benchmarks)."""
        with self._lock:
            return self._wake.wait_for(lambda: self._starting == 0, timeout)

    # -- the background thread ------------------------------------------------------

    def _want_locked(self, key: Hashable) -> None:
        held = sum(len(agents) for agents in self._ready.values())
        if self.size <= 0 or held + self._starting >= self.size:
            return
        self._starting += 1
        self._wanted.append(key)
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        if len(self._threads) < min(self.starters, self._starting):
            thread = threading.Thread(target=self._run, name="arena-docker-pool", daemon=True)
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
                if self._closed and not self._wanted:
                    return
                key = self._wanted.popleft() if self._wanted else None
            for stale in expired:
                self._discard(stale)
            if key is None:
                continue
            warm: Agent | None
            try:
                warm = self._start(key)
            except Exception as error:  # the next start() for the key tries again, in the open
                logger.info("arena docker sandbox: a warm start failed: %s", error)
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
                self._starting -= 1
                self._wake.notify_all()
