"""The seat bus in one process (``MemorySeatBus``): the embedded default's gateway and
referee share it (the contract: ``sandboxes.seat_bus``)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import threading
import time
from collections.abc import Sequence

from sandboxes.seat_bus import CONNECTION_TTL, EVENTS_KEPT, GATEWAY_TTL, RESIGN_LINE, SeatDuel


def _seq_after(seq: str, after: str) -> bool:
    return int(seq) > int(after.partition("-")[0])


@dataclasses.dataclass
class _MemorySeat:
    events: collections.deque[tuple[str, bytes]] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=EVENTS_KEPT)
    )
    pending: set[str] = dataclasses.field(default_factory=set)
    replies: collections.deque[bytes] = dataclasses.field(default_factory=collections.deque)
    duel: SeatDuel | None = None
    #: connection → when it expires (``time.time()``).
    connections: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Gateway tasks waiting for an event: (their loop, their event).
    waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = dataclasses.field(
        default_factory=set
    )


class MemorySeatBus:
    """The bus inside one process: the embedded default's gateway and referee."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replied = threading.Condition(self._lock)
        self._seats: dict[str, _MemorySeat] = collections.defaultdict(_MemorySeat)
        self._counter = 0
        self._gateways: dict[str, float] = {}

    # -- the referee's side ---------------------------------------------------------------

    def _append(self, state: _MemorySeat, line: bytes) -> str:
        self._counter += 1
        seq = str(self._counter)
        state.events.append((seq, line))
        for loop, event in list(state.waiters):
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(event.set)
        return seq

    def seat_open(self, seat: str, *, duel: int, announcement: bytes, kind: str = "duel") -> str:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            state.replies.clear()
            seq = self._append(state, announcement)
            state.duel = SeatDuel.of(kind, duel, seq)
            return seq

    def publish(self, seat: str, line: bytes, *, awaits: str | None) -> str:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            if awaits is not None:
                state.pending.add(awaits)
            return self._append(state, line)

    def replies(self, seat: str, timeout: float) -> list[bytes]:
        deadline = time.monotonic() + timeout
        with self._replied:
            state = self._seats[seat]
            while not state.replies:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._replied.wait(remaining)
            taken = list(state.replies)
            state.replies.clear()
            return taken

    def seat_close(self, seat: str) -> None:
        with self._lock:
            state = self._seats[seat]
            state.pending.clear()
            state.duel = None

    def present(self, seats: Sequence[str]) -> set[str]:
        now = time.time()
        with self._lock:
            return {
                seat
                for seat in seats
                if seat in self._seats
                and any(expiry > now for expiry in self._seats[seat].connections.values())
            }

    def is_present(self, seat: str) -> bool:
        return bool(self.present([seat]))

    def gateway_alive(self) -> bool:
        now = time.time()
        with self._lock:
            return any(expiry > now for expiry in self._gateways.values())

    # -- the gateway's side ---------------------------------------------------------------

    async def start_point(self, seat: str) -> str:
        with self._lock:
            state = self._seats[seat]
            if state.duel is not None:
                return str(int(state.duel.first_seq) - 1)
            return state.events[-1][0] if state.events else "0"

    async def events_after(self, seat: str, after: str, timeout: float) -> list[tuple[str, bytes]]:
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        waiter = (loop, event)
        deadline = loop.time() + timeout
        with self._lock:
            state = self._seats[seat]
            state.waiters.add(waiter)
        try:
            while True:
                with self._lock:
                    found = [item for item in state.events if _seq_after(item[0], after)]
                    event.clear()
                if found:
                    return found
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                # Not ``asyncio.wait_for``: on Python 3.11 it swallows a cancellation that
                # comes as the event is set, and a closed stream would go on.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await event.wait()
        finally:
            with self._lock:
                state.waiters.discard(waiter)

    async def current_duel(self, seat: str) -> SeatDuel | None:
        with self._lock:
            return self._seats[seat].duel

    async def last_seq(self, seat: str) -> str | None:
        with self._lock:
            events = self._seats[seat].events
            return events[-1][0] if events else None

    async def reply(self, seat: str, key: str, line: bytes) -> bool:
        with self._replied:
            state = self._seats[seat]
            if key not in state.pending:
                return False
            state.pending.discard(key)
            state.replies.append(line)
            self._replied.notify_all()
            return True

    async def pending(self, seat: str) -> list[str]:
        with self._lock:
            return sorted(self._seats[seat].pending)

    async def resign(self, seat: str) -> bool:
        with self._replied:
            state = self._seats[seat]
            if state.duel is None:
                return False
            state.pending.clear()
            state.replies.append(RESIGN_LINE)
            self._replied.notify_all()
            return True

    async def connection_open(self, seat: str, connection: str) -> None:
        with self._lock:
            self._seats[seat].connections[connection] = time.time() + CONNECTION_TTL

    async def connection_close(self, seat: str, connection: str) -> None:
        with self._lock:
            self._seats[seat].connections.pop(connection, None)

    async def gateway_heartbeat(self, gateway: str) -> None:
        with self._lock:
            self._gateways[gateway] = time.time() + GATEWAY_TTL

    async def gateway_stop(self, gateway: str) -> None:
        with self._lock:
            self._gateways.pop(gateway, None)
