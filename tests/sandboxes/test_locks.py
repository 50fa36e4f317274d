"""Machine-wide locks (``flock``): shared ones together, an exclusive one alone, a bounded
wait, and the lock gone with its holder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from sandboxes.locks import file_lock

ROOT = Path(__file__).resolve().parents[2]


def test_shared_holders_share_and_an_exclusive_one_waits_for_them(tmp_path):
    path = tmp_path / "locks" / "revision-1"

    with file_lock(path, shared=True) as first, file_lock(path, shared=True, timeout=0) as second:
        assert first and second
        started = time.monotonic()
        with file_lock(path, timeout=0.2) as exclusive:
            assert not exclusive
        # It waited its timeout, and returned: the holders keep their locks until this
        # block ends, so it cannot have waited for them (no upper bound: a loaded machine
        # may take long to wake it).
        assert time.monotonic() - started >= 0.2
    with file_lock(path, timeout=0) as exclusive:
        assert exclusive
        with file_lock(path, shared=True, timeout=0) as shared:
            assert not shared


def test_a_lock_goes_with_the_process_that_held_it(tmp_path):
    path = tmp_path / "revision-2"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from sandboxes.locks import file_lock\n"
            f"with file_lock(Path({str(path)!r})):\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with file_lock(path, timeout=0) as had:
            assert not had
    finally:
        holder.kill()
        holder.wait()
    with file_lock(path, timeout=1) as had:
        assert had
