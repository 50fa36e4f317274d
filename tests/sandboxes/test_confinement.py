"""An agent that searches the host finds nothing of the platform or of other agents, in each
sandbox, and its duel goes on normally.

The host is laid out as an attacker would hope to find it: an Arena instance's data (its
SQLite database, a private upload holding a canary) where instances live (``/srv``,
``/home``, ``/tmp``, ``/root``, the checkout's ``var/``), another agent of the same sandbox
running beside it, a secret in the referee's environment, a service on a loopback port and
on an abstract Unix socket. The agent (``tests/referee/agents/searches_the_host.py``) is
told where to look; everything it gets that it must not is ``FOUND`` on its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.duel import run_duel
from sandboxes.base import AgentSource, SandboxedAgent, SandboxLimits
from sandboxes.docker_agent import DockerAgent
from sandboxes.fork_servers import ForkedAgent
from sandboxes.process import PROJECT_DIR, ProcessAgent, ProcessSandbox
from tests.support.require import require
from tests.support.sandboxes import AGENTS, agent, hostile

FAST: dict[str, Any] = {"matches": 2, "move_time": 5.0, "time_bank": 5.0, "startup_time": 120.0}
PLANTED = "planted-by-an-agent"


def _instance(root: Path, secret: str) -> list[Path]:
    """An Arena instance's data under ``root``: its database and a private upload."""
    var = root / "var"
    upload = var / "media" / "revisions" / "tic_tac_toe" / "bob" / "v1"
    upload.mkdir(parents=True)
    (upload / "main.py").write_text(f"# canary {secret}\n")
    with contextlib.closing(sqlite3.connect(var / "arena.sqlite3")) as database:
        database.execute("create table auth_user (password text)")
        database.execute("insert into auth_user values (?)", (f"pbkdf2_sha256$canary{secret}",))
        database.commit()
    # As an instance made before its data was private: readable by anyone.
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return [var, upload, var / "arena.sqlite3"]


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    secret = secrets.token_hex(12)
    made: list[Path] = []
    guesses: list[Path] = []
    for parent in ("/srv", "/home", tempfile.gettempdir(), "/root", str(PROJECT_DIR / "var")):
        with contextlib.suppress(OSError):
            Path(parent).mkdir(parents=True, exist_ok=True)
            root = Path(tempfile.mkdtemp(prefix="arena-instance-", dir=parent))
            made.append(root)
            guesses += _instance(root, secret)
    guesses += [PROJECT_DIR, PROJECT_DIR / "core" / "settings.py", PROJECT_DIR / "var"]
    monkeypatch.setenv("ARENA_TEST_REFEREE_SECRET", secret)
    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as abstract,
    ):
        abstract_name = f"arena-test-{secrets.token_hex(6)}"
        abstract.bind(f"\0{abstract_name}")
        abstract.listen()
        yield {
            "secret": secret,
            "guesses": guesses,
            "port": server.getsockname()[1],
            "abstract": abstract_name,
        }
    for root in made:
        shutil.rmtree(root, ignore_errors=True)


def searcher(host: dict[str, Any], victim: Path) -> AgentSource:
    guesses = [str(path) for path in host["guesses"]] + [str(victim)]
    return AgentSource.from_path(
        AGENTS / "searches_the_host.py",
        {
            "HUNT_SECRET": str(host["secret"]),
            "HUNT_PATHS": ":".join(guesses),
            "HUNT_PORTS": str(host["port"]),
            "HUNT_ABSTRACT": str(host["abstract"]),
        },
    )


def victim_folder(running: SandboxedAgent) -> Path:
    """Where the other agent's files are on the host."""
    if isinstance(running, (ProcessAgent, ForkedAgent)):
        return running.workdir
    assert isinstance(running, DockerAgent)
    return running.folder / "agent"


