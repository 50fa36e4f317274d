"""The process sandbox's warm pool: agents started ahead for the next duels of the same
agent (``ProcessSandbox(pool_size=...)``, ``sandboxes.warm_pool``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.duel import run_duel
from referee.results import FaultKind
from sandboxes.base import AgentSource, SandboxLimits
from sandboxes.fork_servers import ForkedAgent
from sandboxes.process import ProcessSandbox
from sandboxes.process_agent import ProcessAgent
from sandboxes.warm_pool import wait_until_reading, waiting_for_input
from tests.support.sandboxes import agent, needs_root, player, sandbox_processes

__all__ = ["needs_root"]


class RecordingPooledSandbox(ProcessSandbox):
    """A pooled process sandbox that remembers every agent it handed out or started."""

    def __init__(self, root: Path, **options: Any) -> None:
        super().__init__(root, pool_size=4, **options)
        self.handed_out: list[ProcessAgent | ForkedAgent] = []
        self.launched: list[ProcessAgent] = []

    def start(self, source, *, limits, label):
        running = super().start(source, limits=limits, label=label)
        self.handed_out.append(running)
        return running

    def _launch(self, source, **options):
        running = super()._launch(source, **options)
        self.launched.append(running)
        return running


@pytest.fixture
def pooled(sandbox_root: Path) -> Iterator[RecordingPooledSandbox]:
    """A pooled process sandbox; checks that closing it leaves no folder and no process."""
    sandbox = RecordingPooledSandbox(sandbox_root)
    yield sandbox
    sandbox.close()
    leftovers = [path.name for path in sandbox_root.iterdir() if not path.name.startswith("sdk-")]
    assert leftovers == []
    uids = {running.uid for running in sandbox.launched if running.uid is not None}
    assert sandbox_processes(uids) == []
    assert all(running.process.poll() is not None for running in sandbox.launched)


def ready(sandbox: ProcessSandbox) -> None:
    assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)


def start_warm(
    sandbox: ProcessSandbox, source: AgentSource, limits: SandboxLimits
) -> ProcessAgent | ForkedAgent:
    """The first start has one started ahead; the second takes it."""
    sandbox.start(source, limits=limits, label="p1-warm").close()
    ready(sandbox)
    warm = sandbox.start(source, limits=limits, label="p1-warm")
    assert warm.warm
    return warm


def confinement(running: ProcessAgent | ForkedAgent) -> dict[str, object]:
    """What confines an agent's process, as the kernel sees it."""
    pid = running.agent_pid()
    limits = Path(f"/proc/{pid}/limits").read_text()
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    workdir = running.workdir.stat()
    return {
        "limits": limits,
        "uid_is_own": fields["Uid"].split()[0] == str(running.uid),
        "capabilities": fields["CapEff"].strip(),
        "no_new_privileges": fields.get("NoNewPrivs", "").strip(),
        **{
            namespace: os.readlink(f"/proc/{pid}/ns/{namespace}")
            != os.readlink(f"/proc/self/ns/{namespace}")
            for namespace in ("net", "mnt", "pid")
        },
        "workdir": (oct(workdir.st_mode & 0o777), workdir.st_uid == running.uid),
        "environment": sorted(
            entry.split(b"=", 1)[0]
            for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if entry
        ),
    }


