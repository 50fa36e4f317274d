"""Every call Arena makes to a Docker engine about images (Docker SDK 7.1): check,
import a root file system, build from a context (with a deadline, and the containers of
an abandoned build's steps removed), list by label, inspect, remove, prune. The client,
its errors and the labels are ``sandboxes.docker_engine``'s; nothing here imports
Django either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions

from sandboxes.docker_engine import (
    API_TIMEOUT,
    LABEL_ROLE,
    EngineError,
    EngineTimeout,
    EngineUnavailable,
    client,
    container_discard,
    containers_labelled,
    engine_errors,
    unavailable_message,
)

#: How long an image prune waits for another one on the same engine to end.
PRUNE_WAIT = float(API_TIMEOUT)
#: The memory (without swap) of each step of a build: a revision's dependencies are
#: installed by pip, whose needs are modest; a runaway step must not take the host's.
BUILD_MEMORY_BYTES = 2 * 1024**3

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


def image_id(tag: str) -> str | None:
    """The id of the image called ``tag``; None if there is none."""
    with engine_errors(f"look up image {tag}"):
        try:
            return str(client().images.get(tag).id)
        except docker.errors.ImageNotFound:
            return None


def image_exists(tag: str) -> bool:
    return image_id(tag) is not None


def image_labels(tag: str) -> dict[str, str]:
    with engine_errors(f"inspect image {tag}"):
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
    with engine_errors(f"import {tarball} as {tag}"):
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
        with engine_errors(f"build image {tag}"):
            _read_build(client().api.build(**options), tag, log, deadline=None)
        return log
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise EngineTimeout(f"Docker engine: no time left to build {tag}")
    # A client of its own: its read timeout is the time left, and closing it drops the
    # connection, the only way to make the engine abandon a build.
    with engine_errors(f"build image {tag}"):
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
            raise EngineUnavailable(unavailable_message(error)) from error  # the engine left
        _discard_step_containers(log, step_labels, build_labels, began=began)
        raise EngineTimeout(f"Docker engine: building {tag} did not finish in time") from None
    except docker.errors.DockerException as error:
        raise EngineError(f"Docker engine: cannot build image {tag}: {error}") from error
    except OSError as error:
        raise EngineUnavailable(unavailable_message(error)) from error


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
            engine_errors(f"remove build container {steps[-1]}"),
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
    with engine_errors("list images"):
        images = client().images.list(filters=filters)
    return [
        ImageSummary(id=str(image.id), tags=tuple(image.tags), labels=dict(image.labels or {}))
        for image in images
    ]


def image_inspect(tag: str) -> dict[str, Any]:
    """The engine's description of an image (``Config``, ``Size``...)."""
    with engine_errors(f"inspect image {tag}"):
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
    with engine_errors("prune images"):
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
    with engine_errors(f"remove image {image}"):
        try:
            client().images.remove(image, noprune=False)
        except docker.errors.ImageNotFound:
            return True
        except docker.errors.APIError as error:
            if error.status_code == 409:  # in use: it goes with its last container
                return False
            raise
    return True