@pytest.mark.usefixtures("confined")
@pytest.mark.parametrize("seat", [1, 2])
def test_an_agent_that_searches_the_host_finds_nothing_and_plays_on(any_backend, host, seat):
    victim = any_backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="victim")
    try:
        victim_files = victim_folder(victim)
        (victim_files / "canary.txt").write_text(f"canary {host['secret']}\n")
        sources = [agent("random_agent.py")]
        sources.insert(seat - 1, searcher(host, victim_files))

        result = run_duel("tic_tac_toe", tuple(sources), backend=any_backend, seed=3, **FAST)
    finally:
        victim.close()

    log = result.logs[seat - 1]
    assert not result.infrastructure_error
    document = result.as_json()
    assert document["errors"] == [0, 0] and document["other_errors"] == 0
    assert document["num_matches"] == 2
    assert "search done" in log
    assert "FOUND" not in log, log
    # It did try each way out.
    for attempt in ("searched port", "searched socket", "searched writing", "/srv/arena-"):
        assert attempt in log
    for guess in host["guesses"]:
        if Path(guess).is_dir():
            assert not (Path(guess) / PLANTED).exists()


def test_the_search_finds_what_an_unconfined_agent_can_read(host, sandbox_root):
    # The check can fail: the same search in the sandbox with its confinement turned off
    # (run as it was before bubblewrap) finds the instance's database and the canary.
    backend = ProcessSandbox(sandbox_root, confine=False)
    try:
        victim = backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="victim")
        try:
            result = run_duel(
                "tic_tac_toe",
                (searcher(host, victim.workdir), agent("random_agent.py")),
                backend=backend,
                seed=3,
                **FAST,
            )
        finally:
            victim.close()
    finally:
        backend.close()

    assert "FOUND read /srv/arena-instance-" in result.logs[0]
    assert "SQLite format 3" in result.logs[0]


@pytest.mark.usefixtures("confined", "needs_root")
def test_arenas_data_inside_the_agents_runtime_is_covered(host, sandbox_root):
    # An instance installed under /usr/local: its data lies inside the runtime bound into
    # every agent's view, and is covered there with an empty folder.
    secret = str(host["secret"])
    installed = Path(tempfile.mkdtemp(prefix="arena-instance-", dir="/usr/local"))
    try:
        database, upload = _instance(installed, secret)[2], _instance_upload(installed)
        hunted = {**host, "guesses": [database, upload]}
        logs = {}
        for hidden in ([], [installed / "var"]):
            backend = ProcessSandbox(sandbox_root, hidden=hidden)
            try:
                result = run_duel(
                    "tic_tac_toe",
                    (searcher(hunted, sandbox_root), agent("random_agent.py")),
                    backend=backend,
                    seed=3,
                    **FAST,
                )
            finally:
                backend.close()
            logs[bool(hidden)] = result.logs[0]
    finally:
        shutil.rmtree(installed)

    assert f"FOUND read {database}" in logs[False]  # the check can fail
    assert "FOUND" not in logs[True] and "search done" in logs[True]


def _instance_upload(root: Path) -> Path:
    return root / "var" / "media" / "revisions" / "tic_tac_toe" / "bob" / "v1" / "main.py"


WITHOUT_ROOT = """
import json, sys
from pathlib import Path
from referee.duel import run_duel
from sandboxes.base import AgentSource
from sandboxes.process import ProcessSandbox

searcher, root = AgentSource.from_path(sys.argv[1], json.loads(sys.argv[3])), Path(sys.argv[2])
backend = ProcessSandbox(root)
try:
    opponent = AgentSource.from_path(sys.argv[4])
    result = run_duel("tic_tac_toe", (searcher, opponent), backend=backend, seed=3,
                      matches=2, move_time=5.0, time_bank=5.0, startup_time=120.0)
finally:
    backend.close()
print(json.dumps({"confined": backend.confined, "reason": backend.unconfined_reason,
                  "isolate_users": backend.isolate_users, "errors": result.as_json()["errors"],
                  "log": result.logs[0]}))
"""