def test_it_tells_a_process_waiting_for_its_input_from_one_that_is_not():
    reading = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE
    )
    sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 60
        while not waiting_for_input(reading.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting_for_input(reading.pid) is True
        time.sleep(0.2)  # well asleep by now, not waiting for input
        assert waiting_for_input(sleeping.pid) is False
    finally:
        for process in (reading, sleeping):
            process.kill()
            process.wait()
    assert waiting_for_input(reading.pid) is None  # gone: cannot be told


def test_a_pooled_agent_is_confined_exactly_like_a_fresh_one(pooled, needs_root):
    limits = SandboxLimits(memory_mb=300, max_processes=40)
    source = agent("random_agent.py")
    warm = start_warm(pooled, source, limits)
    fresh = pooled._launch(source, limits=limits, label="p1-fresh")
    try:
        # Both past the jail's set-up, waiting for their handshake.
        assert wait_until_reading(fresh.agent_pid, timeout=60)
        assert confinement(warm) == confinement(fresh)
        assert warm.uid != fresh.uid and warm.token != fresh.token
        assert confinement(warm)["net"] is True
        assert confinement(warm)["mnt"] is confinement(warm)["pid"] is pooled.confined
        assert confinement(warm)["uid_is_own"] is True
        assert confinement(warm)["workdir"] == ("0o700", True)
    finally:
        warm.close()
        fresh.close()


def test_it_never_gives_an_agent_to_a_second_duel_and_plays_the_same_duels(pooled):
    random_player = player("connect_four/random_player.py")
    cold = ProcessSandbox(pooled.root)
    results = []
    for seed in range(3):
        results.append(
            run_duel(
                "connect_four", (random_player, random_player), backend=pooled, seed=seed, matches=3
            )
        )
        ready(pooled)
    expected = [
        run_duel("connect_four", (random_player, random_player), backend=cold, seed=seed, matches=3)
        for seed in range(3)
    ]

    assert [[m.actions for m in r.matches] for r in results] == [
        [m.actions for m in r.matches] for r in expected
    ]
    assert all(not r.infrastructure_error and not any(m.faults for m in r.matches) for r in results)
    assert len(pooled.handed_out) == 6
    assert len({running.agent_pid() for running in pooled.handed_out}) == 6
    # The later duels' agents were all started ahead; the first duel's first agent cannot
    # have been (its second may be the one the first asked for, if it waited for it).
    assert all(running.warm for running in pooled.handed_out[2:])
    assert not all(running.warm for running in pooled.handed_out[:2])
    # Each is killed once its duel is over, warm or not, and a fresh one's folder removed
    # (in the background: flush waits for that); a forked one's folder is its server's.
    assert all(running.termination() is not None for running in pooled.handed_out)
    assert pooled.flush(60)
    fresh = [running for running in pooled.handed_out if isinstance(running, ProcessAgent)]
    assert fresh and all(not running.workdir.exists() for running in fresh)
    cold.close()


def test_it_does_not_serve_an_agent_started_before_its_files_changed(pooled):
    source_file = pooled.root / "edited_agent.py"
    source_file.write_text(agent("random_agent.py").path.read_text())
    pooled.start(AgentSource.from_path(source_file), limits=SandboxLimits(), label="p1").close()
    ready(pooled)
    source_file.write_text(source_file.read_text() + "\n# edited\n")
    os.utime(source_file, (time.time() + 5, time.time() + 5))

    second = pooled.start(AgentSource.from_path(source_file), limits=SandboxLimits(), label="p1")
    second.close()

    assert not second.warm
    source_file.unlink()


def test_an_agent_that_died_waiting_in_the_pool_is_started_afresh(pooled):
    # It starts a daemon that holds its streams and exits. The pool's copy, dead, is not
    # handed out (nothing may charge an agent for a death it did not make, such as the
    # host's OOM killer's): the duel starts it afresh, as a worker without a pool would,
    # and that start fails as its own (charged to its first match). The daemon must not
    # outlive the duel.
    dies = pooled.root / "dies_waiting"
    dies.mkdir()
    (dies / "main.py").write_text(
        textwrap.dedent(
            """
            import os, sys, time
            if os.environ.get("ARENA_SANDBOX_TOKEN") and os.fork() == 0:
                os.setsid()
                time.sleep(3600)
            sys.exit(3)
            """
        )
    )
    source = AgentSource.from_path(dies)
    opponent = player("connect_four/random_player.py")
    first = run_duel("connect_four", (source, opponent), backend=pooled, seed=1, matches=2)
    ready(pooled)
    before = len(pooled.handed_out)
    second = run_duel("connect_four", (source, opponent), backend=pooled, seed=1, matches=2)

    # The pool's copy had died: the second duel's first copy of it was a fresh start.
    assert pooled.pool is not None and pooled.pool.stats["ended"] >= 1
    assert not next(r.warm for r in pooled.handed_out[before:] if r.workdir.name.startswith("p1-"))
    for result in (first, second):
        faults = [fault for match in result.matches for fault in match.faults]
        assert {fault.player for fault in faults} == {1}
        assert faults[0].kind is FaultKind.CRASH and "while starting" in faults[0].message
    for path in dies.iterdir():
        path.unlink()
    dies.rmdir()


def test_closing_the_sandbox_kills_every_agent_started_ahead(pooled):
    source = agent("random_agent.py")
    for label in ("p1-a", "p2-a"):
        pooled.start(source, limits=SandboxLimits(), label=label).close()
    ready(pooled)
    assert pooled.pool is not None and len(pooled.pool) >= 1
    # The fork servers whose children wait in the pool: one or two, as the second start's
    # copy was asked for before or after the first copy's server was given back.
    waiting = [running for running in pooled.launched if running.process.poll() is None]
    assert waiting

    pooled.close()

    assert all(running.process.poll() is not None for running in waiting)
    # The fixture checks the folders and the processes of their user ids.


def test_an_agent_idle_in_the_pool_past_its_time_is_killed(sandbox_root):
    sandbox = ProcessSandbox(sandbox_root, pool_size=2, pool_idle_seconds=0.5)
    try:
        sandbox.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1").close()
        ready(sandbox)
        # One was pooled: counted, not read from the pool, which a loaded machine may
        # already have emptied (0.5 s after the agent was ready).
        assert sandbox.pool is not None and sandbox.pool.stats["started"] == 1
        deadline = time.monotonic() + 60
        while len(sandbox.pool) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sandbox.pool) == 0 and sandbox.pool.stats["expired"] == 1
    finally:
        sandbox.close()

    def leftovers() -> list[str]:
        return [path.name for path in sandbox_root.iterdir() if not path.name.startswith("sdk-")]

    # The expired agent is counted before its discard, which may still be under way in the
    # pool's thread when close() waits for the sweeps: give it the time it takes.
    deadline = time.monotonic() + 300
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers() == []
