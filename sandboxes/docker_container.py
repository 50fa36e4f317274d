"""What a container of the ``docker`` sandbox is, before the engine starts it: its user, the
paths it sees, the options that confine it (``confinement``), its command (an agent's, or a
fork server's) and a fork server's environment (``sandboxes.docker`` starts them)."""

from __future__ import annotations

from typing import Any

from arena_sdk.fork_server import AGENT_PYTHONPATH

from sandboxes.base import SHM_MB, TMPFS_MB, EntryKind
from sandboxes.confinement import CONTROL_FD

AGENT_USER = "10001:10001"
AGENT_DIR = "/agent"
SOCKET_DIR = "/run/arena"
SOCKET_NAME = "agent.sock"
SDK_PATH = "/opt/arena/sdk"
#: Where a revision's image has its Python dependencies (installed by the builder).
DEPS_PATH = "/opt/arena/deps"
#: What the engine keeps of a container's own output (the bridge's and init's
#: messages; the agent's stderr goes to the referee through its log pipe).
ENGINE_LOG_BYTES = 256 * 1024


def container_command(entry: str, kind: EntryKind) -> list[str]:
    """What a container runs: the bridge, which execs the agent on its sockets.

    The builder makes it the ``CMD`` of every revision's image, so an image started by
    hand runs the agent the same way.
    """
    if kind is EntryKind.EXECUTABLE:
        agent = [f"{AGENT_DIR}/{entry}"]
    else:
        agent = [*PYTHON, "-m", "arena_sdk", entry]
    return [*BRIDGE, "--", *agent]


PYTHON = ["python3", "-s", "-B"]
BRIDGE = [*PYTHON, "-m", "arena_sdk.bridge", f"{SOCKET_DIR}/{SOCKET_NAME}"]


def server_command(entry: str) -> list[str]:
    """What a fork server's container runs: the bridge, which places the control socket
    and execs the server (which counts the container's out-of-memory kills). Both from
    their files, with the SDK alone on ``PYTHONPATH`` (``server_environment``): nothing
    of the agent's folder or dependencies is imported by them (``arena_sdk.fork_server``)."""
    bridge = [*PYTHON, f"{SDK_PATH}/arena_sdk/bridge.py", f"{SOCKET_DIR}/{SOCKET_NAME}"]
    server = [*PYTHON, f"{SDK_PATH}/arena_sdk/fork_server.py", entry, str(CONTROL_FD)]
    return [*bridge, "--control", str(CONTROL_FD), "--", *server, "--oom-kills"]


def server_environment(environment: dict[str, str]) -> dict[str, str]:
    """An agent's ``environment`` for its fork server's container: the SDK alone on
    ``PYTHONPATH``, the agent's own handed to each child."""
    return {**environment, "PYTHONPATH": SDK_PATH, AGENT_PYTHONPATH: environment["PYTHONPATH"]}


def confinement(*, memory_mb: int, max_processes: int) -> dict[str, Any]:
    """The ``docker_engine.container_start`` options that confine every container Arena
    starts from an agent's image (agents, and the builder's probes of an image): no
    network, no swap, one CPU, a process limit, a read-only root with a small tmpfs and a
    small ``/dev/shm`` of its own, an unprivileged user, no capabilities, no new
    privileges, a capped engine log. The engine proxy refuses to create a container
    without them (docs/sandboxes.md)."""
    mib = 1024 * 1024
    return {
        "user": AGENT_USER,
        "network_mode": "none",
        "mem_limit": memory_mb * mib,
        # Equal to the memory limit: no swap, so a hog is killed instead of slowed.
        "memswap_limit": memory_mb * mib,
        "nano_cpus": 1_000_000_000,
        "pids_limit": max_processes,
        "read_only": True,
        "tmpfs": {"/tmp": f"size={TMPFS_MB}m,mode=1777"},
        # An IPC namespace and a /dev/shm of its own (multiprocessing needs one), bounded
        # and counted in its memory, as its /tmp.
        "ipc_mode": "private",
        "shm_size": SHM_MB * mib,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "log_max_bytes": ENGINE_LOG_BYTES,
    }
