from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.channel import Channel
from sandboxes import process_agent, process_users
from sandboxes.base import AgentSource, SandboxError, SandboxLimits
from sandboxes.process import ProcessSandbox
from sandboxes.process_agent import ProcessAgent
from sandboxes.process_users import UserPool, processes_of_user
from sandboxes.warm_pool import Reaper, wait_until_reading
from tests.support.processes import ended
from tests.support.sandboxes import agent, hostile, leftover_processes, sandbox_processes


def test_it_finds_each_process_of_a_user_and_counts_its_threads():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        processes = processes_of_user(os.getuid())
        threads = processes_of_user(os.getuid(), count_threads=True)
    finally:
        stop.set()
        worker.join()

    assert processes.count(os.getpid()) == 1
    assert threads.count(os.getpid()) >= 2
    assert processes_of_user(process_users.UID_BASE + process_users.UID_COUNT + 7) == []


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
        assert ended(left_behind) == -9
    finally:
        UserPool.release(lock)


def _zombies_of(uid: int) -> list[int]:
    zombies = []
    for entry in os.scandir("/proc"):
        try:
            status = Path(entry.path, "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if f"\nUid:\t{uid}\t" in status and "\nState:\tZ" in status:
            zombies.append(int(entry.name))
    return zombies


@pytest.mark.usefixtures("needs_root")
def test_it_kills_a_users_processes_and_scans_proc_only_when_something_was_there(monkeypatch):
    scans: list[int] = []
    scan = process_users.processes_of_user

    def counted_scan(uid: int) -> Any:
        scans.append(uid)
        return scan(uid)

    uid, lock = UserPool().acquire()
    try:
        # Nothing of the user, zombies included: another test's agent under this id may
        # have been let go while its zombie waits for this machine's init to reap it.
        deadline = time.monotonic() + 120
        while _zombies_of(uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        monkeypatch.setattr(process_users, "processes_of_user", counted_scan)
        process_users.kill_user_processes(uid)
        assert scans == []  # nothing of the user: the kernel's count answered

        sleeper = _sleeper(uid)
        process_users.kill_user_processes(uid)
        assert ended(sleeper) == -9
        assert scans  # it was there (a zombie until reaped): /proc was read
    finally:
        UserPool.release(lock)


def _counted_kills(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    kills: list[int] = []
    kill = process_users.kill_user_processes

    def counted_kill(uid: int) -> None:
        kills.append(uid)
        kill(uid)

    monkeypatch.setattr(module, "kill_user_processes", counted_kill)
    return kills


@pytest.mark.usefixtures("needs_root")
def test_a_user_id_let_go_with_nothing_left_is_taken_again_without_a_kill(monkeypatch):
    kills = _counted_kills(monkeypatch, process_users)
    uid, lock = UserPool().acquire()
    UserPool.release(lock, nothing_left=True)
    kills.clear()

    taken, lock = UserPool(base=uid, count=1).acquire()
    assert (taken, kills) == (uid, [])
    # Let go without saying so (as a referee that dies does): the next holder kills.
    UserPool.release(lock)
    taken, lock = UserPool(base=uid, count=1).acquire()
    UserPool.release(lock, nothing_left=True)
    assert kills == [uid]


@pytest.mark.usefixtures("needs_root", "confined")
def test_a_confined_agents_sweep_kills_nothing_by_user_id_once_its_namespace_ended(
    sandbox_root, monkeypatch
):
    kills = _counted_kills(monkeypatch, process_agent)
    sandbox = ProcessSandbox(sandbox_root, confine=True)
    try:
        running = sandbox.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1")
        assert wait_until_reading(running.agent_pid, timeout=60)  # it runs: its init is known
        running.close()
        assert sandbox.flush(60)
    finally:
        sandbox.close()

    assert kills == []
    assert running.uid is not None
    assert leftover_processes({running.uid}) == []
    assert not running.workdir.exists()
    # Nor does the next agent's start under that user id.
    taking = _counted_kills(monkeypatch, process_users)
    _, lock = UserPool(base=running.uid, count=1).acquire()
    UserPool.release(lock, nothing_left=True)
    assert taking == []


ESCAPES_WITHOUT_ITS_LOG = """
import os, sys, time
from arena_sdk import agent

if os.fork() == 0:
    # A session of its own (out of the agent's process group) and none of its streams.
    os.setsid()
    os.closerange(0, 1024)
    time.sleep(3600)
    os._exit(0)
print("the agent's last words", file=sys.stderr, flush=True)


@agent
def first(turn):
    return turn.legal_actions[0]
"""


def agent_processes(uid: int) -> list[tuple[int, int, str]]:
    """The processes of an agent's user id but bubblewrap's own (which run under it in a
    user namespace)."""
    return [found for found in sandbox_processes({uid}) if found[2] != "bwrap"]


class HeldReaper(Reaper):
    """Keeps the jobs it is given until ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Callable[[], None]] = []

    def submit(self, job: Callable[[], None]) -> None:
        self.held.append(job)

    def release(self) -> None:
        for job in self.held:
            super().submit(job)
        self.held.clear()


@pytest.fixture
def log_end_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    """close() leaves the sweep to the reaper only once the agent's log has ended, which it
    waits 50 ms for: on a loaded machine the log's thread may take longer, and close()
    then sweeps itself. The tests of the background sweep wait for the log as long as it
    takes."""
    monkeypatch.setattr(process_agent, "LOG_END_WAIT", 60.0)


@pytest.mark.usefixtures("needs_root", "log_end_waited")
def test_an_escaped_process_keeps_its_user_id_taken_until_the_background_sweep_kills_it(
    sandbox_root,
):
    # Unconfined (no PID namespace): the agent's group is killed and its log complete when
    # close() returns; what escaped the group without its streams is killed by the sweep,
    # which close() leaves to the reaper. Until then no other agent can get the user id it
    # runs under.
    folder = sandbox_root / "escapes"
    folder.mkdir()
    (folder / "main.py").write_text(ESCAPES_WITHOUT_ITS_LOG)
    sandbox = ProcessSandbox(sandbox_root, confine=False)
    sandbox.reaper = reaper = HeldReaper()
    running = sandbox.start(AgentSource.from_path(folder), limits=SandboxLimits(), label="p1")
    assert running.uid is not None
    deadline = time.monotonic() + 60
    while len(sandbox_processes({running.uid})) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(sandbox_processes({running.uid})) == 2  # the agent and what escaped

    try:
        running.close()

        assert "the agent's last words" in running.log()
        assert running.process.poll() is not None
        assert len(reaper.held) == 1
        assert len(sandbox_processes({running.uid})) == 1  # the escaped one, not swept yet
        with pytest.raises(SandboxError, match="in use"):
            UserPool(base=running.uid, count=1).acquire()
    finally:
        reaper.release()
        assert reaper.flush(60)
        sandbox.close()

    assert leftover_processes({running.uid}) == []
    assert not running.workdir.exists()
    _, lock = UserPool(base=running.uid, count=1).acquire()
    UserPool.release(lock)
    shutil.rmtree(folder)


@pytest.mark.usefixtures("needs_root", "confined", "log_end_waited")
def test_a_confined_agents_escaped_process_dies_with_its_pid_namespace(sandbox_root):
    # Confined, leaving the group does not leave the PID namespace: the kernel kills all of
    # it when the agent's first process dies. The user id stays taken until the sweep.
    folder = sandbox_root / "escapes"
    folder.mkdir()
    (folder / "main.py").write_text(ESCAPES_WITHOUT_ITS_LOG)
    sandbox = ProcessSandbox(sandbox_root, confine=True)
    sandbox.reaper = reaper = HeldReaper()
    running = sandbox.start(AgentSource.from_path(folder), limits=SandboxLimits(), label="p1")
    assert running.uid is not None
    deadline = time.monotonic() + 60
    while len(agent_processes(running.uid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(agent_processes(running.uid)) == 2  # the agent and what escaped

    try:
        running.close()

        assert "the agent's last words" in running.log()
        assert len(reaper.held) == 1
        deadline = time.monotonic() + 60
        while sandbox_processes({running.uid}) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sandbox_processes({running.uid}) == []  # with no sweep yet
        with pytest.raises(SandboxError, match="in use"):
            UserPool(base=running.uid, count=1).acquire()
    finally:
        reaper.release()
        assert reaper.flush(60)
        sandbox.close()
    assert not running.workdir.exists()
    shutil.rmtree(folder)


def _daemon_left_behind(sandbox: ProcessSandbox) -> ProcessAgent:
    """An agent that has exited after starting a daemon in a session of its own, which
    holds its stdout and busy-loops."""
    running = sandbox.start(hostile("daemon", at=0), limits=SandboxLimits(), label="p1")
    assert isinstance(running, ProcessAgent) and running.uid is not None
    channel = Channel(running, max_message_bytes=1 << 20)
    channel.send({"type": "hello"}, time.monotonic() + 30)
    deadline = time.monotonic() + 60
    while running.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if not sandbox_processes({running.uid}):  # the daemon should have outlived the agent
        running.close()  # whatever it left: a failed test leaves no busy loop behind
        pytest.fail("the agent's daemon did not outlive it")
    return running


@pytest.mark.usefixtures("needs_root")
def test_a_process_that_escaped_with_the_agents_log_is_killed_before_close_returns(
    sandbox_root,
):
    # Unconfined, its log cannot end while the escaped process holds it: close() sweeps at
    # once.
    sandbox = ProcessSandbox(sandbox_root, confine=False)
    sandbox.reaper = reaper = HeldReaper()
    running = _daemon_left_behind(sandbox)
    assert running.uid is not None

    running.close()

    assert reaper.held == []
    assert sandbox_processes({running.uid}) == []
    assert not running.workdir.exists()
    sandbox.close()


@pytest.mark.usefixtures("needs_root", "confined", "log_end_waited")
def test_a_confined_agents_daemon_is_killed_with_its_pid_namespace_by_close(sandbox_root):
    # The daemon keeps the sandbox's init alive, which stays in the agent's group: killing
    # the group kills the init, and the kernel the rest of the namespace, with no sweep.
    sandbox = ProcessSandbox(sandbox_root, confine=True)
    sandbox.reaper = reaper = HeldReaper()
    running = _daemon_left_behind(sandbox)
    assert running.uid is not None

    try:
        running.close()

        deadline = time.monotonic() + 60
        while sandbox_processes({running.uid}) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sandbox_processes({running.uid}) == []
        assert len(reaper.held) == 1  # the sweep has not run
    finally:
        reaper.release()
        assert reaper.flush(60)
        sandbox.close()
    assert not running.workdir.exists()


class ReaperHeldUntilFlushed(HeldReaper):
    """Runs its jobs only when asked to wait for them."""

    def flush(self, timeout: float | None = None) -> bool:
        self.release()
        return super().flush(timeout)


@pytest.mark.usefixtures("needs_root", "log_end_waited")
def test_a_start_waits_for_the_sweep_that_holds_the_last_free_user_id(sandbox_root):
    # One user id for this sandbox: the second agent gets it once the first one's sweep,
    # still pending, has run.
    base, lock = UserPool().acquire()  # one that nothing else on the host holds now
    UserPool.release(lock)
    sandbox = ProcessSandbox(sandbox_root, uid_base=base, uid_count=1)
    sandbox.reaper = reaper = ReaperHeldUntilFlushed()
    try:
        first = sandbox.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1")
        first.close()
        assert len(reaper.held) == 1 and first.workdir.exists()

        second = sandbox.start(agent("random_agent.py"), limits=SandboxLimits(), label="p2")

        assert second.uid == first.uid == base
        assert not first.workdir.exists()
        second.close()
    finally:
        reaper.flush(60)
        sandbox.close()
