from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duel_runner.sandbox.docker import DockerSandbox
from tests.support.docker import docker_base_image, leftover_containers

__all__ = ["docker_base_image"]


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

    def start(self, source, *, limits, label):  # type: ignore[no-untyped-def]
        running = super().start(source, limits=limits, label=label)
        self.container_ids.add(running.container.id)
        return running


@pytest.fixture
def sandbox_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="arena-test-docker-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def docker_backend(
    docker_base_image: str, sandbox_root: Path, request: pytest.FixtureRequest
) -> Iterator[DockerSandbox]:
    """A docker sandbox whose containers carry this test's label; checks it leaves nothing."""
    test_label = {"arena.test": f"{os.getpid()}-{request.node.name}"[:120]}
    backend = RecordingDockerSandbox(sandbox_root, image=docker_base_image, labels=test_label)
    yield backend
    assert leftover_containers(test_label) == []
    assert list((sandbox_root / "docker").iterdir()) == []
    assert survivors(backend.container_ids) == []
