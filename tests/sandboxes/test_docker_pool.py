"""The docker sandbox's warm pool and background removals, on a real engine.

A pooled container is started ahead for the next ``start`` of the same agent, image and
limits; it must be locked down exactly as a fresh one, serve one duel only, and never
outlive the sandbox, the worker process or the orphan sweep.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Hashable, Iterator
from pathlib import Path

import pytest

from referee.duel import run_duel
from sandboxes import docker_engine
from sandboxes.base import SandboxError, SandboxLimits
from sandboxes.docker import DockerSandbox
from sandboxes.docker_agent import DockerAgent
from sandboxes.warm_pool import WarmPool
from tests.support.docker import (
    REMOVAL_BOUND,
    containers_left_after_removal,
    leftover_containers,
)
from tests.support.sandboxes import (
    RecordingDockerSandbox,
    agent,
    player,
    processes_in_containers,
    record_starts,
    survivors,
)

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def test_label(request: pytest.FixtureRequest) -> dict[str, str]:
    return {"arena.test": f"{os.getpid()}-{request.node.name}"[:120]}


@pytest.fixture
def pooled_backend(
    docker_base_image: str, sandbox_root: Path, test_label: dict[str, str]
) -> Iterator[RecordingDockerSandbox]:
    """A docker sandbox with a warm pool; checks that closing it leaves nothing."""
    backend = RecordingDockerSandbox(
        sandbox_root, image=docker_base_image, labels=test_label, pool_size=4, fork=False
    )
    yield backend
    backend.close()
    assert backend.flush(REMOVAL_BOUND), "a container's removal is still running"
    assert containers_left_after_removal(test_label) == []
    assert list((sandbox_root / "docker").iterdir()) == []
    assert survivors(backend.container_ids) == []


def start_warm(backend: DockerSandbox, limits: SandboxLimits, label: str) -> DockerAgent:
    """Start an agent twice: the first start leaves a warm one, the second takes it."""
    first = backend.start(agent("random_agent.py"), limits=limits, label=label)
    first.close()
    assert backend.pool is not None and backend.pool.wait_until_ready(120)
    warm = backend.start(agent("random_agent.py"), limits=limits, label=label)
    assert warm.warm and not first.warm
    assert isinstance(warm, DockerAgent)  # (not forked: the pool keeps containers)
    return warm


def lockdown(running: DockerAgent) -> dict[str, object]:
    """What confines a container, without what names this one (token, folder, name)."""
    docker_engine.container_state(running.container)
    config = running.container.attrs["Config"]
    host = running.container.attrs["HostConfig"]
    environment = sorted(
        entry for entry in config["Env"] if not entry.startswith("ARENA_SANDBOX_TOKEN=")
    )
    binds = sorted(bind.split(":", 1)[1] for bind in host["Binds"])  # inside, not the host
    keys = [
        "NetworkMode",
        "ReadonlyRootfs",
        "CapDrop",
        "CapAdd",
        "SecurityOpt",
        "Memory",
        "MemorySwap",
        "NanoCpus",
        "PidsLimit",
        "Init",
        "Tmpfs",
        "Ulimits",
        "Privileged",
        "LogConfig",
    ]
    labels = {k: v for k, v in config["Labels"].items() if k != "arena.sandbox"}
    return {
        "user": config["User"],
        "image": config["Image"],
        "command": config["Cmd"],
        "working_dir": config["WorkingDir"],
        "environment": environment,
        "labels": labels,
        "binds": binds,
        **{key: host.get(key) for key in keys},
    }


# -- the pool on a real engine ------------------------------------------------------


def test_it_locks_a_pooled_container_down_exactly_like_a_fresh_one(pooled_backend):
    limits = SandboxLimits(memory_mb=300, max_processes=40)
    warm = start_warm(pooled_backend, limits, "p1-inspect")
    fresh = pooled_backend._launch(agent("random_agent.py"), limits=limits, label="p1-inspect")
    try:
        warm_lockdown, fresh_lockdown = lockdown(warm), lockdown(fresh)
        assert warm.container.id is not None
        processes = processes_in_containers({warm.container.id})
        warm_token = warm.container.attrs["Config"]["Labels"]["arena.sandbox"]
    finally:
        warm.close()
        fresh.close()

    assert warm_lockdown == fresh_lockdown
    assert warm_lockdown["NetworkMode"] == "none"
    assert warm_lockdown["ReadonlyRootfs"] is True
    assert warm_lockdown["CapDrop"] == ["ALL"]
    assert warm_lockdown["user"] == "10001:10001"
    assert warm_lockdown["Memory"] == 300 * 1024 * 1024
    assert warm_lockdown["PidsLimit"] == 40
    assert warm_lockdown["Tmpfs"] == {"/tmp": "size=64m,mode=1777"}
    assert warm_token == warm.token != fresh.token
    # Waiting for its handshake: the agent itself runs, nothing else.
    assert sorted(name for _pid, name in processes) == ["docker-init", "python3"]


def test_it_never_gives_a_container_to_a_second_duel(pooled_backend):
    random_player = player("connect_four/random_player.py")
    started = record_starts(pooled_backend)
    results = []
    for seed in range(3):
        results.append(
            run_duel(
                "connect_four",
                (random_player, random_player),
                backend=pooled_backend,
                seed=seed,
                matches=2,
            )
        )
        assert pooled_backend.pool is not None
        pooled_backend.pool.wait_until_ready(120)
    pooled_backend.flush()

    assert all(not result.infrastructure_error for result in results)
    assert len(started) == 6
    assert len({running.container.id for running in started}) == 6
    assert any(running.warm for running in started)
    # Each is removed once its duel is over, warm or not.
    assert all(docker_engine.container_state(running.container) is None for running in started)


def test_it_plays_the_same_duel_with_warm_containers(pooled_backend):
    random_player = player("connect_four/random_player.py")
    sources = (random_player, random_player)
    cold = run_duel("connect_four", sources, backend=pooled_backend, seed=5, matches=4)
    assert pooled_backend.pool is not None and pooled_backend.pool.wait_until_ready(120)
    warm = run_duel("connect_four", sources, backend=pooled_backend, seed=5, matches=4)

    assert pooled_backend.pool.stats["taken"] >= 1
    assert [m.actions for m in warm.matches] == [m.actions for m in cold.matches]
    assert [fault for match in warm.matches for fault in match.faults] == []


def test_a_pooled_container_killed_while_it_waits_is_not_handed_out(pooled_backend):
    random_player = player("connect_four/random_player.py")
    sources = (random_player, random_player)
    run_duel("connect_four", sources, backend=pooled_backend, seed=5, matches=2)
    assert pooled_backend.pool is not None and pooled_backend.pool.wait_until_ready(120)
    # Killed from outside (the host's OOM killer, an operator), as it waits.
    waiting = [agent for agents in pooled_backend.pool._ready.values() for _, agent in agents]
    assert waiting
    for killed in waiting:
        killed.container.kill()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(
        (state := docker_engine.container_state(killed.container)) and state.running
        for killed in waiting
    ):
        time.sleep(0.05)

    result = run_duel("connect_four", sources, backend=pooled_backend, seed=6, matches=2)

    # Started afresh instead: nobody is charged a crash the machine made.
    assert not result.infrastructure_error and result.restarts == [0, 0]
    assert [fault for match in result.matches for fault in match.faults] == []
    assert pooled_backend.pool.stats["ended"] >= 1


def test_it_does_not_serve_a_container_started_before_the_agent_changed(pooled_backend, tmp_path):
    source_file = tmp_path / "agent.py"
    source_file.write_text((REPOSITORY / "tests/referee/agents/random_agent.py").read_text())
    from sandboxes.base import AgentSource

    first = pooled_backend.start(
        AgentSource.from_path(source_file), limits=SandboxLimits(), label="p1-edit"
    )
    first.close()
    assert pooled_backend.pool is not None and pooled_backend.pool.wait_until_ready(120)
    source_file.write_text(source_file.read_text() + "\n# edited\n")
    os.utime(source_file, (time.time() + 5, time.time() + 5))

    second = pooled_backend.start(
        AgentSource.from_path(source_file), limits=SandboxLimits(), label="p1-edit"
    )
    second.close()

    assert not second.warm


def test_it_removes_pooled_containers_when_the_sandbox_closes(pooled_backend, test_label):
    start_warm(pooled_backend, SandboxLimits(), "p1-close").close()
    assert pooled_backend.pool is not None and pooled_backend.pool.wait_until_ready(120)
    pooled_backend.flush()
    waiting = leftover_containers(test_label)
    assert len(waiting) == 1  # the replacement for the warm one taken

    pooled_backend.close()

    assert pooled_backend.flush(REMOVAL_BOUND)
    assert containers_left_after_removal(test_label) == []
    # The fixture checks the folders and processes.


def test_it_discards_a_pooled_container_after_its_idle_time(
    docker_base_image, sandbox_root, test_label
):
    backend = DockerSandbox(
        sandbox_root,
        image=docker_base_image,
        labels=test_label,
        pool_size=2,
        pool_idle_seconds=0.5,
        fork=False,
    )
    try:
        backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-idle").close()
        assert backend.pool is not None and backend.pool.wait_until_ready(120)
        deadline = time.monotonic() + 120  # the first check ends it on any machine
        while backend.pool.stats["expired"] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert backend.pool.stats["expired"] == 1
        # Counted when it expires, discarded just after (the removal may not be queued yet
        # for a flush to wait on): wait for the engine to have removed it.
        assert containers_left_after_removal(test_label) == []
    finally:
        backend.close()
    assert list((sandbox_root / "docker").iterdir()) == []


WORKER = textwrap.dedent(
    """
    import os, sys, json
    from sandboxes.base import AgentSource, SandboxLimits
    from sandboxes.docker import DockerSandbox
    root, image, labels, how, fork = sys.argv[1:6]
    backend = DockerSandbox(
        root, image=image, labels=json.loads(labels), pool_size=2, fork=fork == "fork"
    )
    source = AgentSource.from_path("tests/referee/agents/random_agent.py")
    running = backend.start(source, limits=SandboxLimits(), label="p1-worker")
    # The pool's start for the next duel is done before this agent ends (a fork server
    # busy with it then cannot fork the next one: a second server).
    assert backend.pool.wait_until_ready(120)
    running.close()
    backend.flush()
    assert backend.pool.wait_until_ready(120)
    print(len(backend.pool), flush=True)
    if how == "killed":
        os._exit(0)  # no atexit: as a worker killed by SIGKILL
    """
)


#: A worker's pool keeps a container per agent ready, or with fork servers an agent forked
#: by one server and the idle server of the agent closed after (two containers).
POOLS = {"containers": 1, "fork": 2}


def run_worker(sandbox_root: Path, image: str, labels: dict[str, str], how: str, pool: str) -> str:
    import json

    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(sandbox_root), image, json.dumps(labels), how, pool],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_it_kills_pooled_containers_when_the_worker_exits(
    docker_base_image, sandbox_root, test_label, pool
):
    assert run_worker(sandbox_root, docker_base_image, test_label, "exits", pool) == "1"

    assert containers_left_after_removal(test_label) == []
    assert list((sandbox_root / "docker").iterdir()) == []


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_it_sweeps_the_pooled_containers_of_a_killed_worker(
    docker_base_image, sandbox_root, test_label, pool
):
    assert run_worker(sandbox_root, docker_base_image, test_label, "killed", pool) == "1"
    left = leftover_containers(test_label)
    assert len(left) == POOLS[pool]
    ids = {str(container.id) for container in docker_engine.containers_labelled(test_label)}

    removed = DockerSandbox(sandbox_root, connect_timeout=0.1).sweep_orphans()

    assert set(left) <= set(removed)
    assert leftover_containers(test_label) == []
    assert list((sandbox_root / "docker").iterdir()) == []
    assert survivors(ids) == []


# -- the pool's bookkeeping, without an engine -----------------------------------------


class Started:
    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.discarded = False
        #: Its process ended while it waited in the pool.
        self.ended = False


def fake_pool(size: int, idle_seconds: float = 60.0) -> WarmPool[Started]:
    def discard(started: Started) -> None:
        started.discarded = True

    return WarmPool(size=size, idle_seconds=idle_seconds, start=Started, discard=discard)


def test_it_starts_what_is_wanted_within_its_size():
    pool = fake_pool(size=2)
    for key in ("a", "a", "b"):
        pool.want(key)  # full after two: nothing started for b
    assert pool.wait_until_ready(60)

    assert len(pool) == 2
    assert pool.take("b") is None
    first, second = pool.take("a"), pool.take("a")
    assert first is not None and second is not None and first is not second
    assert pool.take("a") is None
    assert pool.stats["taken"] == 2 and pool.stats["missed"] == 2
    pool.close()


def test_it_discards_what_is_left_when_closed():
    pool = fake_pool(size=3)
    pool.want("a")
    pool.want("b")
    assert pool.wait_until_ready(60)
    ready = [agent for agents in pool._ready.values() for _, agent in agents]

    pool.close()

    assert len(ready) == 2 and all(started.discarded for started in ready)
    assert pool.take("a") is None
    assert len(pool) == 0


def test_it_discards_an_agent_that_ended_while_it_waited_and_hands_out_the_next():
    discarded: list[Started] = []
    pool = WarmPool(
        size=3,
        idle_seconds=60.0,
        start=Started,
        discard=discarded.append,
        ended=lambda started: started.ended,
    )
    for _ in range(3):
        pool.want("a")
    assert pool.wait_until_ready(60)
    oldest, second, newest = (agent for _, agent in pool._ready["a"])
    oldest.ended = second.ended = True  # both died while waiting

    assert pool.take("a") is newest
    assert discarded == [oldest, second]
    assert pool.take("a") is None
    assert pool.stats["ended"] == 2 and pool.stats["taken"] == 1 and pool.stats["missed"] == 1
    pool.close()


def gated_pool(gate: threading.Event) -> WarmPool[Started]:
    """A pool whose starts wait for ``gate``; a start for the key "broken" fails."""

    def start(key: Hashable) -> Started:
        assert gate.wait(60)
        if key == "broken":
            raise RuntimeError("it would not start")
        return Started(key)

    return WarmPool(size=4, idle_seconds=60.0, start=start, discard=lambda started: None)


def waiting_takers(pool: WarmPool[Started], key: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while pool._takers[key] < count and time.monotonic() < deadline:
        time.sleep(0.001)
    assert pool._takers[key] == count


def test_a_taker_may_wait_for_the_agent_being_started_for_its_key():
    gate = threading.Event()
    pool = gated_pool(gate)
    pool.want("a")
    with concurrent.futures.ThreadPoolExecutor(1) as taker:
        assert pool.take("a") is None  # not asked to wait: a miss
        waiting = taker.submit(pool.take, "a", wait=60)
        waiting_takers(pool, "a", 1)
        # One is being started and one caller waits for it: the next one does not wait.
        assert pool.take("a", wait=60) is None
        assert pool.take("b", wait=60) is None  # nothing being started for b
        gate.set()
        got = waiting.result(timeout=60)

    assert got is not None and got.key == "a"
    assert pool.stats["waited"] == 1 and pool.stats["missed"] == 3
    pool.close()


def test_a_taker_stops_waiting_when_the_start_it_waits_for_fails():
    gate = threading.Event()
    pool = gated_pool(gate)
    pool.want("broken")
    with concurrent.futures.ThreadPoolExecutor(1) as taker:
        waiting = taker.submit(pool.take, "broken", wait=600)
        waiting_takers(pool, "broken", 1)
        gate.set()
        # Told at once that nothing is coming, not after its ten minutes.
        assert waiting.result(timeout=120) is None
    assert pool.stats["missed"] == 1
    pool.close()


def test_an_image_whose_bridge_predates_fork_servers_gets_a_container_per_agent(
    docker_base_image, sandbox_root, test_label, monkeypatch
):
    # A revision image built on an older base image: its bridge refuses ``--control``
    # with its usage (exit status 2), as this command does.
    tried: list[str] = []

    def old_bridge(entry: str) -> list[str]:
        tried.append(entry)
        return ["python3", "-c", "raise SystemExit(2)"]

    monkeypatch.setattr("sandboxes.docker.server_command", old_bridge)
    backend = RecordingDockerSandbox(
        sandbox_root, image=docker_base_image, labels=test_label, pool_size=2
    )
    try:
        first = backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-old")
        first.close()
        assert backend.pool is not None and backend.pool.wait_until_ready(120)
        second = backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-old")
        second.close()
    finally:
        backend.close()
    assert backend.flush(REMOVAL_BOUND)

    # Tried once, then a container per agent, warm from the pool as before fork servers.
    assert tried == ["random_agent.py"]
    assert isinstance(first, DockerAgent) and isinstance(second, DockerAgent) and second.warm
    assert containers_left_after_removal(test_label) == []


def test_a_server_that_stops_otherwise_is_an_error_not_a_fallback(
    docker_base_image, sandbox_root, test_label, monkeypatch
):
    monkeypatch.setattr(
        "sandboxes.docker.server_command", lambda entry: ["python3", "-c", "raise SystemExit(1)"]
    )
    backend = RecordingDockerSandbox(
        sandbox_root, image=docker_base_image, labels=test_label, pool_size=2
    )
    try:
        with pytest.raises(SandboxError, match="exit code 1"):
            backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-bad")
        # Tried again next time: one failure says nothing of the image.
        with pytest.raises(SandboxError, match="exit code 1"):
            backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-bad")
    finally:
        backend.close()
    assert backend.flush(REMOVAL_BOUND)
    assert containers_left_after_removal(test_label) == []
