"""A worker killed (SIGKILL, pool and all) in the middle of a job, of every kind, with
PostgreSQL, Redis, real Celery workers and the watchdog (``run_watchdog``): the job is
taken up again once its lease runs out and done once, by another worker; or, when its
worker dies on every attempt, it fails with a message a user understands. Nothing stays
running forever, and nothing is recorded twice. (The same lifecycle on factory rows, with
lost queue messages: ``tests/core/test_jobs.py``.)"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import transaction

from core.jobs import job_of
from core.models import (
    Duel,
    DuelStatus,
    Environment,
    Evaluation,
    JobKind,
    JobStatus,
    RatingChange,
    Revision,
    ScoreCompetition,
    StepStatus,
    User,
)
from tests.pipeline import PLAYERS, make_user, pipeline, upload, upload_validated  # noqa: F401
from tests.support.workers import Workers, wait_for
from tournament_manager.score_competitions import score_competition_start
from tournament_manager.services import tournament_create, tournament_launch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

SLOW_APP = "tests.support.slow_app"
QUEUES = "build,duels,publish"
#: Short leases and re-sends, so a killed worker's job is recovered in seconds; the
#: broker's own redelivery of the killed worker's message stays an hour away.
QUICK = {
    "ARENA_REVISION_LEASE_SECONDS": "2",
    "ARENA_DUEL_LEASE_SECONDS": "2",
    "ARENA_RESEND_AFTER_SECONDS": "1",
}
FINAL = {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.NONE}

AGENT = b"""
from arena_sdk import Agent, run