@pytest.mark.usefixtures("needs_root")
def test_without_root_agents_are_confined_in_a_user_namespace(host):
    # A referee run by an ordinary user (nobody, here): bubblewrap makes a user namespace,
    # and the same search finds nothing of what that user could read itself.
    source = searcher(host, Path("/nonexistent"))
    outcome = _as_nobody(
        WITHOUT_ROOT,
        str(source.path),
        json.dumps(dict(source.environment)),
        str(AGENTS / "random_agent.py"),
    )

    require(outcome["confined"], f"an ordinary user cannot confine agents: {outcome['reason']}")
    assert outcome["isolate_users"] is False
    assert outcome["errors"] == [0, 0]
    assert "search done" in outcome["log"]
    assert "FOUND" not in outcome["log"], outcome["log"]


NOBODY = 65534


def _as_nobody(script: str, *arguments: str) -> dict[str, Any]:
    """Run ``script`` (the Django-free layer on Debian's Python) as the user nobody, with a
    sandbox root of its own as its last argument; what it printed last, as JSON."""
    folder = Path(tempfile.mkdtemp(prefix="arena-test-nobody-"))
    try:
        os.chown(folder, NOBODY, NOBODY)
        site_packages = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
        done = subprocess.run(
            ["/usr/bin/python3", "-c", script, arguments[0], str(folder), *arguments[1:]],
            user=NOBODY, group=NOBODY, extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder),
                 "PYTHONPATH": f"{PROJECT_DIR}:{PROJECT_DIR / 'sdk'}:{site_packages}"},
            cwd=folder, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


INIT_OUT_OF_ITS_GROUP = """
import json, os, sys, time
from pathlib import Path
from referee.channel import Channel
from sandboxes import process, process_agent
from sandboxes.base import AgentSource, SandboxLimits

def parent(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))

def running(pid):
    try:
        return "State:\\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False

backend = process.ProcessSandbox(Path(sys.argv[2]))
source = AgentSource.from_path(sys.argv[1], json.loads(sys.argv[3]))
agent = backend.start(source, limits=SandboxLimits(), label="p1")
channel = Channel(agent, max_message_bytes=1 << 16)
deadline = time.monotonic() + 60
channel.send({"type": "hello", "protocol": 1}, deadline)
while agent.agent_pid() is None and time.monotonic() < deadline:
    time.sleep(0.02)
pid = agent.agent_pid()
init = parent(pid)
# As if the agent had traced the init and moved both out of their process group: the
# group's kill reaches only bubblewrap's outer process.
process_agent.os.killpg = lambda group, number: os.kill(group, number)
agent.close()
while (running(pid) or running(init)) and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({"confined": backend.confined, "reason": backend.unconfined_reason,
                  "outer": agent.process.pid, "init": init,
                  "left": [p for p in (pid, init) if running(p)]}))
"""


@pytest.mark.usefixtures("needs_root")
def test_without_root_close_kills_the_sandboxs_init_even_out_of_its_process_group():
    # Without root the agent shares its user id with the sandbox's init, may trace it, and
    # move it out of the process group that close() kills; nothing sweeps a user id then.
    # close() kills the init by its descriptor, and the kernel the whole PID namespace.
    # An agent that never exits by itself (it sleeps on the handshake, deaf to its input
    # closing): only a kill ends it.
    source = hostile("sleep", at=0)
    outcome = _as_nobody(
        INIT_OUT_OF_ITS_GROUP, str(source.path), json.dumps(dict(source.environment))
    )

    require(outcome["confined"], f"an ordinary user cannot confine agents: {outcome['reason']}")
    assert outcome["init"] != outcome["outer"]
    assert outcome["left"] == []


