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
from typing import Any

import pytest
from django.db import transaction

from core.jobs.lifecycle import job_of
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
    Tournament,
    TournamentStatus,
    User,
)
from tests.pipeline import PLAYERS, make_user, pipeline, upload, upload_validated  # noqa: F401
from tests.support.workers import Workers, wait_for
from tournament_manager.ratings import distinct_matches
from tournament_manager.score_competitions import score_competition_start
from tournament_manager.services.tournaments import tournament_create, tournament_launch

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

SLOW_APP = "tests.support.slow_app"
QUEUES = "build,duels,publish"
#: Short leases and re-sends, so a killed worker's job is recovered in seconds; the
#: broker's own redelivery of the killed worker's message stays an hour away. Five
#: seconds: a healthy worker's heartbeat (a third of it) is never that late, even on a
#: loaded machine, where two seconds left it little room.
QUICK = {
    "ARENA_REVISION_LEASE_SECONDS": "5",
    "ARENA_DUEL_LEASE_SECONDS": "5",
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
#: An agent that takes a while to start (as one loading a large model does), well within
#: the startup limit: its validation lasts long enough to kill the worker during it.
SLOW_STARTING_AGENT = AGENT.replace(
    b"class Random(Agent):\n",
    b"class Random(Agent):\n    def __init__(self):\n        import time\n\n"
    b"        time.sleep(6)\n\n",
)
#: A duel's and an evaluation's length: long enough to kill the worker playing it.
MATCHES = 300
EPISODES = 150


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


def _slow_to_validate(owner: User) -> int:
    return upload(owner, "tic_tac_toe", "once", SLOW_STARTING_AGENT).pk


def _played(owner: User) -> int:
    revisions = [
        upload_validated(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload_validated(
            owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py"
        ),
    ]
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="connect_four"),
            name="Long duel",
            revisions=revisions,
            matches_per_duel=MATCHES,
        )
        tournament_launch(tournament=tournament)
    return Duel.objects.get(tournament=tournament).pk


def _evaluated(owner: User) -> int:
    upload_validated(owner, "cartpole", "balancer", PLAYERS / "cartpole" / "balancer.py")
    competition = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"),
        name="Long evaluation",
        episodes=EPISODES,
        seed=3,
    )
    with transaction.atomic():
        score_competition_start(competition=competition)
    return Evaluation.objects.get(competition=competition).pk


def _validated(revision_id: int) -> Revision:
    validated = Revision.objects.validated().filter(pk=revision_id)
    wait_for(validated.exists, timeout=120, what="the revision to be validated")
    return Revision.objects.get(pk=revision_id)


def _built_once(revision_id: int, published: Path) -> None:
    revision = _validated(revision_id)
    assert revision.job(JobKind.VALIDATION).attempts == 1
    assert Duel.objects.of_revision(revision).filter(is_validation=True).count() == 1


def _validated_once(revision_id: int, published: Path) -> None:
    revision = _validated(revision_id)
    assert revision.job(JobKind.BUILD).attempts == 1
    # The killed worker stored nothing: one validation duel, the second worker's.
    assert Duel.objects.of_revision(revision).filter(is_validation=True).count() == 1


def _published_once(revision_id: int, published: Path) -> None:
    revision = Revision.objects.get(pk=revision_id)
    assert revision.is_valid and revision.publication_status == StepStatus.SUCCEEDED
    assert git("log", "--format=%s", "main", cwd=published).splitlines() == ["tic_tac_toe/once v1"]


def _played_once(duel_id: int, published: Path) -> None:
    duel = Duel.objects.get(pk=duel_id)
    tournament_id = duel.tournament_id
    assert tournament_id is not None
    wait_for(
        lambda: Tournament.objects.filter(
            pk=tournament_id, status=TournamentStatus.COMPLETED
        ).exists(),
        timeout=60,
        what="the tournament to finish",
    )
    tournament = Tournament.objects.get(pk=tournament_id)
    assert (tournament.duels_done, tournament.duels_failed) == (1, 0)
    assert (duel.status, duel.matches.count()) == (DuelStatus.SUCCEEDED, MATCHES)
    # Rated once per distinct match (one identical to an earlier one is no new evidence),
    # by the worker that finished it: both players of each.
    distinct = len(distinct_matches(duel.matches.order_by("index")))
    changes = RatingChange.objects.filter(duel=duel)
    assert changes.count() == 2 * distinct
    assert changes.values("match").distinct().count() == distinct


def _evaluated_once(evaluation_id: int, published: Path) -> None:
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    assert evaluation.status == DuelStatus.SUCCEEDED
    assert len(evaluation.episodes) == evaluation.episodes_played == EPISODES
    assert evaluation.mean_return == 500.0


@dataclasses.dataclass(frozen=True)
class Work:
    #: Queues the work (its uploads first, with the first worker); the subject's id.
    queue: Callable[[User], int]
    #: What its owner finds once a second worker did it again.
    done_once: Callable[[int, Path], None]
    #: Held up by the slow test app (``tests.support.slow_app``), else long by itself.
    slow: bool = False


WORK = {
    JobKind.BUILD: Work(_uploaded, _built_once, slow=True),
    JobKind.VALIDATION: Work(_slow_to_validate, _validated_once),
    JobKind.PUBLICATION: Work(_uploaded, _published_once, slow=True),
    JobKind.DUEL: Work(_played, _played_once),
    JobKind.EVALUATION: Work(_evaluated, _evaluated_once),
}


def holding(kind: str, subject_id: int, attempts: int) -> bool:
    job = job_of(kind=kind, subject_id=subject_id)
    return job is not None and (job.status, job.attempts) == (JobStatus.RUNNING, attempts)


def start_worker(
    workers: Workers, name: str, published: Path, *, slow: str = "", **environment: str
) -> subprocess.Popen[bytes]:
    """A worker on every queue but online play's, publishing to ``published`` from a work
    folder of its own; ``slow`` (``<kind>:<seconds>``) holds each job of that kind."""
    # Any: mypy takes a dict unpacked into keywords for each keyword, those not str too.
    settings: dict[str, Any] = {
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
    slow = f"{kind}:120" if WORK[kind].slow else ""
    first = start_worker(celery_workers, "first", published, slow=slow)
    subject_id = WORK[kind].queue(make_user())
    wait_for(lambda: holding(kind, subject_id, 1), timeout=120, what=f"the {kind} to start")

    celery_workers.kill(first)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK)
    start_worker(celery_workers, "second", published)

    wait_for(
        lambda: job_of(kind=kind, subject_id=subject_id).is_finished,
        timeout=300,
        what=f"the {kind} to be taken up again",
    )
    job = job_of(kind=kind, subject_id=subject_id)
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
    # Each attempt waits for a worker process started just before it to boot, which a
    # loaded machine slows several times: as long as the test above waits for a job.
    wait_for(lambda: holding("build", revision.pk, 1), timeout=120, what="the first attempt")
    celery_workers.kill(first)
    second = start_worker(celery_workers, "second", published, slow="build:120", **attempts)
    wait_for(lambda: holding("build", revision.pk, 2), timeout=120, what="the second attempt")

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
