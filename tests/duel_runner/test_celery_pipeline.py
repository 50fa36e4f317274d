"""The production path with real processes: a Redis broker and Celery workers.

Uploads are built and validated by a worker; a worker killed in the middle of a duel (or
of an evaluation) loses its lease, and another worker plays it again from scratch, once.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from core.models import (
    Duel,
    DuelStatus,
    Environment,
    Evaluation,
    RatingChange,
    Revision,
    ScoreCompetition,
    StepStatus,
    Tournament,
    TournamentStatus,
)
from core.services import environment_add_openspiel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.docker import docker_base_image  # noqa: F401
from tests.support.workers import wait_for
from tournament_manager.score_competitions import score_competition_start
from tournament_manager.services import tournament_create, tournament_launch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

FINAL = {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.NONE}
#: A short lease and redelivery, so a killed worker's duel is taken over in seconds.
QUICK_TAKEOVER = {
    "ARENA_DUEL_LEASE_SECONDS": "2",
    "ARENA_BROKER_VISIBILITY_TIMEOUT": "3",
    "ARENA_BROKER_RESTORE_INTERVAL": "1",
    "ARENA_BROKER_RESTORE_THROTTLE": "1",
}


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


def test_it_plays_a_killed_workers_duel_again_once(celery_workers):
    first = celery_workers.start("first", **QUICK_TAKEOVER)
    owner = make_user()
    revisions = [
        upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload(owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py"),
    ]
    wait_for(lambda: settled(revisions), timeout=90, what="validation")
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="connect_four"),
            name="Long duel",
            revisions=revisions,
            matches_per_duel=300,
        )
        tournament_launch(tournament=tournament)
    duel = Duel.objects.get(tournament=tournament)
    wait_for(
        lambda: Duel.objects.filter(pk=duel.pk, status=DuelStatus.RUNNING).exists(),
        timeout=30,
        what="the first worker to start the duel",
    )

    celery_workers.kill(first)
    duel.refresh_from_db()
    assert duel.status == DuelStatus.RUNNING and duel.matches.count() == 0
    celery_workers.start("second", **QUICK_TAKEOVER)

    wait_for(
        lambda: Tournament.objects.filter(
            pk=tournament.pk, status=TournamentStatus.COMPLETED
        ).exists(),
        timeout=120,
        what="the second worker to play the duel again and finish the tournament",
    )
    duel.refresh_from_db()
    tournament.refresh_from_db()
    assert duel.job.attempts == 2
    assert duel.matches.count() == 300
    # Rated once per match, by the worker that finished it: both players, 300 matches.
    assert RatingChange.objects.filter(duel=duel).count() == 2 * 300
    assert RatingChange.objects.filter(duel=duel).values("match").distinct().count() == 300
    assert duel.job.lease_owner == ""
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_done, tournament.duels_failed) == (1, 0)
    assert "second@" in celery_workers.log("second")


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


def test_it_plays_a_killed_workers_evaluation_again_once(celery_workers):
    first = celery_workers.start("first", **QUICK_TAKEOVER)
    owner = make_user()
    revision = upload(owner, "cartpole", "balancer", PLAYERS / "cartpole" / "balancer.py")
    wait_for(lambda: settled([revision]), timeout=90, what="validation by evaluation")
    assert revision.is_valid, revision.job("validation").error
    competition = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"),
        name="Long evaluation",
        episodes=150,
        seed=3,
    )
    with transaction.atomic():
        score_competition_start(competition=competition)
    evaluation = Evaluation.objects.get(competition=competition)
    wait_for(
        lambda: Evaluation.objects.filter(pk=evaluation.pk, status=DuelStatus.RUNNING).exists(),
        timeout=30,
        what="the first worker to start the evaluation",
    )

    celery_workers.kill(first)
    celery_workers.start("second", **QUICK_TAKEOVER)

    wait_for(
        lambda: Evaluation.objects.filter(pk=evaluation.pk, status=DuelStatus.SUCCEEDED).exists(),
        timeout=180,
        what="the second worker to play the evaluation again",
    )
    evaluation.refresh_from_db()
    assert evaluation.job.attempts == 2
    assert len(evaluation.episodes) == evaluation.episodes_played == 150
    assert evaluation.mean_return == 500.0
    assert evaluation.played_by and "second@" in celery_workers.log("second")
    assert evaluation.job.lease_owner == ""
