"""Every call Arena makes to a Docker engine, in one small module (Docker SDK 7.1).

Images: check, import a root file system, build from a context (with a deadline),
list by label, remove, prune. Containers: start one (``running_container`` always
kills and removes it again), run a short command to completion, read its state and
logs, list by label, and ``sweep_orphans`` for the ones a killed worker left behind.

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
import io
import os
import re
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

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
#: How long an image prune waits for another one on the same engine to end.
PRUNE_WAIT = float(API_TIMEOUT)
#: How many times a removal is asked for when the engine's kill races the container's
#: own end (``container_discard``).
REMOVAL_ATTEMPTS = 3
#: The memory (without swap) of each step of a build: a revision's dependencies are
#: installed by pip, whose needs are modest; a runaway step must not take the host's.
BUILD_MEMORY_BYTES = 2 * 1024**3


class EngineError(SandboxError):
    """The Docker engine refused or failed a request."""


class EngineUnavailable(EngineError):
    """No Docker engine answers (not installed, not started, or no permission)."""


class EngineTimeout(EngineError):
    """A request to the engine did not finish before its deadline."""


#: How the engine's build log names the container of a step.
_RUNNING_STEP = re.compile(r"Running in ([0-9a-f]{12,64})")
#: The line that ends a build step in the classic builder's log: " ---> <image id>".
_STEP_LAYER = re.compile(r"\s*---> ([0-9a-f]{12,64})\s*$")

#: What a read from the engine that outlived its timeout raises, depending on where the
#: SDK was when it happened (``requests`` wraps some, streams raise urllib3's own).
_READ_TIMEOUTS = (
    requests.exceptions.Timeout,
    requests.exceptions.ConnectionError,
    urllib3.exceptions.ReadTimeoutError,
    TimeoutError,
)


@functools.lru_cache(maxsize=4)
def _client_for(pid: int) -> docker.DockerClient:
    # Keyed by process id: a forked worker must not share its parent's connections.
    return docker.DockerClient.from_env(timeout=API_TIMEOUT)


def client() -> docker.DockerClient:
    """The engine named by ``DOCKER_HOST`` (default: the local Unix socket)."""
    try:
        return _client_for(os.getpid())
    except docker.errors.DockerException as error:
        raise EngineUnavailable(_unavailable_message(error)) from error


def _unavailable_message(error: Exception) -> str:
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
        return _unavailable_message(error)
    return None


@contextlib.contextmanager
def _engine_errors(doing: str) -> Iterator[None]:
    """Docker SDK exceptions as ``EngineError`` saying what was being done."""
    try:
        yield
    except docker.errors.DockerException as error:
        raise EngineError(f"Docker engine: cannot {doing}: {error}") from error
    except OSError as error:  # the engine went away mid-request
        raise EngineUnavailable(_unavailable_message(error)) from error


# -- images ---------------------------------------------------------------------


def image_id(tag: str) -> str | None:
    """The id of the image called ``tag``; None if there is none."""
    with _engine_errors(f"look up image {tag}"):
        try:
            return str(client().images.get(tag).id)
        except docker.errors.ImageNotFound:
            return None


def image_exists(tag: str) -> bool:
    return image_id(tag) is not None


def image_labels(tag: str) -> dict[str, str]:
    with _engine_errors(f"inspect image {tag}"):
        return dict(client().images.get(tag).labels or {})


def image_import(
    tarball: Path,
    *,
    tag: str,
    role: str,
    labels: dict[str, str],
    environment: dict[str, str] | None = None,
) -> None:
    """``docker import``: an image whose only layer is the root file system in ``tarball``."""
    repository, _, version = tag.partition(":")
    changes = [f"LABEL {name}={value}" for name, value in {LABEL_ROLE: role, **labels}.items()]
    changes += [f"ENV {name}={value}" for name, value in (environment or {}).items()]
    with _engine_errors(f"import {tarball} as {tag}"):
        answer = client().api.import_image_from_file(
            str(tarball), repository=repository, tag=version or "latest", changes=changes
        )
    if "error" in str(answer).lower():
        raise EngineError(f"Docker engine: cannot import {tarball} as {tag}: {answer}")


def image_build(
    context: bytes | IO[bytes],
    *,
    tag: str,
    role: str,
    labels: dict[str, str],
    buildargs: dict[str, str] | None = None,
    pull: bool = False,
    nocache: bool = False,
    network_mode: str | None = None,
    deadline: float | None = None,
    step_labels: dict[str, str] | None = None,
    build_labels: dict[str, str] | None = None,
) -> list[str]:
    """Build the Dockerfile at the top of the tar archive ``context``; returns the build log.

    ``pull`` stays off unless the recipe's base really lives in a registry: a base
    imported here must never be looked up anywhere else. ``network_mode="none"`` gives
    the build's ``RUN`` steps no network. ``deadline`` (a ``time.monotonic()`` value)
    bounds the whole build: past it the connection is closed, which makes the engine
    cancel the build and remove its container, and ``EngineTimeout`` is raised.
    ``step_labels``, set by a ``LABEL`` line before the recipe's ``RUN`` steps, let an
    abandoned build's step containers be found even when the log never named them;
    ``build_labels`` likewise, for labels that no other build's steps carry (a revision's
    last stage, ``arena.role=revision`` with the revision's own): every container carrying
    them is this build's.
    """
    fileobj = io.BytesIO(context) if isinstance(context, bytes) else context
    options: dict[str, Any] = {
        "fileobj": fileobj,
        "custom_context": True,
        "tag": tag,
        "labels": {LABEL_ROLE: role, **labels},
        "buildargs": buildargs or {},
        "pull": pull,
        "nocache": nocache,
        "rm": True,
        "forcerm": True,
        "decode": True,
        "container_limits": {"memory": BUILD_MEMORY_BYTES, "memswap": BUILD_MEMORY_BYTES},
    }
    if network_mode is not None:
        options["network_mode"] = network_mode
    log: list[str] = []
    began = time.time()
    if deadline is None:
        with _engine_errors(f"build image {tag}"):
            _read_build(client().api.build(**options), tag, log, deadline=None)
        return log
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise EngineTimeout(f"Docker engine: no time left to build {tag}")
    # A client of its own: its read timeout is the time left, and closing it drops the
    # connection, the only way to make the engine abandon a build.
    with _engine_errors(f"build image {tag}"):
        # The SDK's annotation says int; requests takes any number of seconds.
        build_client = docker.DockerClient.from_env(timeout=max(0.5, remaining + 0.1))  # type: ignore[arg-type]
    # The SDK's build() sends its own timeout (None unless given) with the request, not
    # the client's: without this, a step that prints nothing outlives the deadline.
    options["timeout"] = max(0.5, remaining + 0.1)
    try:
        try:
            _read_build(build_client.api.build(**options), tag, log, deadline=deadline)
            return log
        finally:
            build_client.close()
    except (EngineTimeout, *_READ_TIMEOUTS) as error:
        if not isinstance(error, EngineTimeout) and time.monotonic() < deadline - 1:
            raise EngineUnavailable(_unavailable_message(error)) from error  # the engine left
        _discard_step_containers(log, step_labels, build_labels, began=began)
        raise EngineTimeout(f"Docker engine: building {tag} did not finish in time") from None
    except docker.errors.DockerException as error:
        raise EngineError(f"Docker engine: cannot build image {tag}: {error}") from error
    except OSError as error:
        raise EngineUnavailable(_unavailable_message(error)) from error


def _read_build(
    events: Iterable[dict[str, Any]], tag: str, log: list[str], *, deadline: float | None
) -> None:
    for event in events:
        if "stream" in event:
            log.append(event["stream"].rstrip("\n"))
        if "error" in event:
            details = "\n".join(line for line in log[-20:] if line)
            raise EngineError(
                f"Docker engine: building {tag} failed: {event['error'].strip()}\n{details}"
            )
        if deadline is not None and time.monotonic() > deadline:
            raise EngineTimeout(f"Docker engine: building {tag} did not finish in time")


#: After an abandoned build, how long the step containers are watched for: the engine
#: may still be creating the one whose "Running in" line never reached the log.
_STEP_SWEEP_SECONDS = 10.0
_STEP_SWEEP_QUIET_SECONDS = 1.5


def _discard_step_containers(
    log: list[str],
    step_labels: dict[str, str] | None,
    build_labels: dict[str, str] | None = None,
    *,
    began: float,
) -> None:
    """Remove the containers of the steps an abandoned build was running.

    The engine cancels the build when its connection drops, but removes the step's
    container in its own time, and the log may not have named it yet (its "Running in"
    line was still on the way). A container carrying ``step_labels``, created since the
    build ``began`` from the image of the last step the log finished, is this build's and
    is removed; another such container may be a concurrent build's, so it is only waited
    for (the engine removes this build's own), up to ``_STEP_SWEEP_SECONDS``. A container
    carrying ``build_labels`` (this build's alone) is removed whatever its image: the
    engine leaves behind a cancelled build's steps that run no process (``COPY``, ``CMD``,
    ``LABEL``: created, committed, never started).
    """
    steps = [match.group(1) for line in log if (match := _RUNNING_STEP.search(line))]
    if steps:
        with (
            _engine_errors(f"remove build container {steps[-1]}"),
            contextlib.suppress(docker.errors.NotFound),
        ):
            container_discard(client().containers.get(steps[-1]))
    if not (step_labels or build_labels):
        return
    layers = [match.group(1) for line in log if (match := _STEP_LAYER.match(line))]
    parent = layers[-1] if layers else None
    give_up = time.monotonic() + _STEP_SWEEP_SECONDS
    quiet_since = time.monotonic()
    while time.monotonic() < give_up:
        found = []
        for labels, ours in ((step_labels, False), (build_labels, True)):
            if not labels:
                continue
            for container in containers_labelled(labels):
                if int(container.attrs.get("Created") or 0) < int(began) - 1:
                    continue
                found.append(container)
                image = str(container.attrs.get("ImageID") or container.attrs.get("Image") or "")
                if ours or (
                    parent is not None and image.removeprefix("sha256:").startswith(parent)
                ):
                    container_discard(container)
        now = time.monotonic()
        if found:
            quiet_since = now
        elif now - quiet_since >= _STEP_SWEEP_QUIET_SECONDS:
            return
        time.sleep(0.1)


@dataclasses.dataclass(frozen=True)
class ImageSummary:
    id: str
    #: ``repository:tag`` names; empty once another image took its tag (dangling).
    tags: tuple[str, ...]
    labels: dict[str, str]


def images_labelled(labels: dict[str, str]) -> list[ImageSummary]:
    """Every image (tagged or dangling, not the intermediate layers) carrying all of ``labels``."""
    filters: dict[str, str | list[str] | bool] = {
        "label": [f"{name}={value}" for name, value in labels.items()]
    }
    with _engine_errors("list images"):
        images = client().images.list(filters=filters)
    return [
        ImageSummary(id=str(image.id), tags=tuple(image.tags), labels=dict(image.labels or {}))
        for image in images
    ]


def image_inspect(tag: str) -> dict[str, Any]:
    """The engine's description of an image (``Config``, ``Size``...)."""
    with _engine_errors(f"inspect image {tag}"):
        return dict(client().images.get(tag).attrs)


def images_prune_dangling(labels: dict[str, str], *, older_than: str | None = None) -> list[str]:
    """Remove the untagged images carrying all of ``labels`` (e.g. a build's earlier
    stages), optionally only those created more than ``older_than`` ago (``"24h"``);
    returns the ids removed."""
    filters: dict[str, Any] = {
        "dangling": True,
        "label": [f"{name}={value}" for name, value in labels.items()],
    }
    if older_than is not None:
        filters["until"] = older_than
    # The engine runs one prune at a time and refuses a second with 409 (another worker's
    # clean-up, or the host's timer): wait for it, as its filters need not be ours.
    deadline = time.monotonic() + PRUNE_WAIT
    with _engine_errors("prune images"):
        while True:
            try:
                answer = client().images.prune(filters=filters)
                break
            except docker.errors.APIError as error:
                if not _prune_running(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
    deleted = answer.get("ImagesDeleted") or []
    return [str(entry["Deleted"]) for entry in deleted if entry.get("Deleted")]


def _prune_running(error: docker.errors.APIError) -> bool:
    return error.status_code == 409 and "prune operation is already running" in str(
        error.explanation
    )


def image_remove(image: str) -> bool:
    """Remove an image by tag or id unless a container still uses it; True if it went."""
    with _engine_errors(f"remove image {image}"):
        try:
            client().images.remove(image, noprune=False)
        except docker.errors.ImageNotFound:
            return True
        except docker.errors.APIError as error:
            if error.status_code == 409:  # in use: it goes with its last container
                return False
            raise
    return True


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
    with _engine_errors(f"create a container from {image}"):
        container = client().containers.create(
            image, command, labels=all_labels, detach=True, **options
        )
    try:
        with _engine_errors(f"start container {container_name(container)}"):
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
        _engine_errors(f"remove container {container_name(container)}"),
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


def container_pin(container: Container, cpus: Iterable[int]) -> None:
    """Run every process of the running ``container`` on ``cpus`` from now on (its
    cgroup's cpuset: what it forks inherits it, and no process in it can leave)."""
    listed = ",".join(str(cpu) for cpu in sorted(cpus))
    with _engine_errors(f"pin container {container_name(container)} to CPUs {listed}"):
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
    with _engine_errors(f"inspect container {container_name(container)}"):
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
    with _engine_errors(f"read the logs of {container_name(container)}"):
        try:
            return bytes(container.logs(stdout=stdout, stderr=stderr))
        except docker.errors.NotFound:
            return b""


def container_attach_socket(container: Container) -> socket.socket:
    """The container's stdin and stdout through the engine's attach stream.

    Every byte crosses the engine's daemon, and stdout arrives in frames of an
    8-byte header and a payload. Benchmarks use it as the baseline the sandboxes avoid.
    """
    with _engine_errors(f"attach to {container_name(container)}"):
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
    with _engine_errors("list containers"):
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
