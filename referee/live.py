"""A running duel's progress, for spectators: buffered on the referee's thread, sent in
batches from a thread of its own.

The referee tells ``LiveFeed.publish`` each public event as it happens (``Referee``'s
``progress``). Publishing only appends to a list under a lock, so a move costs the
referee a dictionary and an append, whatever the sink: a database insert, a Redis
publish. A thread hands what has gathered to the sink at most every ``interval``
seconds, one call per batch, so the sink's cost is per batch, not per move: a game
played at 10,000 moves a second costs its sink ``1 / interval`` calls a second.

The sink's failures are never the duel's: a failed batch is logged and the feed stops
(spectators are told the live view ended; the replay is kept as always). So is a feed
that falls behind by more than ``max_pending`` events.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

#: Gets each batch of events, oldest first.
Sink = Callable[[list[dict[str, Any]]], None]


class LiveFeed:
    def __init__(
        self,
        sink: Sink,
        *,
        interval: float = 0.2,
        max_pending: int = 100_000,
        name: str = "",
        thread_done: Callable[[], None] | None = None,
    ) -> None:
        """``thread_done`` is called on the feed's thread as it ends (to close what the
        sink opened there, such as a database connection)."""
        self.sink = sink
        self.thread_done = thread_done
        self.interval = interval
        self.max_pending = max_pending
        self.name = name
        self.failed = False
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"live-{name}", daemon=True)
        self._thread.start()

    def publish(self, event: dict[str, Any]) -> None:
        """Queue one event (the referee's thread): returns at once."""
        with self._lock:
            if self.failed:
                return
            if len(self._pending) >= self.max_pending:
                self.failed = True
                self._pending = []
                logger.warning("live feed %s fell behind: spectators stop here", self.name)
                return
            self._pending.append(event)

    def _take(self) -> list[dict[str, Any]]:
        with self._lock:
            taken, self._pending = self._pending, []
            return taken

    def _send(self, batch: list[dict[str, Any]]) -> None:
        if not batch or self.failed:
            return
        try:
            self.sink(batch)
        except Exception:
            logger.exception("live feed %s failed: spectators stop here", self.name)
            with self._lock:
                self.failed = True
                self._pending = []

    def _run(self) -> None:
        try:
            while not self._closed:
                self._wake.wait(self.interval)
                self._send(self._take())
        finally:
            if self.thread_done is not None:
                self.thread_done()

    def close(self) -> None:
        """Send what is left and stop (the duel is over)."""
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=30)
        self._send(self._take())

    def __enter__(self) -> LiveFeed:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
