"""A turn-based duel's referee and agents share one CPU of their own (``sandboxes.cpus``)."""

from __future__ import annotations

import concurrent.futures
import os
import threading
from pathlib import Path

import pytest

from referee.duel import run_duel
from sandboxes import cpus as cpus_module
from sandboxes import docker_engine, fork_servers
from sandboxes.base import SandboxLimits
from sandboxes.cpus import away_from_duels, claim_cpu, duel_cpu
from sandboxes.docker import DockerSandbox
from sandboxes.fork_servers import ForkedAgent
from sandboxes.process import ProcessSandbox
from sandboxes.process_agent import ProcessAgent
from tests.support.require import require
from tests.support.sandboxes import cpus_seen, reports_cpus

CPUS = os.sched_getaffinity(0)


def claims_at_once(locks: Path, count: int) -> list[tuple[int | None, set[int]]]:
    """``count`` duels claiming a CPU at once, each in a thread of its own (as a worker's
    duels are): what each got, and the CPUs its thread could run on meanwhile."""
    everyone_claimed = threading.Barrier(count)

    def claim() -> tuple[int | None, set[int]]:
        with duel_cpu(locks) as cpu:
            everyone_claimed.wait(timeout=60)
            return cpu, os.sched_getaffinity(0)

    threads = [concurrent.futures.ThreadPoolExecutor(1) for _ in range(count)]
    try:
        return [future.result() for future in [pool.submit(claim) for pool in threads]]
    finally:
        for pool in threads:
            pool.shutdown()


def test_each_duel_takes_a_cpu_of_its_own_and_gives_it_back(tmp_path: Path, two_cpus):
    got = claims_at_once(tmp_path / "cpus", len(CPUS))

    assert sorted(cpu for cpu, _ in got if cpu is not None) == sorted(CPUS)
    assert all(cpu is not None for cpu, _ in got)
    assert all(pinned == {cpu} for cpu, pinned in got)
    # Given back: the next duel gets one again.
    assert claims_at_once(tmp_path / "cpus", 1)[0][0] in CPUS


def test_with_every_cpu_taken_a_duel_is_not_pinned(tmp_path: Path, two_cpus):
    got = claims_at_once(tmp_path / "cpus", len(CPUS) + 1)

    assert sorted(cpu for cpu, _ in got if cpu is not None) == sorted(CPUS)
    [unpinned] = [pinned for cpu, pinned in got if cpu is None]
    assert unpinned == CPUS


@pytest.mark.usefixtures("cpus_of_their_own")
def test_a_turn_based_duel_plays_its_moves_on_one_cpu(backend: ProcessSandbox, two_cpus):
    reporter = reports_cpus()
    result = run_duel("connect_four", (reporter, reporter), backend=backend, seed=3, matches=2)

    assert not result.infrastructure_error
    seen = [cpus_seen(log) for log in result.logs]
    # Both agents, every move, on the same single CPU.
    assert len(seen[0] | seen[1]) == 1 and "," not in next(iter(seen[0]))
    assert os.sched_getaffinity(0) == CPUS  # the referee's thread given back its CPUs
    # The agents too, once the matches are over: they end side by side.
    everything = ",".join(str(cpu) for cpu in sorted(CPUS))
    assert all(f"exiting on cpus {everything}" in log for log in result.logs), result.logs


#: The docker sandbox's two ways of starting an agent: a container of its own, or a child
#: of a fork server in a container kept for it (as a worker's warm pool hands them out).
DOCKER_KINDS = {"containers": "docker_backend", "forked": "docker_forked_backend"}


@pytest.mark.usefixtures("cpus_of_their_own")
@pytest.mark.parametrize("kind", DOCKER_KINDS)
def test_a_turn_based_duel_s_containers_share_its_cpu_from_the_first_move(
    request: pytest.FixtureRequest, two_cpus, kind: str
):
    # Here the containers' processes are seen (the tests run on the engine's host): each
    # agent is pinned at once, as a process agent is, with no engine call to wait for.
    backend = request.getfixturevalue(DOCKER_KINDS[kind])
    reporter = reports_cpus()
    result = run_duel("connect_four", (reporter, reporter), backend=backend, seed=3, matches=2)

    assert not result.infrastructure_error
    seen = [cpus_seen(log) for log in result.logs]
    assert len(seen[0] | seen[1]) == 1 and "," not in next(iter(seen[0])), seen
    assert os.sched_getaffinity(0) == CPUS  # the referee's thread given back its CPUs
    everything = ",".join(str(cpu) for cpu in sorted(CPUS))
    assert all(f"exiting on cpus {everything}" in log for log in result.logs), result.logs
    if kind == "forked":
        assert backend.not_forked == 0


