"""Fork servers (``sandboxes.fork_servers``, ``arena_sdk.fork_server``): a confined
sandbox kept from one duel of an agent to the next, as an attacker would try it, in the
process sandbox (bubblewrap) and in the docker sandbox (a container kept per server).
Each agent here writes to its log what it finds of the machine at its start, then leaves
what it can behind it: the next agent forked by the same server must find a fresh
sandbox."""

from __future__ import annotations

import os
import select
import signal
import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arena_sdk import protocol

from referee.channel import Channel
from referee.duel import run_duel
from sandboxes.base import AgentSource, SandboxLimits
from sandboxes.docker import DockerSandbox
from sandboxes.fork_servers import EXPIRY_TIMER, PINS, ForkedAgent, ForkServer, ForkServers
from sandboxes.process import ProcessSandbox
from tests.support.docker import REMOVAL_BOUND
from tests.support.require import require
from tests.support.sandboxes import (
    DockerServersRecorded,
    ServersRecorded,
    agent,
    needs_root,
    player,
    record_starts,
    sandbox_processes,
    server_runs,
    survivors,
)

__all__ = ["needs_root"]

#: Says what it finds (its scratch folders, the processes it sees, whether it can read
#: its server, a random draw), then leaves a file in each scratch folder and a daemon
#: in a session of its own, then tries to stop its server.
INTRUDER = textwrap.dedent(
    """
    import ctypes, os, random, signal, sys, time

    def readable(path):
        try:
            open(path, "rb").read(1)
            return True
        except OSError:
            return False

    seen = {
        "tmp": sorted(os.listdir("/tmp")),
        "shm": sorted(os.listdir("/dev/shm")),
        "pids": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
        "me": os.getpid(),
        "server_environ": readable("/proc/1/environ"),
        "server_memory": readable("/proc/1/mem"),
        "draw": random.random(),
        "ipc": [open(f"/proc/sysvipc/{t}").read().count("\\n") - 1 for t in ("shm", "sem", "msg")],
        "mqueue": sorted(os.listdir("/dev/mqueue")) if os.path.isdir("/dev/mqueue") else [],
    }
    print("SEEN", repr(seen), file=sys.stderr, flush=True)
    libc = ctypes.CDLL(None)
    libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600: 1 MiB
    libc.semget(0, 1, 0o1600)
    libc.msgget(0, 0o1600)
    libc.mq_open(b"/left", os.O_CREAT | os.O_RDWR, 0o600, None)  # a POSIX message queue
    for folder in ("/tmp", "/dev/shm"):
        os.makedirs(f"{folder}/left/locked", exist_ok=True)
        os.chmod(f"{folder}/left", 0)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(3600)
        os._exit(0)
    for sent in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(1, sent)
        except OSError:
            pass

    def act(observation, configuration):
        return random.choice([c for c in range(7) if observation["board"][c] == 0])
    """
)


#: Where the servers run: each sandbox.
SANDBOXES = ["process", "docker"]


def servers_recorded(
    kind: str, sandbox_root: Path, request: pytest.FixtureRequest, **options: Any
) -> ServersRecorded | DockerServersRecorded:
    if kind == "docker":
        image = request.getfixturevalue("docker_base_image")
        label = {"arena.test": f"{os.getpid()}-{request.node.name}"[:120]}
        return DockerServersRecorded(sandbox_root, image=image, labels=label, **options)
    sandbox = ServersRecorded(sandbox_root, **options)
    if sandbox.fork_servers is None:
        sandbox.close()
        require(
            False, f"agents are not confined here, so none is forked: {sandbox.unconfined_reason}"
        )
    return sandbox


@pytest.fixture(params=SANDBOXES)
def pooled(
    request: pytest.FixtureRequest, sandbox_root: Path
) -> Iterator[ServersRecorded | DockerServersRecorded]:
    sandbox = servers_recorded(request.param, sandbox_root, request, pool_size=4)
    yield sandbox
    sandbox.close()
    assert sandbox.flush(REMOVAL_BOUND)
    # No agent's folder is left (the process sandbox's in the root, the docker sandbox's
    # under docker/), only the SDK's copy.
    left = [path.name for path in sandbox_root.iterdir() if path.name != "docker"]
    if (sandbox_root / "docker").is_dir():
        left += [path.name for path in (sandbox_root / "docker").iterdir()]
    assert [name for name in left if not name.startswith("sdk-")] == []
    assert not any(server_runs(server) for server in sandbox.servers)
    if isinstance(sandbox, DockerServersRecorded):
        assert survivors(sandbox.container_ids) == []


