"""The Docker engine's images module: what a cancelled build leaves behind is removed."""

from __future__ import annotations

import time
import uuid

from sandboxes import docker_engine, docker_images
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
        docker_images._discard_step_containers([], None, labels, began=began)

        assert leftover_containers(labels) == []
        assert leftover_containers({"arena.revision": revision}) == [
            docker_engine.container_name(agent)
        ]
    finally:
        for container in (step, agent):
            docker_engine.container_discard(container)
