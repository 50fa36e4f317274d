"""The production path with real processes: a Redis broker and Celery workers.

Uploads are built and validated by a worker. (A worker killed in the middle of a job of
any kind: ``tests/tournament_manager/test_pipeline_recovery.py``.)
"""

from __future__ import annotations

import pytest

from core.models import (
    Revision,
    StepStatus,
)
from core.services.environments import environment_add_openspiel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.docker import docker_base_image  # noqa: F401
from tests.support.workers import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

FINAL = {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.NONE}


def settled(revisions: list[Revision]) -> bool:
    for revision in revisions:
        revision.refresh_from_db()
    return all(r.build_status in FINAL and r.validation_status in FINAL for r in revisions)


def test_it_builds_and_validates_uploads_in_a_worker(celery_workers):
    celery_workers.start("builder")
    owner = make_user()
    revisions = [
        upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload(owner, "quarto", "heuristic", PLAYERS / "quarto" / "heuristic.py"),
        upload(owner, "tic_tac_toe", "broken", b"def play(:\n", filename="main.py"),
    ]
    assert revisions[0].build_status == StepStatus.QUEUED  # queued, not run in this process

    wait_for(lambda: settled(revisions), timeout=90, what="the worker to build and validate")

    minimax, heuristic, broken = revisions
    assert minimax.is_valid and heuristic.is_valid, celery_workers.log("builder")
    assert broken.build_status == StepStatus.FAILED
    assert "line 1" in broken.job("build").error


@pytest.mark.usefixtures("docker_base_image")
def test_it_validates_every_python_reference_player_in_docker_through_a_worker(celery_workers):
    # The base image carries Python only, so the Node.js example agent is left out here
    # (it is played by the process sandbox's tests).
    celery_workers.start("docker-builder", ARENA_SANDBOX="docker")
    owner = make_user()
    players = sorted(PLAYERS.glob("*/*.py"))
    # OpenSpiel's players play any OpenSpiel game an organizer adds: leduc poker here.
    games = {"openspiel": environment_add_openspiel(spec="openspiel:leduc_poker").name}
    revisions = [
        upload(
            owner,
            games.get(path.parent.name, path.parent.name),
            f"{path.parent.name}-{path.stem}".replace("_", "-"),
            path,
        )
        for path in players
    ]

    wait_for(lambda: settled(revisions), timeout=240, what="every player to validate")

    assert len(revisions) >= 12
    failed = {
        str(r): r.job("build").error or r.job("validation").error
        for r in revisions
        if not r.is_valid
    }
    assert failed == {}, celery_workers.log("docker-builder")[-3000:]
    assert all(r.image.startswith("arena-revision:") for r in revisions)