def intruder(root: Path) -> AgentSource:
    folder = root / "intruder"
    folder.mkdir()
    os.chmod(root, 0o755)
    (folder / "main.py").write_text(INTRUDER)
    return AgentSource.from_path(folder)


def seen(agent: ForkedAgent) -> dict[str, Any]:
    line = next(line for line in agent.log().splitlines() if line.startswith("SEEN "))
    found: dict[str, Any] = eval(line[5:])
    return found


def forked_in_turn(
    sandbox: ProcessSandbox | DockerSandbox, source: AgentSource, count: int
) -> list[ForkedAgent]:
    """``count`` agents of ``source`` from the pool, each closed (and its server clean
    again) before the next is taken: every one after the first two comes from a server
    that forked one of them before."""
    limits = SandboxLimits()
    sandbox.start(source, limits=limits, label="p1").close()
    agents = []
    for _ in range(count):
        assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)
        assert sandbox.flush(60)
        running = sandbox.start(source, limits=limits, label="p1")
        assert isinstance(running, ForkedAgent) and running.warm
        agents.append(running)
        running.close()
        assert sandbox.flush(60)
    return agents


def test_an_agent_forked_after_another_finds_a_fresh_sandbox(pooled, tmp_path):
    agents = forked_in_turn(pooled, intruder(tmp_path), 4)
    servers = [agent.server for agent in agents]
    # A server forked more than one of them (else nothing here was tried).
    again = [forked for index, forked in enumerate(agents) if forked.server in servers[:index]]
    assert again
    for forked in agents:
        found = seen(forked)
        # Nothing left by the one before: no file, no process but the server (PID 1)
        # and itself; the server cannot be read, and a draw is the agent's own.
        assert found["tmp"] == [] and found["shm"] == [] and found["ipc"] == [0, 0, 0]
        assert found["mqueue"] == []
        assert found["pids"] == sorted({1, found["me"]})
        assert found["server_environ"] is False and found["server_memory"] is False
    draws = [seen(forked)["draw"] for forked in agents]
    assert len(set(draws)) == len(draws)
    # Its daemons are gone, and the servers it tried to stop still fork (the last one
    # came from a server an intruder had tried).
    assert all(not forked.server.broken for forked in again)


def test_the_servers_agents_are_confined_and_leave_nothing_when_it_closes(
    pooled, tmp_path, needs_root
):
    agents = forked_in_turn(pooled, intruder(tmp_path), 3)
    if isinstance(pooled, DockerServersRecorded):
        # Each server in a container of its own (the image's user): none of their
        # processes is left once the sandbox is closed.
        assert len({agent.server for agent in agents}) >= 2
        pooled.close()
        assert survivors(pooled.container_ids) == []
        return
    uids = {agent.uid for agent in agents if agent.uid is not None}
    assert len(uids) >= 2  # (a server's, and the one of the server after it)
    pooled.close()
    assert sandbox_processes(uids) == []


def test_a_server_that_dies_is_replaced(pooled):
    source = player("connect_four/random_player.py")
    first = run_duel("connect_four", (source, source), backend=pooled, seed=1, matches=2)
    assert pooled.pool is not None and pooled.pool.wait_until_ready(60)
    assert pooled.flush(60)
    # Every server, killed by its process (PID 1 of its namespace): their namespaces end,
    # and with them the agents they forked for the pool.
    assert pooled.servers
    ends = []
    for server in pooled.servers:
        pid = server.agent_pid()
        assert pid is not None  # (a worker on this host sees its servers)
        ends.append(os.pidfd_open(pid))
        os.kill(pid, signal.SIGKILL)
    # Gone, and everything in their namespaces (PID 1's exit waits for the rest), as
    # servers that died some time before the next duel.
    for end in ends:
        assert select.select([end], [], [], 60)[0]
        os.close(end)

    again = run_duel("connect_four", (source, source), backend=pooled, seed=2, matches=2)
    assert pooled.pool.wait_until_ready(60)
    third = run_duel("connect_four", (source, source), backend=pooled, seed=3, matches=2)

    # The duel that met the dead servers' agents in the pool started others instead: no
    # agent is charged a crash the machine made.
    for result in (first, again, third):
        assert not result.infrastructure_error
        assert not [fault for match in result.matches for fault in match.faults]
        assert result.restarts == [0, 0]
    assert pooled.pool.stats["ended"] >= 1
    assert len(pooled.servers) > 2  # new ones were started


