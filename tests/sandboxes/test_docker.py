"""The docker sandbox on a real engine: duels over the Unix socket bridge, the container's
confinement, and every hostile agent getting its named outcome with nothing left behind.

The ``docker_backend`` fixture labels this test's containers and checks afterwards that
none of them, no agent folder and no process of the agents' user remains.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import shutil
import socket
import threading
import time
from typing import Any

import pytest

from referee.channel import Channel
from referee.duel import run_duel
from referee.results import DuelResult, Outcome
from sandboxes import docker_engine, docker_images, get_backend
from sandboxes.base import AgentSource, SandboxLimits
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import container_command
from tests.support.docker import leftover_containers
from tests.support.sandboxes import (
    PLAYERS,
    agent,
    assert_blamed_on_the_second_player,
    duel_with_random_agent,
    fault_kinds,
    hostile,
    player,
    processes_in_containers,
)

#: For the cases whose fault is the clock's: short, so that waiting them out is quick.
FAST: dict[str, Any] = {"matches": 3, "move_time": 0.5, "time_bank": 0.5, "startup_time": 10.0}
#: For the others: limits no honest agent reaches, even in a cold container on a loaded
#: machine, so that only the fault under test is charged; such a duel must end well within
#: one of them (``PATIENT_DUEL_BOUND``), so that one waited out by mistake still fails.
PATIENT: dict[str, Any] = {"matches": 3, "move_time": 60.0, "time_bank": 0.0, "startup_time": 60.0}
PATIENT_DUEL_BOUND = 60.0


def duel(backend: DockerSandbox, source: AgentSource, **overrides: object) -> DuelResult:
    return duel_with_random_agent(backend, source, **{**FAST, **overrides})


def patient_duel(backend: DockerSandbox, source: AgentSource, **overrides: object) -> DuelResult:
    result = duel_with_random_agent(backend, source, **{**PATIENT, **overrides})
    assert result.duration < PATIENT_DUEL_BOUND
    return result


def exchange_one_move(backend: DockerSandbox, source: AgentSource, label: str = "p2-alone") -> str:
    """Start ``source`` alone, play one request by hand and return its log."""
    running = backend.start(source, limits=SandboxLimits(), label=label)
    try:
        channel = Channel(running, max_message_bytes=1 << 16)
        deadline = time.monotonic() + 20
        channel.send({"type": "hello", "protocol": 1}, deadline)
        assert channel.receive(deadline)["type"] == "ready"
        channel.send({"type": "start", "match": 0, "player": 0, "seed": 1}, deadline)
        act = {
            "type": "act",
            "id": 1,
            "match": 0,
            "step": 0,
            "observation": {},
            "legal_actions": [1],
            "time_left": {"move": 5, "bank": 0},
        }
        channel.send(act, deadline)
        assert channel.receive_reply(1, deadline)["action"] == 1
    finally:
        running.close()
    return running.log()


# -- duels ------------------------------------------------------------------------


def test_it_plays_a_duel_of_two_random_players_in_containers(docker_backend):
    random_player = player("connect_four/random_player.py")
    result = run_duel(
        "connect_four", (random_player, random_player), backend=docker_backend, seed=11, matches=6
    )

    assert not result.infrastructure_error
    assert [fault for match in result.matches for fault in match.faults] == []
    assert [match.first_player for match in result.matches] == [1, 2, 1, 2, 1, 2]
    assert all(len(match.actions) >= 7 for match in result.matches)
    assert result.restarts[0] == result.restarts[1] == 0


def test_it_replays_the_same_duel_as_the_process_sandbox(docker_backend, sandbox_root):
    random_player = player("connect_four/random_player.py")
    sources = (random_player, random_player)
    on_the_host = get_backend("process", root=sandbox_root)

    in_containers = run_duel("connect_four", sources, backend=docker_backend, seed=5, matches=4)
    in_processes = run_duel("connect_four", sources, backend=on_the_host, seed=5, matches=4)

    assert [m.actions for m in in_containers.matches] == [m.actions for m in in_processes.matches]


def test_it_runs_an_executable_entry_point(docker_backend):
    # The hostile agent is an executable with a shebang line; this late it behaves.
    result = patient_duel(docker_backend, hostile("none", at=1000))

    assert not result.infrastructure_error
    assert fault_kinds(result) == []


def test_it_is_chosen_by_name(sandbox_root):
    backend = get_backend("docker", root=sandbox_root)

    assert isinstance(backend, DockerSandbox)
    assert backend.name == "docker"


def test_it_reports_a_missing_image_as_a_sandbox_failure(docker_base_image, sandbox_root):
    backend = DockerSandbox(sandbox_root, image="arena-base:no-such-image")
    random_player = player("connect_four/random_player.py")

    result = run_duel("connect_four", (random_player, random_player), backend=backend, matches=1)

    assert result.as_json()["result"] == Outcome.ERROR
    assert "arena-base:no-such-image does not exist" in result.infrastructure_error
    assert "build_base_image" in result.infrastructure_error


def test_it_reports_a_revision_image_that_is_gone_as_a_sandbox_failure(docker_backend):
    random_player = player("connect_four/random_player.py")
    gone = dataclasses.replace(random_player, image="arena-revision:0-gone")

    result = run_duel("connect_four", (random_player, gone), backend=docker_backend, matches=1)

    # Never the agent's fault: the duel is an error, not a loss.
    assert result.as_json()["result"] == Outcome.ERROR
    assert "arena-revision:0-gone does not exist: rebuild the revision" in (
        result.infrastructure_error
    )


# -- confinement ------------------------------------------------------------------


def test_it_locks_the_container_down(docker_backend):
    limits = SandboxLimits(memory_mb=300, max_processes=40)
    running = docker_backend.start(agent("random_agent.py"), limits=limits, label="p1-inspect")
    try:
        docker_engine.container_state(running.container)
        config = running.container.attrs["Config"]
        host = running.container.attrs["HostConfig"]
        processes = processes_in_containers({running.container.id})
    finally:
        running.close()
    docker_backend.flush()

    assert config["User"] == "10001:10001"
    assert config["Labels"]["arena.role"] == "agent"
    assert config["Labels"]["arena.sandbox"] == running.token
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == host["MemorySwap"] == 300 * 1024 * 1024
    assert host["NanoCpus"] == 1_000_000_000
    assert host["PidsLimit"] == 40
    assert host["Init"] is True
    assert host["Tmpfs"] == {"/tmp": "size=64m,mode=1777"}
    assert {limit["Name"] for limit in host["Ulimits"]} == {"cpu", "nofile", "fsize", "core"}
    # init, and the agent the bridge became; close() removes both and the container.
    assert sorted(name for _pid, name in processes) == ["docker-init", "python3"]
    assert docker_engine.container_state(running.container) is None
    assert processes_in_containers({running.container.id}) == []


def test_it_gives_an_agent_no_network(docker_backend):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        log = exchange_one_move(docker_backend, hostile("network", HOSTILE_PORT=str(port)))

    assert "CONNECTED" not in log
    assert "network denied" in log


def test_it_lets_an_agent_write_only_to_its_tmpfs(docker_backend):
    forbidden = ["/agent", "/etc", "/", "/run/arena", "/opt/arena/sdk"]
    source = hostile("write_outside", HOSTILE_FORBIDDEN=":".join(forbidden), HOSTILE_ALLOWED="/tmp")

    log = exchange_one_move(docker_backend, source)

    for folder in forbidden:
        target = f"{folder.rstrip('/')}/planted.txt"
        assert f"denied {target}: [Errno 30] Read-only file system" in log
    assert "WROTE /tmp/planted.txt" in log


# -- hostile agents -----------------------------------------------------------------


def test_it_charges_a_sleeping_agent_with_timeouts_then_a_forfeit(docker_backend):
    result = duel(docker_backend, hostile("sleep"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["timeout", "timeout", "forfeit"]
    assert result.restarts[1] == 1


def test_it_charges_an_exit_mid_match_as_a_crash(docker_backend):
    result = patient_duel(docker_backend, hostile("exit", at=2))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "exited with status 3" in result.matches[0].faults[0].message


def test_it_charges_a_closed_stdout_as_a_crash(docker_backend):
    result = patient_duel(docker_backend, hostile("close_stdout"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "closed its output" in result.matches[0].faults[0].message


def test_it_charges_a_memory_hog_as_memory_exceeded(docker_backend):
    # Time to reach the cap on a loaded machine (PATIENT), so it is charged for memory.
    result = patient_duel(docker_backend, hostile("memory"), limits=SandboxLimits(memory_mb=256))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["memory_exceeded", "memory_exceeded", "forfeit"]


def test_it_charges_a_memory_hog_as_such_when_the_engine_learns_of_its_end_late(
    docker_backend, monkeypatch
):
    # A loaded machine's engine: each container still running for 0.7 s after its end,
    # longer than the referee's wait for an agent that stopped talking (0.5 s).
    told = docker_engine.container_state
    ended_at: dict[str, float] = {}

    def late(container):
        state = told(container)
        if state is None or state.running:
            return state
        first = ended_at.setdefault(container.id, time.monotonic())
        if time.monotonic() - first < 0.7:
            return dataclasses.replace(state, running=True, exit_code=None, oom_killed=False)
        return state

    monkeypatch.setattr(docker_engine, "container_state", late)
    result = patient_duel(docker_backend, hostile("memory"), limits=SandboxLimits(memory_mb=256))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["memory_exceeded", "memory_exceeded", "forfeit"]


def test_it_stops_a_fork_bomb_at_the_process_limit(docker_backend):
    result = duel(docker_backend, hostile("fork_bomb"), limits=SandboxLimits(max_processes=32))

    assert_blamed_on_the_second_player(result)
    assert set(fault_kinds(result)) <= {"timeout", "crash", "malformed_message", "forfeit"}
    # The fixture checks that no process of the agents' user survives.


def test_it_stops_a_huge_file_in_the_tmpfs_at_the_file_size_limit(docker_backend):
    source = hostile("huge_file", HOSTILE_DIR="/tmp")
    result = patient_duel(docker_backend, source, limits=SandboxLimits(max_file_mb=8))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "file size limit" in result.matches[0].faults[0].message


def test_it_refuses_a_huge_file_in_the_agents_folder(docker_backend):
    result = patient_duel(docker_backend, hostile("huge_file", HOSTILE_DIR="/agent"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "Read-only file system" in result.logs[1]


def test_it_keeps_a_flooded_log_capped_without_blame(docker_backend):
    limits = SandboxLimits(log_bytes=32 * 1024)
    result = patient_duel(docker_backend, hostile("stderr_flood"), limits=limits)

    assert result.as_json()["errors"][1] == 0
    assert len(result.logs[1]) < 40 * 1024
    assert "bytes of log dropped" in result.logs[1]


# -- orphans ------------------------------------------------------------------------


@pytest.mark.parametrize("seat", [1, 2, 3, 4])
def test_in_a_game_of_four_only_the_exiting_player_is_charged(docker_backend, seat):
    sources = [agent("random_agent.py") for _ in range(3)]
    sources.insert(seat - 1, hostile("exit", at=2))

    result = run_duel("lowest_unique", sources, backend=docker_backend, seed=7, **PATIENT)

    assert not result.infrastructure_error
    assert result.duration < PATIENT_DUEL_BOUND
    document = result.as_json()
    assert document["other_errors"] == 0
    assert fault_kinds(result, seat) == ["crash", "crash", "forfeit"]
    assert document["errors"] == [3 if number == seat else 0 for number in range(1, 5)]


@pytest.fixture
def orphan_labels(docker_base_image: str):
    labels = {"arena.test": f"orphans-{time.monotonic_ns()}"}
    yield labels
    for container in docker_engine.containers_labelled(labels):
        docker_engine.container_discard(container)


def test_it_sweeps_the_containers_of_a_dead_worker_only(docker_base_image, orphan_labels):
    dead_worker = f"{socket.gethostname()}:999999999:0"
    # A role of the test's own: every worker that starts on this machine's engine meanwhile
    # (the other lanes' tests) sweeps the agents' orphans too, and could take this one first.
    role = orphan_labels["arena.test"]
    spec = {"image": docker_base_image, "command": ["sleep", "600"], "role": role}
    orphan = docker_engine.container_start(
        **spec, labels={**orphan_labels, docker_engine.LABEL_OWNER: dead_worker}
    )
    ours = docker_engine.container_start(**spec, labels=orphan_labels)

    removed = docker_engine.sweep_orphans(roles=(role,))

    assert docker_engine.container_name(orphan) in removed
    assert docker_engine.container_name(ours) not in removed
    assert leftover_containers(orphan_labels) == [docker_engine.container_name(ours)]


def test_it_sweeps_the_folders_no_container_uses(docker_backend):
    live = agent("random_agent.py")
    running = docker_backend.start(live, limits=SandboxLimits(), label="p1-live")
    stale = docker_backend.root / "p1-gone-0123456789abcdef"
    stale.mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    fresh = docker_backend.root / "p2-starting-fedcba9876543210"
    fresh.mkdir()
    try:
        removed = docker_backend.sweep_orphans()
        remaining = sorted(path.name for path in docker_backend.root.iterdir())
    finally:
        running.close()
        fresh.rmdir()

    assert str(stale) in removed
    assert remaining == sorted([running.folder.name, fresh.name])


def test_it_accepts_a_long_agent_name(docker_backend):
    long_name = "p2-" + "a_very_long_agent_folder_name" * 3
    log = exchange_one_move(docker_backend, agent("random_agent.py"), label=long_name)

    assert "Traceback" not in log


def test_image_prunes_at_once_on_one_engine_each_wait_their_turn(docker_base_image):
    """The engine refuses a second prune while one runs (409); a worker's clean-up and the
    host's timer may well meet, and neither may fail for it."""
    labels = {docker_engine.LABEL_ROLE: "prune-test", "arena.test": os.urandom(4).hex()}
    start = threading.Barrier(8)

    def prune() -> list[str]:
        start.wait()
        return docker_images.images_prune_dangling(labels)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = [pool.submit(prune) for _ in range(8)]
        assert [answer.result() for answer in answers] == [[]] * 8


