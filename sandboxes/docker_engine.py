"""Every call Arena makes to a Docker engine about containers (Docker SDK 7.1), and the
client, its errors and the labels that ``sandboxes.docker_images`` (images) shares.

Containers: start one (``running_container`` always kills and removes it again), run a
short command to completion, read its state and logs, pin it to CPUs, list by label, and
``sweep_orphans`` for the ones a killed worker left behind.

Everything Arena makes is labelled: ``arena.role`` (``rootfs``, ``base``, ``revision``,
``agent``, ``bench``...), and on containers ``arena.owner``, the host, process id and process
start time of whoever started it, so a sweep can tell a dead worker's containers from
a live one's; callers add ``arena.sandbox`` (the agent's token) and ``arena.revision``
when they know it. Nothing here imports Django: the referee's command line uses it too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions
import urllib3.exceptions
from docker.models.containers import Container

from sandboxes.base import SandboxError

LABEL_ROLE = "arena.role"
LABEL_OWNER = "arena.owner"
LABEL_SANDBOX = "arena.sandbox"
LABEL_REVISION = "arena.revision"

#: The engine's API answers within seconds; image imports and builds stream for longer.
API_TIMEOUT = 120
#: How many times a removal is asked for when the engine's kill races the container's
#: own end (``container_discard``).
REMOVAL_ATTEMPTS = 3


class EngineError(SandboxError):
    """The Docker engine refused or failed a request."""


class EngineUnavailable(EngineError):
    """No Docker engine answers (not installed, not started, or no permission)."""


class EngineTimeout(EngineError):
    """A request to the engine did not finish before its deadline."""


@functools.lru_cache(maxsize=4)
def _client_for(pid: int) -> docker.DockerClient:
    # Keyed by process id: a forked worker must not share its parent's connections.
    return docker.DockerClient.from_env(timeout=API_TIMEOUT)


def client() -> docker.DockerClient:
    """The engine named by ``DOCKER_HOST`` (default: the local Unix socket)."""
    try:
        return _client_for(os.getpid())
    except docker.errors.DockerException as error:
        raise EngineUnavailable(unavailable_message(error)) from error


def unavailable_message(error: Exception) -> str:
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    # The SDK's own text nests several exceptions; one cause is enough for a reason.
    cause = "permission denied" if "Permission denied" in str(error) else "no answer"
    return (
        f"no Docker engine at {where} ({cause}): start dockerd "
        "(scripts/setup.sh does as root) or set DOCKER_HOST"
    )


def engine_problem() -> str | None:
    """Why the engine cannot be used, in one line; None when it answers."""
    try:
        client().ping()
    except EngineUnavailable as error:
        return error.message
    except docker.errors.DockerException as error:
        _client_for.cache_clear()
        return unavailable_message(error)
    return None


@contextlib.contextmanager
def engine_errors(doing: str) -> Iterator[None]:
    """Docker SDK exceptions as ``EngineError`` saying what was being done."""
    try:
        yield
    except docker.errors.DockerException as error:
        raise EngineError(f"Docker engine: cannot {doing}: {error}") from error
    except OSError as error:  # the engine went away mid-request
        raise EngineUnavailable(unavailable_message(error)) from error


# -- containers -----------------------------------------------------------------


def _process_start_time(pid: int) -> str | None:
    """Clock ticks since boot when ``pid`` started; tells a reused process id apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after it.
    return stat.rsplit(")", 1)[1].split()[19]