@pytest.mark.parametrize("kind", SANDBOXES)
def test_a_server_idle_past_the_pools_idle_time_is_killed(sandbox_root, request, kind):
    sandbox = servers_recorded(kind, sandbox_root, request, pool_size=4, pool_idle_seconds=0.5)
    try:
        source = player("connect_four/random_player.py")
        run_duel("connect_four", (source, source), backend=sandbox, seed=1, matches=2)
        # The agents the duel's starts asked the pool for next are started by then (on a
        # loaded machine a server may come up only after the duel's are gone): every
        # server there will be is recorded.
        assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)
        assert sandbox.servers
        # Nothing asks for a server again: each is killed on its own (a generous wait,
        # for a loaded machine; it is over in about a second).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            server_runs(server) for server in sandbox.servers
        ):
            time.sleep(0.1)
        # Discarded by then; a busy engine may still be removing a container.
        assert sandbox.flush(REMOVAL_BOUND)
        running = [server for server in sandbox.servers if server_runs(server)]
        assert not running, left_running(sandbox, running)
    finally:
        sandbox.close()
        sandbox.flush(REMOVAL_BOUND)


def left_running(sandbox: ProcessSandbox | DockerSandbox, running: list[Any]) -> str:
    """What the sandbox still holds, to say why a server was not discarded."""
    servers, pool = sandbox.fork_servers, sandbox.pool
    assert servers is not None and pool is not None
    return (
        f"{len(running)} of {len(sandbox.servers)} servers run; closed by the sandbox: "
        f"{[getattr(server, '_closed', None) for server in running]}; idle: "
        f"{ {str(key): len(idle) for key, idle in servers._idle.items()} }; cleaning: "
        f"{ {str(key): count for key, count in servers._cleaning.items()} }; pool: "
        f"{ {str(key): len(ready) for key, ready in pool._ready.items()} }, {dict(pool.stats)}"
    )


class IdleServer:
    """What ``ForkServers`` keeps of a server: its key, since when it is idle, its discard."""

    def __init__(self, key: str, idle_since: float) -> None:
        self.key = key
        self.idle_since = idle_since
        self.discarded = False

    def discard(self) -> None:
        self.discarded = True


def test_idle_servers_are_bounded_per_key_and_in_all_oldest_first():
    # (IdleServer stands in for a ForkServer: the ignores below say so to mypy.)
    servers = ForkServers(idle_seconds=3600, most=3)
    now = time.monotonic()
    kept = [IdleServer(key, now + age) for key, age in (("a", 1), ("a", 2), ("b", 3))]
    for server in kept:
        servers.cleaning(server)  # type: ignore[arg-type]
        servers.give_back(server)  # type: ignore[arg-type]
    third_of_a, newest = IdleServer("a", now + 4), IdleServer("c", now + 5)
    for server in (third_of_a, newest):
        servers.cleaning(server)  # type: ignore[arg-type]
        servers.give_back(server)  # type: ignore[arg-type]

    assert third_of_a.discarded  # two per key at most
    assert kept[0].discarded and not newest.discarded  # three in all: the oldest goes
    assert servers.take("a") is kept[1] and servers.take("a") is None
    servers.close()
    assert kept[2].discarded and newest.discarded


def expiry_timers(servers: ForkServers) -> list[threading.Thread]:
    """The live timers of ``servers`` (another sandbox of this test process may keep its
    own)."""
    return [
        thread
        for thread in threading.enumerate()
        if thread.name == EXPIRY_TIMER
        and getattr(getattr(thread, "function", None), "__self__", None) is servers
    ]