#: The bridge of an image built before the pipes (2026-12-01): three connections, which
#: become the agent's stdin, stdout and stderr, and nothing asked.
OLD_BRIDGE = """\
import os, socket, sys
path, command = sys.argv[1], sys.argv[3:]
streams = []
for _ in range(3):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    streams.append(connection)
for target, connection in enumerate(streams):
    os.dup2(connection.fileno(), target)
os.execvp(command[0], command)
"""


def test_it_plays_with_the_bridge_of_an_image_built_before_the_pipes(
    docker_backend, tmp_path, monkeypatch
):
    folder = tmp_path / "older"
    folder.mkdir()
    shutil.copy(PLAYERS / "connect_four" / "random_player.py", folder / "main.py")
    (folder / "old_bridge.py").write_text(OLD_BRIDGE)
    older = AgentSource.from_path(folder)
    monkeypatch.setattr(
        docker_backend,
        "_command",
        lambda source: [
            "python3",
            "/agent/old_bridge.py",
            *container_command(source.entry, source.kind)[5:],
        ],
    )

    result = run_duel("connect_four", (older, older), backend=docker_backend, seed=5, matches=4)

    assert not result.infrastructure_error
    assert [fault for match in result.matches for fault in match.faults] == []
    assert all(len(match.actions) >= 7 for match in result.matches)
