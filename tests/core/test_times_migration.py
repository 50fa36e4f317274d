"""The migration that leaves a duel's and an evaluation's times to its job, on a database
made by the code before it: the copies cleared, a validation's own kept, and one without a
job (none is expected) given one with its times."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from core.models import Duel, Job
from tests.support.migrations import database_at, latest, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0033_rated_pairings")]
START = datetime.datetime(2026, 11, 1, 10, tzinfo=datetime.UTC)
END = START + datetime.timedelta(minutes=3)


@pytest.fixture
def before_times() -> Iterator[Any]:
    with database_at(BEFORE) as apps:
        yield apps


def test_it_leaves_the_times_to_the_jobs_and_keeps_a_validations_own(before_times):
    model = before_times.get_model
    game = model("core", "Environment").objects.create(
        name="tic_tac_toe", title="Tic-tac-toe", description="", rules="", players=2,
        matches_per_duel=2, validation_matches=2, move_time=1, time_bank=10, startup_time=15,
        memory_mb=512, cpu_seconds=300,
    )  # fmt: skip
    OldDuel, OldJob = model("core", "Duel"), model("core", "Job")

    def duel(**fields: Any) -> Any:
        return OldDuel.objects.create(
            environment=game, num_matches=2, seed=1, started_at=START, ended_at=END, **fields
        )

    with_job = duel(status="failed", error="referee: no engine")
    OldJob.objects.create(
        kind="duel", duel=with_job, status="failed", started_at=START, ended_at=END
    )
    # Retried: its job's times were cleared, its own copy kept (what the pages showed).
    retried = duel(status="queued")
    OldJob.objects.create(kind="duel", duel=retried, status="queued")
    without_job = duel(status="succeeded", result="DRAW")
    validation = duel(status="succeeded", result="DRAW", is_validation=True)

    migrate(latest())

    assert Duel.objects.get(pk=with_job.pk).played == (START, END)
    assert Duel.objects.get(pk=retried.pk).played == (None, None)
    made = Job.objects.get(duel_id=without_job.pk)
    assert (made.status, made.started_at, made.ended_at) == ("succeeded", START, END)
    assert Duel.objects.get(pk=validation.pk).played == (START, END)
    assert not Job.objects.filter(duel_id=validation.pk).exists()
    own = Duel.objects.filter(is_validation=False).values_list("started_at", "ended_at")
    assert set(own) == {(None, None)}