class Random(Agent):
    def act(self, turn):
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(Random())
"""


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """An empty bare repository, where the workers publish public revisions."""
    bare = tmp_path / "published.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(bare), cwd=tmp_path)
    return bare


# --- each kind: how its work is queued, and what the user finds once it is done -----------


def _uploaded(owner: User) -> int:
    return upload(owner, "tic_tac_toe", "once", AGENT).pk


def _played(owner: User) -> int:
    revisions = [
        upload_validated(owner, "tic_tac_toe", name, AGENT + f"# {name}\n".encode())
        for name in ("noughts", "crosses")
    ]
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="tic_tac_toe"),
            name="Interrupted",
            revisions=revisions,
            matches_per_duel=4,
        )
        tournament_launch(tournament=tournament)
    return Duel.objects.get(tournament=tournament).pk


def _evaluated(owner: User) -> int:
    upload_validated(owner, "cartpole", "balancer", PLAYERS / "cartpole" / "balancer.py")
    competition = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"), name="Interrupted", episodes=3
    )
    with transaction.atomic():
        score_competition_start(competition=competition)
    return Evaluation.objects.get(competition=competition).pk


def _built_once(revision_id: int, published: Path) -> None:
    validated = Revision.objects.validated().filter(pk=revision_id)
    wait_for(validated.exists, timeout=120, what="the revision to be validated")
    revision = Revision.objects.get(pk=revision_id)
    # Validated once, by the worker that built it.
    assert Duel.objects.filter(is_validation=True, revision_1=revision).count() == 1


def _published_once(revision_id: int, published: Path) -> None:
    revision = Revision.objects.get(pk=revision_id)
    assert revision.is_valid and revision.publication_status == StepStatus.SUCCEEDED
    assert git("log", "--format=%s", "main", cwd=published).splitlines() == ["tic_tac_toe/once v1"]


def _played_once(duel_id: int, published: Path) -> None:
    duel = Duel.objects.get(pk=duel_id)
    assert (duel.status, duel.matches.count()) == (DuelStatus.SUCCEEDED, 4)
    # Rated once per match, by the worker that finished it: both players, 4 matches.
    assert RatingChange.objects.filter(duel=duel).count() == 2 * 4


def _evaluated_once(evaluation_id: int, published: Path) -> None:
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    assert evaluation.status == DuelStatus.SUCCEEDED
    assert len(evaluation.episodes) == evaluation.episodes_played == 3


@dataclasses.dataclass(frozen=True)
class Work:
    #: Queues the work (its uploads first, with the first worker); the subject's id.
    queue: Callable[[User], int]
    #: What its owner finds once a second worker did it again.
    done_once: Callable[[int, Path], None]


WORK = {
    JobKind.BUILD: Work(_uploaded, _built_once),
    JobKind.VALIDATION: Work(_uploaded, _built_once),
    JobKind.PUBLICATION: Work(_uploaded, _published_once),
    JobKind.DUEL: Work(_played, _played_once),
    JobKind.EVALUATION: Work(_evaluated, _evaluated_once),
}


def holding(kind: str, subject_id: int, attempts: int) -> bool:
    job = job_of(kind, subject_id)
    return job is not None and (job.status, job.attempts) == (JobStatus.RUNNING, attempts)


def start_worker(
    workers: Workers, name: str, published: Path, *, slow: str = "", **environment: str
) -> subprocess.Popen[bytes]:
    """A worker on every queue but online play's, publishing to ``published`` from a work
    folder of its own; ``slow`` (``<kind>:<seconds>``) holds each job of that kind."""
    settings = {
        "ARENA_PUBLISH_REPOSITORY": str(published),
        "ARENA_PUBLISH_BRANCH": "main",
        "ARENA_PUBLISH_WORKDIR": str(published.parent / f"publisher-{name}"),
        **QUICK,
        **environment,
    }
    if slow:
        return workers.start(
            name, app=SLOW_APP, queues=QUEUES, ARENA_TEST_SLOW_JOB=slow, **settings
        )
    return workers.start(name, queues=QUEUES, **settings)


@pytest.mark.parametrize("kind", list(JobKind))
def test_a_job_whose_worker_is_killed_midway_is_done_again_once(kind, celery_workers, published):
    first = start_worker(celery_workers, "first", published, slow=f"{kind}:120")
    subject_id = WORK[kind].queue(make_user())
    wait_for(lambda: holding(kind, subject_id, 1), timeout=120, what=f"the {kind} to start")

    celery_workers.kill(first)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK)
    start_worker(celery_workers, "second", published)

    wait_for(
        lambda: job_of(kind, subject_id).is_finished,  # type: ignore[union-attr]
        timeout=120,
        what=f"the {kind} to be taken up again",
    )
    job = job_of(kind, subject_id)
    assert job is not None
    assert (job.status, job.attempts, job.lease_owner) == (JobStatus.SUCCEEDED, 2, ""), (
        job.error,
        celery_workers.log("watchdog"),
    )
    WORK[kind].done_once(subject_id, published)
    assert "second@" in celery_workers.log("second")


def test_a_build_whose_worker_dies_every_time_fails_and_says_why(celery_workers, published):
    attempts = {"ARENA_REVISION_MAX_ATTEMPTS": "2"}
    first = start_worker(celery_workers, "first", published, slow="build:120", **attempts)
    revision = upload(make_user(), "tic_tac_toe", "doomed", AGENT)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK, **attempts)
    wait_for(lambda: holding("build", revision.pk, 1), timeout=30, what="the first attempt")
    celery_workers.kill(first)
    second = start_worker(celery_workers, "second", published, slow="build:120", **attempts)
    wait_for(lambda: holding("build", revision.pk, 2), timeout=30, what="the second attempt")

    celery_workers.kill(second)

    def settled() -> bool:
        revision.refresh_from_db()
        return revision.build_status in FINAL and revision.validation_status in FINAL

    wait_for(settled, timeout=30, what="the watchdog to fail the build")
    assert revision.build_status == StepStatus.FAILED, celery_workers.log("watchdog")
    build = revision.job("build")
    assert build is not None and build.attempts == 2
    assert "the worker building this revision stopped 2 times before it finished" in build.error
    assert revision.validation_status == StepStatus.NONE
