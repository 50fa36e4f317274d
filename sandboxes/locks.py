"""Locks that every process on the machine respects (``flock``).

For work that the workers of one machine share and must not do twice at once: building
the base image in its cache folder, publishing from the publisher's clone, a revision's
build on this host (``core.jobs.local_builds``). A lock goes with the process: a worker that
dies releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock (made with the folder if need be) until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False, timeout: float | None = None) -> Iterator[bool]:
    """Hold the lock of the file ``path`` (made, with its folder, if need be) while the
    block runs, shared by readers or exclusive; yields whether it was had. ``timeout``
    None waits as long as it takes; otherwise at most that many seconds (0: one try).

    Each call opens the file anew, so two threads of one process exclude each other too.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        if timeout is None:
            fcntl.flock(descriptor, mode)
        elif not _flock_within(descriptor, mode, timeout):
            yield False
            return
        yield True
    finally:
        os.close(descriptor)  # releases the lock


def _flock_within(descriptor: int, mode: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    pause = 0.02
    while True:
        try:
            fcntl.flock(descriptor, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.5)
