"""Waiting for the processes and threads a test stopped, on a machine that may be loaded.

A stop is waited for up to ``EXIT_BOUND``, a bound only a hang reaches: CI's loaded
machine once took over ten seconds for the engine proxy to exit on SIGTERM.
"""

from __future__ import annotations

import subprocess
import threading

#: How long a stopped process or thread may take to end before the test calls it hung.
EXIT_BOUND = 120.0


def ended(process: subprocess.Popen[bytes], *, within: float = EXIT_BOUND) -> int:
    """``process``'s exit status, once it has ended; if it has not within ``within``
    seconds it is killed and the test fails."""
    try:
        return process.wait(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"{process.args!r} did not end within {within:.0f} s") from None


def joined(thread: threading.Thread, *, within: float = EXIT_BOUND) -> None:
    """Returns once ``thread`` has ended; fails the test if it has not within ``within``."""
    thread.join(timeout=within)
    assert not thread.is_alive(), f"the thread {thread.name} did not end within {within:.0f} s"
