"""Moving a process to other CPUs: what the referee does to an agent it sees
(``sandboxes.cpus.pin_process``) and a fork server to its child when the referee cannot
(``arena_sdk.fork_server``). Only the standard library, as the rest of the SDK."""

from __future__ import annotations

import contextlib
import os


def pin_threads(pid: int, cpus: set[int]) -> bool:
    """Run every thread of process ``pid`` on ``cpus`` (what it forks later inherits
    that); False where it could not be done (it ended, or it may not be moved from here)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    moved = False
    for thread in threads:
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(int(thread), cpus)
            moved = True
    return moved
