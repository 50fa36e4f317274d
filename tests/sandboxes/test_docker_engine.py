"""The Docker engine's module: what a cancelled build leaves behind is removed, and a
container's removal survives the engine's race with the container's own end."""

from __future__ import annotations

import time
import uuid

import docker.errors
import pytest

from sandboxes import docker_engine
from tests.support.docker import docker_base_image, leftover_containers

__all__ = ["docker_base_image"]


def test_it_removes_a_cancelled_builds_steps_that_run_no_process_and_nothing_else(
    docker_base_image,
):
    """When a build is cancelled (its deadline passed), the engine leaves the containers of
    its steps that run no process (``COPY``, ``CMD``, ``LABEL``: created, committed, never
    started); a revision's build finds them by its role and labels. A duel's agent on the
    revision's older image (created ``agent``) is not touched."""
    revision = f"test-{uuid.uuid4().hex[:12]}"
    labels = {"arena.role": "revision", "arena.revision": revision}
    began = time.time()
    engine = docker_engine.client()
    step = engine.containers.create(
        docker_base_image, command=["/bin/sh", "-c", "#(nop) ", "LABEL arena.role=revision"],
        labels=labels,
    )  # fmt: skip
    agent = engine.containers.create(
        docker_base_image,
        command=["python3", "-c", "pass"],
        labels={**labels, "arena.role": "agent"},
    )
    try:
        docker_engine._discard_step_containers([], None, labels, began=began)

        assert leftover_containers(labels) == []
        assert leftover_containers({"arena.revision": revision}) == [
            docker_engine.container_name(agent)
        ]
    finally:
        for container in (step, agent):
            docker_engine.container_discard(container)


class EndingContainer:
    """A container that the engine fails to kill ``races`` times because it was ending by
    itself (the engine's error, word for word), then removes."""

    attrs = {"Name": "/arena-p1-ending"}

    def __init__(self, races: int) -> None:
        self.races = races
        self.removals = 0

    def remove(self, **options: bool) -> None:
        self.removals += 1
        if self.removals <= self.races:
            raise docker.errors.APIError(
                '500 Server Error: Internal Server Error ("Could not kill running container'
                ' 8baa, cannot remove - Container 8baa is not running")'
            )


def test_a_container_that_ended_while_it_was_being_killed_is_still_removed():
    container = EndingContainer(races=1)

    docker_engine.container_discard(container)  # type: ignore[arg-type]  # a stand-in

    assert container.removals == 2


def test_a_removal_that_keeps_failing_is_reported_not_retried_forever():
    container = EndingContainer(races=docker_engine.REMOVAL_ATTEMPTS)

    with pytest.raises(docker_engine.EngineError, match="cannot remove container arena-p1-ending"):
        docker_engine.container_discard(container)  # type: ignore[arg-type]  # a stand-in

    assert container.removals == docker_engine.REMOVAL_ATTEMPTS