def test_one_timer_waits_for_the_idle_servers_however_many_are_given_back():
    # A worker playing short duels gives a server back twice a duel: a timer each kept
    # two hundred threads alive after a hundred duels.
    servers = ForkServers(idle_seconds=3600, most=1000)
    for index in range(200):
        server = IdleServer(f"key-{index}", time.monotonic())
        servers.cleaning(server)  # type: ignore[arg-type]
        servers.give_back(server)  # type: ignore[arg-type]
    assert len(expiry_timers(servers)) == 1
    servers.close()
    for timer in expiry_timers(servers):
        timer.join(60)
    assert expiry_timers(servers) == []


def test_each_idle_server_is_discarded_in_its_own_time_by_the_one_timer():
    servers = ForkServers(idle_seconds=0.2, most=10)
    now = time.monotonic()
    # The second is idle from later on: the timer set for the first is set again for it.
    first, second = IdleServer("a", now), IdleServer("b", now + 0.5)
    for server in (first, second):
        servers.cleaning(server)  # type: ignore[arg-type]
        servers.give_back(server)  # type: ignore[arg-type]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not second.discarded:
        time.sleep(0.05)
    assert first.discarded and second.discarded
    servers.close()


def test_where_the_agents_processes_are_not_seen_a_server_goes_only_with_an_agent_to_kill(
    docker_unseen_backend, tmp_path
):
    # A worker in a container of its own (compose's) cannot signal its agents' processes.
    honest = docker_unseen_backend.start(
        agent("random_agent.py"), limits=SandboxLimits(), label="p1"
    )
    assert isinstance(honest, ForkedAgent) and honest.pid is None
    # Its requests end (as after ``bye``): the SDK exits by itself, whenever that is.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, honest.request_fd)
    os.close(null)
    honest.wait_for_exit(REMOVAL_BOUND)
    honest.close()
    assert docker_unseen_backend.flush(REMOVAL_BOUND)
    # It ended by itself: its server is clean, kept for the next duel.
    assert not honest.server.broken and server_runs(honest.server.agent)

    (tmp_path / "sleeper").mkdir()
    os.chmod(tmp_path, 0o755)
    (tmp_path / "sleeper" / "main.py").write_text("import time\ntime.sleep(3600)\n")
    sleeper = docker_unseen_backend.start(
        AgentSource.from_path(tmp_path / "sleeper"), limits=SandboxLimits(), label="p1"
    )
    try:
        assert isinstance(sleeper, ForkedAgent) and sleeper.pid is None
    finally:
        sleeper.close()
    # One that does not end: killed with its server's container at once.
    assert sleeper.server.broken
    assert docker_unseen_backend.flush(REMOVAL_BOUND)
    assert not server_runs(sleeper.server.agent)


#: Takes memory a mebibyte at a time at its first move, until the sandbox stops it.
MEMORY_HOG = textwrap.dedent(
    """
    hoard = []

    def act(observation, configuration):
        while True:
            hoard.append(b"x" * (1 << 20))
    """
)


@pytest.mark.parametrize("hog_seat", [1, 2], ids=["hog-first", "hog-second"])
def test_a_forked_agent_over_its_memory_is_charged_with_it(pooled, tmp_path, hog_seat):
    folder = tmp_path / "hog"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    (folder / "main.py").write_text(MEMORY_HOG)
    sources = [agent("random_agent.py")] * 2
    sources[hog_seat - 1] = AgentSource.from_path(folder)
    limits = SandboxLimits(memory_mb=256)
    started = record_starts(pooled)
    duel = dict(backend=pooled, limits=limits, startup_time=60.0, move_time=60.0)
    run_duel("connect_four", sources, seed=1, matches=1, **duel)
    assert pooled.pool is not None and pooled.pool.wait_until_ready(60)
    assert pooled.flush(60)
    started.clear()

    # Forked now, by a server the duel before started: the kernel's kill in a container
    # is told from another by the server, bubblewrap's limit by the agent's own error.
    result = run_duel("connect_four", sources, seed=2, matches=2, **duel)

    assert not result.infrastructure_error
    assert started and all(isinstance(running, ForkedAgent) for running in started)
    faults = [[(f.player, f.kind.value) for f in match.faults] for match in result.matches]
    assert faults == [[(hog_seat, "memory_exceeded")]] * 2


