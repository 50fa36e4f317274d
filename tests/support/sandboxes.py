"""Sandboxes for the referee's and the sandboxes' tests: fixtures that check nothing is
left behind, the test agents (``tests/referee/agents``), and a duel of one of them against
a well-behaved agent with the checks of who was blamed.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.duel import run_duel
from referee.results import DuelResult, Outcome
from sandboxes import docker_engine, fork_servers
from sandboxes.base import AgentSource, EntryKind, SandboxBackend, SandboxLimits
from sandboxes.confinement import probe
from sandboxes.cpus import claim_cpu
from sandboxes.docker import DockerSandbox
from sandboxes.docker_agent import DockerAgent, ServerContainer
from sandboxes.docker_engine import Container
from sandboxes.fork_servers import ForkedAgent, ServerHolder
from sandboxes.process import ProcessAgent, ProcessSandbox
from sandboxes.process_users import UID_BASE, UID_COUNT, UID_LOCKS
from sandboxes.warm_pool import WarmKey
from tests.support.docker import (
    REMOVAL_BOUND,
    containers_left_after_removal,
    docker_base_image,
)
from tests.support.require import require

__all__ = ["docker_base_image"]

AGENTS = Path(__file__).resolve().parents[1] / "referee" / "agents"
PLAYERS = Path(__file__).resolve().parents[2] / "example_players"


def sandbox_processes(uids: set[int] | None = None) -> list[tuple[int, int, str]]:
    """(pid, uid, name) of live processes under a sandbox user id (or one of ``uids``)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        uid = int(fields.get("Uid", "-1").split()[0])
        ours = uid in uids if uids is not None else UID_BASE <= uid < UID_BASE + UID_COUNT
        if ours and not fields["State"].startswith("Z"):
            found.append((int(entry.name), uid, fields["Name"].strip()))
    return found


