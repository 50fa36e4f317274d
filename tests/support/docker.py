"""The Docker engine and the base image for the tests that need them.

The base image is built once per test session (about 1.5 minutes the first time on a
machine: debootstrap from the Debian mirror; about a second after that, reused by tag).
Without an engine, or without root to run debootstrap, those tests skip with the reason,
or fail under ``ARENA_REQUIRE_ALL=1``.
"""

from __future__ import annotations

import sys
import time

import pytest

from sandboxes import docker_engine, docker_images
from sandboxes.base import SandboxError
from sandboxes.base_image import base_image_build
from tests.support.require import require

_outcome: dict[str, str] = {}


def base_image_or_skip() -> str:
    """The base image's tag, built if needed; skips (or fails) when it cannot be had."""
    if not _outcome:
        problem = docker_engine.engine_problem()
        if problem is not None:
            _outcome["problem"] = f"{problem}, so Docker sandbox tests cannot run"
        else:
            try:
                build = base_image_build(
                    report=lambda line: print(f"base image: {line}", file=sys.stderr)
                )
                _outcome["tag"] = build.tag
            except SandboxError as error:  # BaseImageError, or the engine failing
                _outcome["problem"] = (
                    f"the base image cannot be built here ({error.message.splitlines()[0]}), "
                    "so Docker sandbox tests cannot run"
                )
    require("tag" in _outcome, _outcome.get("problem", ""))
    return _outcome["tag"]


@pytest.fixture(scope="session")
def docker_base_image() -> str:
    return base_image_or_skip()


def remove_revision_images() -> list[str]:
    """Remove the revision images this test run built (those of its instance, whatever
    process built them) and their dependencies' build cache; returns what was removed.
    Nothing is asked of the engine in a run that never used it."""
    if "tag" not in _outcome:
        return []
    from builder.revision_image import DEPS_ROLE, LABEL_INSTANCE, ROLE
    from builder.services import instance_label

    instance = {LABEL_INSTANCE: instance_label()}
    removed = []
    for image in docker_images.images_labelled({docker_engine.LABEL_ROLE: ROLE, **instance}):
        name = image.tags[0] if image.tags else image.id
        docker_images.image_remove(name)
        removed.append(name)
    removed += docker_images.images_prune_dangling(
        {docker_engine.LABEL_ROLE: DEPS_ROLE, **instance}
    )
    return removed


def leftover_containers(labels: dict[str, str]) -> list[str]:
    """Names of the containers, running or not, that carry all of ``labels``."""
    return [
        docker_engine.container_name(container)
        for container in docker_engine.containers_labelled(labels)
    ]


#: How long a test waits for the engine to finish removing containers before it calls one
#: left behind: far beyond a loaded machine's worst (a fork bomb's container, whose
#: hundreds of processes the engine kills and reaps, was still there after the
#: sandbox's own 30 s wait on CI's machine).
REMOVAL_BOUND = 300.0


def containers_left_after_removal(labels: dict[str, str]) -> list[str]:
    """``leftover_containers(labels)`` once the engine has had ``REMOVAL_BOUND`` seconds to
    finish the removals under way; empty as soon as they are done."""
    deadline = time.monotonic() + REMOVAL_BOUND
    while (left := leftover_containers(labels)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