#: What an upload may hold to take its fork server over, were the server to import from
#: the agent's folder: the SDK's package, and modules of the standard library it loads.
SHADOWS = {
    "arena_sdk/__init__.py": "raise SystemExit('the SDK of the upload')\n",
    "arena_sdk/fork_server.py": "raise SystemExit('the fork server of the upload')\n",
    "socket.py": "raise SystemExit('the socket module of the upload')\n",
    "stat.py": "raise SystemExit('the stat module of the upload')\n",
}


def test_a_server_loads_nothing_of_its_agents_folder(pooled, tmp_path):
    folder = tmp_path / "shadows"
    for name, text in {**SHADOWS, "main.py": INTRUDER}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    os.chmod(tmp_path, 0o755)

    agents = forked_in_turn(pooled, AgentSource.from_path(folder), 2)

    # Its servers are the SDK's: they fork, clean up after each child and fork again, and
    # each child is the agent (which finds its folder first on sys.path, as when fresh).
    assert all(not forked.server.broken for forked in agents)
    assert all(seen(forked)["tmp"] == [] for forked in agents)


#: Leaves in /tmp a tree whose paths are longer than the kernel takes (4,096 bytes): no
#: server can remove it by name.
BEYOND_PATH_MAX = textwrap.dedent(
    """
    import os, sys
    print("SEEN", repr({"tmp": sorted(os.listdir("/tmp"))}), file=sys.stderr, flush=True)
    os.chdir("/tmp")
    for _ in range(24):
        os.mkdir("d" * 250)
        os.chdir("d" * 250)

    def act(observation, configuration):
        return [c for c in range(7) if observation["board"][c] == 0][0]
    """
)


def test_a_server_that_cannot_empty_its_scratch_is_not_used_again(pooled, tmp_path):
    folder = tmp_path / "deep"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    (folder / "main.py").write_text(BEYOND_PATH_MAX)

    agents = forked_in_turn(pooled, AgentSource.from_path(folder), 3)

    # Each found /tmp empty: no server forked again after such a child.
    assert all(seen(forked)["tmp"] == [] for forked in agents)
    assert len({forked.server for forked in agents}) == len(agents)


#: Leaves its server work: every file in /tmp is one the server removes (its own CPU
#: time) before its next child.
LITTERER = textwrap.dedent(
    """
    import random
    from arena_sdk import Agent

    for number in range(20000):
        open(f"/tmp/litter-{number}", "w").close()


    class Litterer(Agent):
        def act(self, turn):
            return random.choice(turn.legal_actions)
    """
)


@pytest.mark.parametrize("kind", SANDBOXES)
def test_a_server_retires_between_two_children_before_its_cpu_time_limit(
    sandbox_root, request, tmp_path, kind
):
    # A server's own CPU time (its forks and clean-ups) adds up over its life against the
    # agent's CPU-time limit, at which the kernel would kill it: in the middle of a fork
    # too, and with it that child. It goes at half of it instead, between two children.
    sandbox = servers_recorded(kind, sandbox_root, request, pool_size=2)
    folder = tmp_path / "litterer"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    (folder / "main.py").write_text(LITTERER)
    source = AgentSource.from_path(folder)
    limits = SandboxLimits(cpu_seconds=1)
    try:
        sandbox.start(source, limits=limits, label="p1").close()
        ended: list[Any] = []
        # Each child costs its server about a tenth of a second here: until one retires.
        for _ in range(60):
            assert sandbox.pool is not None and sandbox.pool.wait_until_ready(60)
            assert sandbox.flush(60)
            running = sandbox.start(source, limits=limits, label="p1")
            # Every one of them handed out from the pool, forked and running.
            assert isinstance(running, ForkedAgent) and running.warm
            assert not running.has_ended()
            running.close()
            assert sandbox.flush(60)
            ended = [server for server in sandbox.servers if not server_runs(server)]
            if ended:
                break
        # A server ended, and it retired, as its log says: it was not killed at its limit.
        assert ended
        for server in ended:
            assert "fork server: retired" in server.log(), server.log()
    finally:
        sandbox.close()
        assert sandbox.flush(REMOVAL_BOUND)