USES_SHARED_MEMORY = """
import multiprocessing, sys
lock = multiprocessing.Lock()  # a POSIX semaphore, in /dev/shm
with lock:
    print("a lock in its own /dev/shm", file=sys.stderr, flush=True)
from arena_sdk import Agent

class First(Agent):
    def act(self, turn):
        return turn.legal_actions[0]
"""


@pytest.mark.usefixtures("confined")
def test_an_agent_has_a_dev_shm_of_its_own_for_multiprocessing(any_backend, sandbox_root):
    folder = sandbox_root / "uses-shared-memory"
    folder.mkdir()
    (folder / "main.py").write_text(USES_SHARED_MEMORY)

    result = run_duel(
        "tic_tac_toe",
        (AgentSource.from_path(folder), agent("random_agent.py")),
        backend=any_backend,
        seed=3,
        **FAST,
    )

    assert result.as_json()["errors"] == [0, 0]
    assert "a lock in its own /dev/shm" in result.logs[0]
    shutil.rmtree(folder)


@pytest.mark.usefixtures("confined", "needs_root")
def test_a_sandbox_root_only_root_may_reach_still_confines_its_agents(tmp_path):
    # pytest's tmp_path is root's alone: the agents' own user ids could not start
    # bubblewrap on their folders below it, so root does (setpriv).
    backend = ProcessSandbox(tmp_path / "sandboxes")
    try:
        result = run_duel(
            "tic_tac_toe",
            (agent("random_agent.py"), agent("random_agent.py")),
            backend=backend,
            seed=3,
            **FAST,
        )
    finally:
        backend.close()

    assert backend.confined and backend.confinement.mode == "setpriv"
    assert result.as_json()["errors"] == [0, 0] and not result.infrastructure_error


REPORTS_HOW_IT_STARTED = """
import os, resource, sys
from arena_sdk import agent

LIMITS = ("CPU", "DATA", "AS", "NPROC", "FSIZE", "NOFILE", "CORE")
print("limits", {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name)) for name in LIMITS})
print("umask", oct(os.umask(0o077)))
targets = []
for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # the listing's own, closed since
        pass
print("descriptors", " ".join(targets), flush=True)


@agent
def first(turn):
    return turn.legal_actions[0]
"""


@pytest.mark.usefixtures("confined")
@pytest.mark.parametrize("mode", ["userns", "setpriv"])
def test_a_confined_agent_starts_with_its_limits_its_umask_and_its_streams_only(
    mode, sandbox_root, tmp_path
):
    # setpriv mode: as root, below a sandbox root only root may reach (as above).
    if mode == "setpriv":
        require(os.geteuid() == 0, "not root: the setpriv mode is root's")
    root = sandbox_root if mode == "userns" else tmp_path / "sandboxes"
    folder = sandbox_root / "reports-how-it-started"
    folder.mkdir()
    (folder / "main.py").write_text(REPORTS_HOW_IT_STARTED)
    backend = ProcessSandbox(root)
    try:
        running = backend.start(AgentSource.from_path(folder), limits=SandboxLimits(), label="p1")
        try:
            deadline = time.monotonic() + 60
            while "descriptors" not in running.log() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert running.termination() is None  # loaded, waiting for its handshake
        finally:
            running.close()
    finally:
        backend.close()

    log = running.log()
    limits = {
        name.removeprefix("RLIMIT_"): limit
        for name, limit in backend._rlimits(SandboxLimits()).items()
    }
    assert backend.confinement.mode == mode
    assert f"limits {limits}" in log
    assert "umask 0o77" in log
    # /dev/null for stdin, the log for stdout and stderr, and the SDK's copies of the
    # protocol's two streams: nothing of the launcher's (its report socket, bubblewrap's
    # options) and nothing of the referee's.
    targets = log.split("descriptors ", 1)[1].splitlines()[0].split()
    assert targets[0] == "/dev/null" and len(targets) == 5, targets
    assert all(target.startswith("pipe:") for target in targets[1:]), targets
