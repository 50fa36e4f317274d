from __future__ import annotations

import os
import subprocess
import threading

import pytest

from sandboxes import process as process_sandbox
from sandboxes.process import UserPool, _processes_of_user


def test_it_finds_each_process_of_a_user_and_counts_its_threads():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        processes = _processes_of_user(os.getuid())
        threads = _processes_of_user(os.getuid(), count_threads=True)
    finally:
        stop.set()
        worker.join()

    assert processes.count(os.getpid()) == 1
    assert threads.count(os.getpid()) >= 2
    assert _processes_of_user(process_sandbox.UID_BASE + process_sandbox.UID_COUNT + 7) == []


def _sleeper(uid: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[])


@pytest.mark.usefixtures("needs_root")
def test_it_kills_what_a_referee_that_died_left_under_a_user_id():
    uid, lock = UserPool().acquire()
    left_behind = _sleeper(uid)
    # The referee dies holding the user id: the kernel drops its lock.
    os.close(lock)

    # The same user id (a pool of one, on the host's shared locks) is taken again.
    taken, lock = UserPool(base=uid, count=1).acquire()
    try:
        assert taken == uid
        assert left_behind.wait(timeout=10) == -9
    finally:
        UserPool.release(lock)


@pytest.mark.usefixtures("needs_root")
def test_it_kills_a_users_processes_and_scans_proc_only_when_something_was_there(monkeypatch):
    scans: list[int] = []
    scan = process_sandbox._processes_of_user
    monkeypatch.setattr(
        process_sandbox, "_processes_of_user", lambda uid: scans.append(uid) or scan(uid)
    )
    uid, lock = UserPool().acquire()
    try:
        process_sandbox.kill_user_processes(uid)
        assert scans == []  # nothing of the user: the kernel's count answered

        sleeper = _sleeper(uid)
        process_sandbox.kill_user_processes(uid)
        assert sleeper.wait(timeout=10) == -9
        assert scans  # it was there (a zombie until reaped): /proc was read
    finally:
        UserPool.release(lock)
