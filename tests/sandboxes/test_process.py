from __future__ import annotations

import os
import subprocess
import threading

import pytest

from sandboxes import process as process_sandbox
from sandboxes.base import SandboxLimits
from sandboxes.process import NO_PROCESSES, UID_LOCKS, UserPool, _processes_of_user
from tests.support.sandboxes import player


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
    # The referee dies holding the user id: the kernel drops its lock, nobody marks it.
    os.close(lock)

    # The same user id (a pool of one, on the host's shared locks) is taken again.
    taken, lock = UserPool(base=uid, count=1).acquire()
    try:
        assert taken == uid
        assert left_behind.wait(timeout=10) == -9
        assert (UID_LOCKS / f"{uid}.lock").read_bytes() == b""
    finally:
        UserPool.release(lock)


@pytest.mark.usefixtures("needs_root")
def test_it_marks_a_user_id_free_of_processes_only_when_its_agent_is_closed(backend, monkeypatch):
    running = backend.start(
        player("connect_four/random_player.py"), limits=SandboxLimits(), label="marked"
    )
    lock_file = UID_LOCKS / f"{running.uid}.lock"
    assert lock_file.read_bytes() == b""  # in use: a referee dying now leaves it unmarked

    running.close()

    assert lock_file.read_bytes() == NO_PROCESSES
    kills: list[int] = []
    monkeypatch.setattr(process_sandbox, "kill_user_processes", kills.append)
    taken, lock = UserPool(base=running.uid, count=1).acquire()
    UserPool.release(lock)
    assert (taken, kills) == (running.uid, [])


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