@pytest.mark.usefixtures("cpus_of_their_own")
@pytest.mark.parametrize("why", ["unseen", "unmovable"])
@pytest.mark.parametrize("kind", DOCKER_KINDS)
def test_agents_this_worker_cannot_move_are_pinned_by_their_server_or_the_engine(
    request: pytest.FixtureRequest,
    two_cpus,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    why: str,
):
    if why == "unseen" and kind == "forked":
        # As from a worker in a container of its own: neither a server's process id nor
        # its children's are seen.
        backend = request.getfixturevalue("docker_unseen_backend")
    else:
        backend = request.getfixturevalue(DOCKER_KINDS[kind])
    if why == "unseen" and kind == "containers":
        # As from a worker in a container of its own: the bridge's process id is not seen.
        monkeypatch.setattr(DockerSandbox, "_peer_pid", staticmethod(lambda connection: None))
    if why == "unmovable":
        # Seen, but as from a worker that may not move another user's processes (EPERM).
        monkeypatch.setattr(cpus_module, "pin_process", lambda pid, cpus: False)
        monkeypatch.setattr(fork_servers, "pin_process", lambda pid, cpus: False)
    engine_pins: list[set[int]] = []
    engine_pin = docker_engine.container_pin

    def recorded(container, cpus):
        engine_pins.append(set(cpus))
        engine_pin(container, cpus)

    monkeypatch.setattr(docker_engine, "container_pin", recorded)
    # Pinned in the background (by the engine) or by another process (a fork server):
    # each agent waits for it at its first move (a minute at most; the move's limit is
    # longer), then reports every move's CPUs.
    waiter = reports_cpus(wait_for_one_cpu=True)
    result = run_duel(
        "connect_four", (waiter, waiter), backend=backend, seed=3, matches=2, move_time=120
    )

    assert not result.infrastructure_error
    seen = [cpus_seen(log) for log in result.logs]
    assert len(seen[0] | seen[1]) == 1 and "," not in next(iter(seen[0])), seen
    assert os.sched_getaffinity(0) == CPUS
    if kind == "forked":
        # Moved by their servers, in microseconds: the engine was not asked.
        assert backend.not_forked == 0
        assert engine_pins == []
    else:
        assert engine_pins


def test_a_duel_of_simultaneous_moves_is_not_pinned(backend: ProcessSandbox, two_cpus):
    reporter = reports_cpus()
    result = run_duel(
        "rock_paper_scissors", (reporter, reporter), backend=backend, seed=3, matches=2
    )

    assert not result.infrastructure_error
    everything = ",".join(str(cpu) for cpu in sorted(CPUS))
    assert [cpus_seen(log) for log in result.logs] == [{everything}, {everything}]


@pytest.mark.usefixtures("cpus_of_their_own")
def test_two_duels_at_once_play_on_different_cpus(backend: ProcessSandbox, two_cpus):
    reporter = reports_cpus()

    def play(seed: int) -> set[str]:
        result = run_duel(
            "connect_four", (reporter, reporter), backend=backend, seed=seed, matches=20
        )
        return cpus_seen(result.logs[0]) | cpus_seen(result.logs[1])

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first, second = pool.map(play, (1, 2))
    # Each on one CPU (which CPUs two overlapping duels get: the claims' test above); an
    # unpinned duel would say every CPU ("0,1"), in one line too.
    singles = [{str(cpu)} for cpu in CPUS]
    assert first in singles and second in singles, (first, second)


def test_background_work_runs_off_the_cpus_this_process_s_duels_hold(tmp_path: Path, two_cpus):
    with concurrent.futures.ThreadPoolExecutor(1) as background:
        background.submit(lambda: None).result()  # its thread, started before any pin
        assert background.submit(_away).result() == CPUS  # no duel: anywhere
        with duel_cpu(tmp_path / "cpus") as cpu:
            assert cpu is not None
            assert background.submit(_away).result() == CPUS - {cpu}
        assert background.submit(_away).result() == CPUS


def _away() -> set[int]:
    with away_from_duels():
        return os.sched_getaffinity(0)


def test_an_agent_started_ahead_during_a_duel_loads_elsewhere_then_may_run_anywhere(
    sandbox_root: Path, two_cpus
):
    sandbox = ProcessSandbox(sandbox_root, pool_size=2)
    try:
        with duel_cpu(sandbox_root / "cpus"):
            sandbox.start(reports_cpus(), limits=SandboxLimits(), label="p1").close()
            assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)
        warm = sandbox.start(reports_cpus(), limits=SandboxLimits(), label="p1")
        try:
            assert warm.warm
            pid = warm.agent_pid()
            assert pid is not None
            assert os.sched_getaffinity(pid) == CPUS
        finally:
            warm.close()
    finally:
        sandbox.close()


def test_a_forked_agent_asked_for_during_a_duel_loads_off_the_duel_s_cpu(
    sandbox_root: Path, two_cpus
):
    """A fork server started while no duel held a CPU may run anywhere; its next child,
    asked for while a duel holds one (its claim made before its agents start), loads on
    the other CPUs: the server is moved there before it forks."""
    sandbox = ProcessSandbox(sandbox_root, pool_size=2)
    if sandbox.fork_servers is None:
        sandbox.close()
    require(sandbox.fork_servers is not None, f"no fork servers: {sandbox.unconfined_reason}")
    limits = SandboxLimits()

    def start() -> ProcessAgent | ForkedAgent:
        return sandbox.start(reports_cpus(), limits=limits, label="p1")

    def settled() -> None:
        assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)
        assert sandbox.flush(60)

    try:
        # With no duel: the first server, then a second one while the first's child plays;
        # the first is idle again at the end, free to run anywhere.
        start().close()
        settled()
        start().close()
        settled()
        with claim_cpu(sandbox_root / "cpus") as claim:
            assert claim is not None
            taken = start()  # the pool asks the idle server for the next child now
            assert taken.warm
            settled()
            taken.close()
        ahead = start()
        ahead.close()
        settled()
    finally:
        sandbox.close()

    assert ahead.warm and isinstance(ahead, ForkedAgent)
    others = ",".join(str(cpu) for cpu in sorted(CPUS - {claim.cpu}))
    assert f"loading on cpus {others}\n" in ahead.log(), ahead.log()
