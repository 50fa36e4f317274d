"""A worker killed (SIGKILL, pool and all) in the middle of a build or a validation, with
PostgreSQL, Redis, real Celery workers and the watchdog: the step is taken up
again once its lease runs out, or fails with a message a user understands after its last
attempt. Nothing stays running forever."""

from __future__ import annotations

import pytest

from core.models import Duel, Revision, StepStatus
from tests.pipeline import make_user, pipeline, upload  # noqa: F401
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

SLOW_APP = "tests.support.slow_app"
#: Short leases and re-sends, so a killed worker's step is recovered in seconds; the
#: broker's own redelivery of the killed worker's message stays an hour away.
QUICK = {"ARENA_REVISION_LEASE_SECONDS": "2", "ARENA_RESEND_AFTER_SECONDS": "1"}
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


def settled(revision: Revision) -> bool:
    revision.refresh_from_db()
    return revision.build_status in FINAL and revision.validation_status in FINAL


def step_running(revision: Revision, step: str, attempts: int) -> bool:
    job = revision.job(step)
    return job is not None and (job.status, job.attempts) == (StepStatus.RUNNING, attempts)


def test_a_build_killed_midway_is_built_again_once(celery_workers):
    first = celery_workers.start("first", app=SLOW_APP, ARENA_TEST_SLOW_BUILD_SECONDS="60", **QUICK)
    revision = upload(make_user(), "tic_tac_toe", "rebuilt", AGENT)
    wait_for(lambda: step_running(revision, "build", 1), timeout=30, what="the build to start")

    celery_workers.kill(first)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK)
    celery_workers.start("second", **QUICK)

    wait_for(lambda: settled(revision), timeout=90, what="the build to be taken up again")
    assert revision.is_valid, (revision.job("build").error, celery_workers.log("watchdog"))
    assert (revision.job("build").attempts, revision.job("validation").attempts) == (2, 1)
    assert revision.job("build").lease_owner == revision.job("validation").lease_owner == ""
    assert "second@" in celery_workers.log("second")
    assert Duel.objects.filter(is_validation=True, revision_1=revision).count() == 1


def test_a_build_whose_worker_dies_every_time_fails_and_says_why(celery_workers):
    slow = {"app": SLOW_APP, "ARENA_TEST_SLOW_BUILD_SECONDS": "60", **QUICK}
    attempts = {"ARENA_REVISION_MAX_ATTEMPTS": "2"}
    first = celery_workers.start("first", **slow, **attempts)
    revision = upload(make_user(), "tic_tac_toe", "doomed", AGENT)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK, **attempts)
    wait_for(lambda: step_running(revision, "build", 1), timeout=30, what="the first attempt")
    celery_workers.kill(first)
    second = celery_workers.start("second", **slow, **attempts)
    wait_for(lambda: step_running(revision, "build", 2), timeout=30, what="the second attempt")

    celery_workers.kill(second)

    wait_for(lambda: settled(revision), timeout=30, what="the watchdog to fail the build")
    assert revision.build_status == StepStatus.FAILED, celery_workers.log("watchdog")
    assert "the worker building this revision stopped 2 times before it finished" in (
        revision.job("build").error
    )
    assert revision.validation_status == StepStatus.NONE
    assert revision.job("build").attempts == 2


def test_a_validation_killed_midway_is_validated_again_once(celery_workers):
    first = celery_workers.start("first", **QUICK)
    revision = upload(make_user(), "tic_tac_toe", "slow-starter", SLOW_STARTING_AGENT)
    wait_for(lambda: step_running(revision, "validation", 1), timeout=30, what="the validation")

    celery_workers.kill(first)
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **QUICK)
    celery_workers.start("second", **QUICK)

    wait_for(lambda: settled(revision), timeout=90, what="the validation to be taken up again")
    assert revision.is_valid, (revision.job("validation").error, celery_workers.log("watchdog"))
    assert (revision.job("build").attempts, revision.job("validation").attempts) == (1, 2)
    # The killed worker stored nothing: one validation duel, the second worker's.
    duels = Duel.objects.filter(is_validation=True, revision_1=revision)
    assert duels.count() == 1