def leftover_processes(uids: set[int]) -> list[str]:
    """The processes left under ``uids`` once the agents that ran under them are closed,
    each described (``described``). Each user id's lock (``UserPool``'s) is taken first, so
    that an agent another referee (another test process) has started under that id since
    is not taken for a leftover; an id whose lock another referee holds now is skipped."""
    found = []
    for uid in sorted(uids):
        fd = os.open(UID_LOCKS / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            found += [described(pid, uid, name) for pid, uid, name in sandbox_processes({uid})]
        finally:
            os.close(fd)
    return found


def described(pid: int, uid: int, name: str) -> str:
    """A leftover process as a failure should show it: its state, its parent, its age,
    whether it shares this process's PID namespace, and its command line."""

    def read(*parts: str) -> str:
        try:
            return Path("/proc", str(pid), *parts).read_text(errors="replace")
        except OSError as error:
            return f"({error.strerror})"

    fields = dict(line.split(":\t", 1) for line in read("status").splitlines() if ":\t" in line)
    ticks = os.sysconf("SC_CLK_TCK")
    try:
        started = int(read("stat").rsplit(")", 1)[1].split()[19]) / ticks
        age = f"{float(Path('/proc/uptime').read_text().split()[0]) - started:.1f} s old"
    except (IndexError, ValueError):
        age = "age unknown"
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
        ours = " (ours)" if namespace == os.readlink("/proc/self/ns/pid") else ""
    except OSError:
        namespace, ours = "unknown", ""
    command = read("cmdline").replace("\0", " ").strip()
    return (
        f"pid {pid} {name} (uid {uid}): state {fields.get('State', '?').strip()}, parent "
        f"{fields.get('PPid', '?').strip()}, {age}, PID namespace {namespace}{ours}: {command}"
    )


@pytest.fixture
def sandbox_root() -> Iterator[Path]:
    # Not pytest's tmp_path: sandbox users must be able to traverse the parents.
    root = Path(tempfile.mkdtemp(prefix="arena-test-sandboxes-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


class RecordingSandbox(ProcessSandbox):
    """Remembers the user ids its agents ran under, to check none is left running."""

    def __init__(self, root: Path, **options: Any) -> None:
        super().__init__(root, **options)
        self.uids: set[int] = set()

    def start(self, source, *, limits, label):
        running = self._started(source, limits=limits, label=label)
        if running.uid is not None:
            self.uids.add(running.uid)
        return running

    def _started(self, source, *, limits, label):
        return super().start(source, limits=limits, label=label)

    def agents_left(self) -> list[tuple[int, int, str]]:
        """What still runs under its agents' user ids."""
        return sandbox_processes(self.uids)


class ServersRecorded(ProcessSandbox):
    """A process sandbox that remembers the fork servers it started."""

    def __init__(self, root: Path, **options: Any) -> None:
        super().__init__(root, **options)
        self.servers: list[ProcessAgent] = []

    def _launch(self, source, **options):
        running = super()._launch(source, **options)
        if options.get("control") is not None:
            self.servers.append(running)
        return running


class ForkingSandbox(RecordingSandbox, ServersRecorded):
    """Every Python agent forked by its fork server (``sandboxes.fork_servers``), as a
    worker's warm pool hands them out after an agent's first duel; executables start
    fresh, as there."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, pool_size=2)
        #: Python agents started fresh all the same (none should be).
        self.not_forked = 0

    def _started(self, source, *, limits, label):
        running, forked = as_the_pool_hands_it_out(self, WarmKey.of(source, limits, label))
        self.not_forked += not forked
        return running

    def agents_left(self) -> list[tuple[int, int, str]]:
        """What still runs under its agents' user ids but its fork servers (bubblewrap and
        the server), which wait for the next duel."""
        servers = {
            pid for server in self.servers for pid in (server.process.pid, server.agent_pid())
        }
        return [found for found in super().agents_left() if found[0] not in servers]


def as_the_pool_hands_it_out(
    sandbox: ProcessSandbox | DockerSandbox, key: WarmKey
) -> tuple[Any, bool]:
    """``key``'s agent as a worker's warm pool hands it out after the agent's first duel
    (forked by a server of it, unless an executable), and whether it is so (a Python
    agent that was not forked: False)."""
    running = sandbox._start_warm(key)
    running.warm = True
    return running, key.source.kind is not EntryKind.PYTHON or isinstance(running, ForkedAgent)


@pytest.fixture
def backend(sandbox_root: Path) -> Iterator[RecordingSandbox]:
    yield from checked_sandbox(sandbox_root, forked=False)


@pytest.fixture
def forked_backend(sandbox_root: Path) -> Iterator[RecordingSandbox]:
    """The process sandbox with its Python agents forked by fork servers."""
    yield from checked_sandbox(sandbox_root, forked=True)


def checked_sandbox(sandbox_root: Path, *, forked: bool) -> Iterator[RecordingSandbox]:
    """A process sandbox whose agents start fresh, or are forked by fork servers; once the
    test is done, checks that nothing of them is left: no folder, no process."""
    sandbox = ForkingSandbox(sandbox_root) if forked else RecordingSandbox(sandbox_root)
    if forked and sandbox.fork_servers is None:
        sandbox.close()
        require(
            False, f"agents are not confined here, so none is forked: {sandbox.unconfined_reason}"
        )
    yield sandbox
    # Of the forked kind, every Python agent was forked (executables start fresh there).
    assert not isinstance(sandbox, ForkingSandbox) or not sandbox.not_forked, (
        f"{sandbox.not_forked} Python agents were started fresh"
    )
    sandbox.close()
    # close() waits its own 10 s for the sweeps, which run in the background; a loaded
    # machine may take longer, and what a test checks is that they all happen.
    assert sandbox.flush(REMOVAL_BOUND), "an agent's sweep is still running"
    # The machine is left clean: no agent folder and no agent process survive.
    leftovers = [path.name for path in sandbox_root.iterdir() if not path.name.startswith("sdk-")]
    assert leftovers == []
    assert leftover_processes(sandbox.uids) == []


def hostile(behaviour: str, at: int = 1, **variables: str) -> AgentSource:
    environment = {"HOSTILE": behaviour, "HOSTILE_AT": str(at), **variables}
    return AgentSource.from_path(AGENTS / "hostile", environment)


def agent(name: str) -> AgentSource:
    return AgentSource.from_path(AGENTS / name)


def reports_cpus(*, wait_for_one_cpu: bool = False) -> AgentSource:
    """The agent that logs its CPUs at every move (``cpus_seen``); waiting first, at its
    first move, until a sandbox that pins in the background has pinned it."""
    return AgentSource.from_path(
        AGENTS / "reports_cpus.py", {"WAIT_FOR_ONE_CPU": "1"} if wait_for_one_cpu else {}
    )


def cpus_seen(log: str) -> set[str]:
    """The CPU lists ``reports_cpus`` logged, such as ``{"0"}`` or ``{"0,1"}``."""
    return set(re.findall(r"^cpus (\S+)$", log, re.M))


def player(relative: str) -> AgentSource:
    return AgentSource.from_path(PLAYERS / relative)


def duel_with_random_agent(
    backend: SandboxBackend, source: AgentSource, **settings: Any
) -> DuelResult:
    """A Connect Four duel (seed 7): the well-behaved random agent is player 1, ``source``
    player 2; ``settings`` are ``run_duel``'s (matches, clocks)."""
    return run_duel(
        "connect_four", (agent("random_agent.py"), source), backend=backend, seed=7, **settings
    )


def fault_kinds(result: DuelResult, player_number: int = 2) -> list[str]:
    """The kinds of the faults charged to a player, match after match."""
    return [
        fault.kind.value
        for match in result.matches
        for fault in match.faults
        if fault.player == player_number
    ]


def assert_blamed_on_the_second_player(result: DuelResult) -> None:
    """Each of the three matches was player 2's fault, and player 1's win; nothing was the
    platform's."""
    assert not result.infrastructure_error
    document = result.as_json()
    assert document["other_errors"] == 0
    assert document["errors"][0] == 0
    assert document["errors"][1] == document["num_matches"] == 3
    assert document["wins"][0] == 3
    assert document["result"] == Outcome.PLAYER_1_WIN


@pytest.fixture
def needs_root() -> None:
    require(
        os.geteuid() == 0,
        "not root: agents get their own user ids and network namespace only when the "
        "referee runs as root, so this isolation cannot be tested",
    )


@pytest.fixture
def confined() -> None:
    """Skips (or fails, with ``ARENA_REQUIRE_ALL``) where the process sandbox cannot
    confine agents (``sandboxes.confinement.probe`` says why)."""
    found = probe()
    require(found.confined, f"agents cannot be confined here: {found.reason}")


def processes_in_containers(container_ids: set[str]) -> list[tuple[int, str]]:
    """(pid, name) of live host processes in any of these containers (by their cgroup).

    By cgroup rather than by the agents' user id: another test session on the same
    engine runs agents under that user id too.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cgroups = Path(entry.path, "cgroup").read_text()
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        if not any(container_id in cgroups for container_id in container_ids):
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if not fields.get("State", "").startswith("Z"):
            found.append((int(entry.name), fields.get("Name", "").strip()))
    return found


def survivors(container_ids: set[str], grace: float = 2.0) -> list[tuple[int, str]]:
    """Processes of these containers still alive after ``grace`` seconds (a killed
    process may take a moment to free a large memory)."""
    deadline = time.monotonic() + grace
    while (found := processes_in_containers(container_ids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


class RecordingDockerSandbox(DockerSandbox):
    """Remembers its containers, to check afterwards that none of their processes survive."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.container_ids: set[str] = set()

    def start(self, source, *, limits, label):
        running = super().start(source, limits=limits, label=label)
        container = container_of(running)
        assert container.id is not None  # a started container has its id
        self.container_ids.add(container.id)
        return running


def container_of(running: DockerAgent | ForkedAgent) -> Container:
    """The container an agent of the docker sandbox runs in (its own, or its server's)."""
    if isinstance(running, ForkedAgent):
        assert isinstance(running.server.agent, ServerContainer)
        return running.server.agent.container
    return running.container


@pytest.fixture
def two_cpus() -> None:
    """Skips where this process may run on one CPU only (nothing to share)."""
    count = len(os.sched_getaffinity(0))
    require(count >= 2, f"this machine lets tests run on {count} CPU: nothing to share")


@pytest.fixture
def cpus_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's duels claim CPUs among themselves only. The host's locks are shared with
    every duel other test processes play meanwhile (CI's lanes, on a loaded machine), and a
    duel that finds every CPU taken is rightly not pinned."""
    locks = tmp_path / "cpus"
    monkeypatch.setattr("referee.duel.claim_cpu", lambda: claim_cpu(locks))


@pytest.fixture
def docker_backend(
    docker_base_image: str, sandbox_root: Path, request: pytest.FixtureRequest
) -> Iterator[DockerSandbox]:
    """A docker sandbox whose containers carry this test's label; checks it leaves nothing."""
    yield from checked_docker(RecordingDockerSandbox, docker_base_image, sandbox_root, request)


class DockerServersRecorded(RecordingDockerSandbox):
    """A docker sandbox that remembers the fork servers' containers it started."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.servers: list[ServerContainer] = []

    def _launch_server(self, key, control):
        running = super()._launch_server(key, control)
        assert running.container.id is not None
        self.container_ids.add(running.container.id)
        self.servers.append(running)
        return running


def record_starts(sandbox: ProcessSandbox | DockerSandbox) -> list[Any]:
    """The agents ``sandbox`` starts from now on, in order (its ``start`` wrapped)."""
    started: list[Any] = []
    start = sandbox.start

    def recorded(source: AgentSource, *, limits: SandboxLimits, label: str) -> Any:
        running = start(source, limits=limits, label=label)
        started.append(running)
        return running

    sandbox.start = recorded  # type: ignore[method-assign]
    return started


def server_runs(server: ServerHolder) -> bool:
    """Whether a fork server still runs (its bubblewrap process, or its container)."""
    if isinstance(server, ServerContainer):
        state = docker_engine.container_state(server.container)
        return state is not None and state.running
    assert isinstance(server, ProcessAgent)
    return server.process.poll() is None


class ForkingDockerSandbox(RecordingDockerSandbox):
    """The docker sandbox with every Python agent forked by its fork server, in a
    container kept for it (as a worker's warm pool hands them out); executables start in
    containers of their own, as there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, pool_size=2, **kwargs)
        self.not_forked = 0

    def start(self, source, *, limits, label):
        running, forked = as_the_pool_hands_it_out(self, self._key(source, limits, label))
        self.not_forked += not forked
        container = container_of(running)
        assert container.id is not None
        self.container_ids.add(container.id)
        return running


@pytest.fixture
def docker_forked_backend(
    docker_base_image: str, sandbox_root: Path, request: pytest.FixtureRequest
) -> Iterator[DockerSandbox]:
    """The docker sandbox with its Python agents forked by fork servers; checks it leaves
    nothing, as ``docker_backend``."""
    yield from checked_docker(ForkingDockerSandbox, docker_base_image, sandbox_root, request)


@pytest.fixture
def docker_unseen_backend(
    docker_base_image: str,
    sandbox_root: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[DockerSandbox]:
    """``docker_forked_backend`` as a worker in a container of its own has it (the compose
    stack's): no process of the agents' containers is seen from the worker, so a server
    and its children report process id 0."""
    reported = fork_servers.reported_pid
    monkeypatch.setattr(DockerSandbox, "_peer_pid", staticmethod(lambda connection: None))
    monkeypatch.setattr(
        fork_servers, "reported_pid", lambda report: None if reported(report) is None else 0
    )
    yield from checked_docker(ForkingDockerSandbox, docker_base_image, sandbox_root, request)


def checked_docker(
    kind: type[RecordingDockerSandbox],
    image: str,
    sandbox_root: Path,
    request: pytest.FixtureRequest,
) -> Iterator[DockerSandbox]:
    """A docker sandbox of ``kind`` whose containers carry this test's label; once the test
    is done, checks that nothing of it is left: no container, folder or process."""
    test_label = {"arena.test": f"{os.getpid()}-{request.node.name}"[:120]}
    backend = kind(sandbox_root, image=image, labels=test_label)
    yield backend
    not_forked = getattr(backend, "not_forked", 0)
    assert not not_forked, f"{not_forked} Python agents were started fresh"
    backend.close()
    # close() waits its connect timeout for the removals, which run in the background; a
    # loaded engine may take longer, and what a test checks is that they all happen.
    assert backend.flush(REMOVAL_BOUND), "a container's removal is still running"
    assert containers_left_after_removal(test_label) == []
    assert list((sandbox_root / "docker").iterdir()) == []
    assert survivors(backend.container_ids) == []


#: The fixture of each sandbox, and of each sandbox's forked agents.
BACKENDS = {
    "process": "backend",
    "forked": "forked_backend",
    "docker": "docker_backend",
    "docker-forked": "docker_forked_backend",
}


@pytest.fixture(params=list(BACKENDS))
def any_backend(request: pytest.FixtureRequest) -> ProcessSandbox | DockerSandbox:
    """Each sandbox in turn, and the process sandbox with its Python agents forked by fork
    servers (as a worker's warm pool hands them out), with the checks of ``backend`` and
    ``docker_backend``."""
    return request.getfixturevalue(BACKENDS[request.param])
