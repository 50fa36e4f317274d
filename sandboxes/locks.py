"""A lock on a folder that every process on the machine respects (``flock``).

For work that the workers of one machine share and must not do twice at once: building
the base image in its cache folder, publishing from the publisher's clone. The lock goes
with the process: a worker that dies releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock (made with the folder if need be) until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