def owner_label() -> str:
    """Who starts containers from this process: ``host:pid:start time``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start_time(pid)}"


def _owner_is_gone(owner: str) -> bool | None:
    """True if the process in an ``arena.owner`` label is dead; None if it is on another host."""
    host, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return _process_start_time(int(pid)) != started


@dataclasses.dataclass(frozen=True)
class ContainerState:
    running: bool
    exit_code: int | None
    oom_killed: bool
    #: What the engine said went wrong starting it, if anything.
    error: str = ""


def container_start(
    *,
    image: str,
    command: list[str],
    role: str,
    labels: dict[str, str] | None = None,
    ulimits: dict[str, tuple[int, int]] | None = None,
    log_max_bytes: int | None = None,
    **options: Any,
) -> Container:
    """Create and start a container; on failure nothing is left behind.

    ``options`` are the Docker SDK's ``containers.create`` arguments (``network_mode``,
    ``mem_limit``...); ``ulimits`` maps a limit's name to (soft, hard).
    """
    if ulimits:
        options["ulimits"] = [
            docker.types.Ulimit(name=name, soft=soft, hard=hard)
            for name, (soft, hard) in ulimits.items()
        ]
    if log_max_bytes is not None:
        # The engine keeps a container's output on disk: cap it so a chatty
        # container cannot fill the host's disk.
        options["log_config"] = docker.types.LogConfig(
            type="json-file", config={"max-size": str(log_max_bytes), "max-file": "1"}
        )
    all_labels = {LABEL_ROLE: role, LABEL_OWNER: owner_label(), **(labels or {})}
    with engine_errors(f"create a container from {image}"):
        container = client().containers.create(
            image, command, labels=all_labels, detach=True, **options
        )
    try:
        with engine_errors(f"start container {container_name(container)}"):
            container.start()
    except EngineError:
        container_discard(container)
        raise
    return container


def container_name(container: Container) -> str:
    """Its name, also for the sparse objects that listing returns."""
    names = container.attrs.get("Names") or [container.attrs.get("Name") or container.short_id]
    return str(names[0]).lstrip("/")


def container_labels(container: Container) -> dict[str, str]:
    """Its labels, also for the sparse objects that listing returns."""
    if "Labels" in container.attrs:
        return dict(container.attrs["Labels"] or {})
    return dict(container.attrs.get("Config", {}).get("Labels") or {})


def container_discard(container: Container) -> None:
    """Kill and remove ``container`` with its anonymous volumes; fine if already gone."""
    with (
        engine_errors(f"remove container {container_name(container)}"),
        contextlib.suppress(docker.errors.NotFound),
    ):
        for attempt in range(REMOVAL_ATTEMPTS):
            try:
                container.remove(force=True, v=True)
                return
            except docker.errors.APIError as error:
                # Removal already under way (a sweep, or the engine after --rm) is fine.
                if "already in progress" in str(error):
                    return
                # The engine's race with a container that was ending by itself: its kill
                # found it stopped ("Could not kill running container ..., cannot remove -
                # Container ... is not running"). Stopped now, so asking again removes it.
                if "is not running" not in str(error) or attempt == REMOVAL_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))


def container_stop(container: Container, timeout: float = 10) -> None:
    """Kill ``container`` and wait until the engine has it stopped (at most ``timeout``
    seconds): its log is whole then, what its last process wrote included; fine if it
    had stopped or is gone."""
    with (
        engine_errors(f"stop container {container_name(container)}"),
        contextlib.suppress(docker.errors.NotFound),
    ):
        try:
            container.kill()
        except docker.errors.APIError as error:
            if "is not running" not in str(error):
                raise
        with contextlib.suppress(requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError):
            container.wait(timeout=timeout)


def container_pin(container: Container, cpus: Iterable[int]) -> None:
    """Run every process of the running ``container`` on ``cpus`` from now on (its
    cgroup's cpuset: what it forks inherits it, and no process in it can leave)."""
    listed = ",".join(str(cpu) for cpu in sorted(cpus))
    with engine_errors(f"pin container {container_name(container)} to CPUs {listed}"):
        container.update(cpuset_cpus=listed)


@contextlib.contextmanager
def running_container(**spec: Any) -> Iterator[Container]:
    """``container_start(**spec)``; the container is killed and removed on the way out."""
    container = container_start(**spec)
    try:
        yield container
    finally:
        container_discard(container)


def container_run(
    *, image: str, command: list[str], role: str, timeout: float = 60, **options: Any
) -> tuple[int | None, bytes]:
    """Run ``command`` in a new container with no network until it exits; returns its exit
    code (None if it outlived ``timeout`` and was killed) and its output. The container
    is removed either way."""
    options = {**options, "network_mode": "none"}
    with running_container(image=image, command=command, role=role, **options) as container:
        code: int | None
        try:
            status = container.wait(timeout=timeout)
            code = int(status.get("StatusCode", -1))
        except (requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError):
            code = None  # still running: it is killed on the way out
        except docker.errors.DockerException as error:
            raise EngineError(f"Docker engine: cannot wait for {image}: {error}") from error
        output = container_logs(container, stdout=True, stderr=True)
    return code, output


def container_state(container: Container) -> ContainerState | None:
    """The container's state as the engine sees it now; None once it has been removed."""
    with engine_errors(f"inspect container {container_name(container)}"):
        try:
            container.reload()
        except docker.errors.NotFound:
            return None
    state = container.attrs.get("State", {})
    running = bool(state.get("Running")) or state.get("Status") in {"created", "restarting"}
    return ContainerState(
        running=running,
        exit_code=None if running else state.get("ExitCode"),
        oom_killed=bool(state.get("OOMKilled")),
        error=state.get("Error") or "",
    )


def container_logs(container: Container, *, stdout: bool = False, stderr: bool = True) -> bytes:
    """What the container wrote to the engine's log so far (capped by ``log_max_bytes``)."""
    with engine_errors(f"read the logs of {container_name(container)}"):
        try:
            return bytes(container.logs(stdout=stdout, stderr=stderr))
        except docker.errors.NotFound:
            return b""


def container_attach_socket(container: Container) -> socket.socket:
    """The container's stdin and stdout through the engine's attach stream.

    Every byte crosses the engine's daemon, and stdout arrives in frames of an
    8-byte header and a payload. Benchmarks use it as the baseline the sandboxes avoid.
    """
    with engine_errors(f"attach to {container_name(container)}"):
        response = client().api.attach_socket(
            container.id or container_name(container),
            params={"stdin": 1, "stdout": 1, "stream": 1},
        )
    return response._sock  # the raw socket under the SDK's wrapper


def containers_labelled(labels: dict[str, str]) -> list[Container]:
    """Every container (running or not) carrying all of ``labels``."""
    filters: dict[str, str | list[str] | bool] = {
        "label": [f"{name}={value}" for name, value in labels.items()]
    }
    with engine_errors("list containers"):
        return list(client().containers.list(all=True, filters=filters, sparse=True))


def sweep_orphans(*, roles: Iterable[str] = ("agent",), everything: bool = False) -> list[str]:
    """Kill and remove containers that a killed worker left behind; returns their names.

    A container is an orphan when its ``arena.owner`` process on this host is dead.
    Containers started from another host (workers sharing one engine from their own
    containers) cannot be judged from here and stay, unless ``everything``: use that
    only when no other worker uses this engine. Call at worker start.
    """
    removed = []
    for role in roles:
        for container in containers_labelled({LABEL_ROLE: role}):
            owner = container_labels(container).get(LABEL_OWNER, "")
            if everything or _owner_is_gone(owner):
                container_discard(container)
                removed.append(container_name(container))
    return removed