#: Leaves orphans while it runs: processes whose parent has exited, so that the server
#: (PID 1 of the namespace) is theirs and must reap them once they end; then says how many
#: zombies it saw, and how many were left after waiting for the server (a minute at most).
ORPHANER = textwrap.dedent(
    """
    import os, sys, time

    def zombies():
        found = 0
        for name in os.listdir("/proc"):
            try:
                state = open(f"/proc/{name}/stat").read().split(")")[-1].split()[0]
                found += name.isdigit() and state == "Z"
            except OSError:
                pass
        return found

    for _ in range(10):
        if os.fork() == 0:
            if os.fork() == 0:
                os._exit(0)  # an orphan from birth: its parent is already gone, or about to
            os._exit(0)
        os.wait()
    deadline = time.monotonic() + 60
    while zombies() and time.monotonic() < deadline:
        time.sleep(0.01)
    print("ZOMBIES LEFT", zombies(), file=sys.stderr, flush=True)

    def act(observation, configuration):
        return 0
    """
)


def test_a_server_reaps_the_orphans_of_a_child_that_still_runs(pooled, tmp_path):
    # While it waits for its child the server also reads the referee's requests (to move
    # the child to its duel's CPU): the orphans that end meanwhile, its own as PID 1, must
    # not stay zombies (each holds a process of the agent's limit) until the child ends.
    folder = tmp_path / "orphaner"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    (folder / "main.py").write_text(ORPHANER)
    source = AgentSource.from_path(folder)
    limits = SandboxLimits()
    pooled.start(source, limits=limits, label="p1").close()
    assert pooled.pool is not None and pooled.pool.wait_until_ready(60)
    assert pooled.flush(60)
    running = pooled.start(source, limits=limits, label="p1")
    try:
        assert isinstance(running, ForkedAgent) and running.warm
        channel = Channel(running, max_message_bytes=1 << 16)
        deadline = time.monotonic() + 120
        channel.send({"type": "hello", "protocol": protocol.PROTOCOL_VERSION}, deadline)
        # Its module has run (it answers once loaded), the child still runs.
        assert channel.receive(deadline)["type"] == "ready"
        assert "ZOMBIES LEFT 0" in running.log(), running.log()
    finally:
        running.close()
        assert pooled.flush(60)


def test_a_server_takes_a_late_request_to_move_a_child_that_has_ended(pooled, tmp_path):
    # The referee asks for a child's move when the child may have ended already (a duel's
    # end gives its agents back every CPU): the server, idle again by then, reads it as
    # news of nothing, and forks the next child as usual.
    limits = SandboxLimits()
    source = agent("random_agent.py")
    pooled.start(source, limits=limits, label="p1").close()
    assert pooled.pool is not None and pooled.pool.wait_until_ready(60)
    assert pooled.flush(60)
    first = pooled.start(source, limits=limits, label="p1")
    assert isinstance(first, ForkedAgent) and first.server.pins
    server = first.server
    first.close()
    assert pooled.flush(60)
    assert server.pin_child({0})  # to a server whose child has ended
    forked = [first]
    for _ in range(4):  # until that server forks again (two serve the key by turns)
        assert pooled.pool.wait_until_ready(60)
        assert pooled.flush(60)
        running = pooled.start(source, limits=limits, label="p1")
        forked.append(running)
        running.close()
        assert pooled.flush(60)
        if isinstance(running, ForkedAgent) and running.server is server:
            break
    assert forked[-1].server is server and not server.broken


@pytest.mark.parametrize(("said", "pins"), [([PINS, b"X0"], True), ([b"X0"], False), ([], False)])
def test_the_referee_learns_whether_a_server_moves_its_children_and_takes_nothing_else(said, pins):
    # A server of this SDK says PINS first; one of an older image's does not, and what it
    # says first (its child's end, if that came early) is left for its reader.
    control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with control, server_end:
        for message in said:
            server_end.send(message)
        server = ForkServer("key", agent=None, control=control)  # type: ignore[arg-type]
        assert server._said_it_pins() is pins
        assert server._answer(0) == (b"X0" if said else b"")
