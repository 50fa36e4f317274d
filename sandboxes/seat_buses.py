"""This process's seat bus (``seat_bus_for``): one per URL, in Redis or in memory."""

from __future__ import annotations

import threading

from sandboxes.memory_seat_bus import MemorySeatBus
from sandboxes.redis_seat_bus import RedisSeatBus
from sandboxes.seat_bus import SeatBus


def seat_bus_for(url: str | None) -> SeatBus:
    """This process's bus: in Redis for a ``redis://`` URL, otherwise in memory. One per
    URL, so that a process keeps one pool of connections and one listener per loop."""
    key = url or ""
    with _BUSES_LOCK:
        bus = _BUSES.get(key)
        if bus is None:
            bus = _BUSES[key] = RedisSeatBus(key) if key else MemorySeatBus()
        return bus


_BUSES: dict[str, SeatBus] = {}
_BUSES_LOCK = threading.Lock()
