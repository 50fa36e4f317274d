"""The job list: every kind of background work in one list, filtered by kind and status,
with a failed job retried and a queued one cancelled from it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from core.jobs import dispatch
from core.jobs.worker import job_claim
from core.models import DuelStatus, Job, JobKind, JobStatus
from tests.factories import DuelFactory, EvaluationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, int]]]:
    sent: list[tuple[str, dict[str, int]]] = []
    monkeypatch.setattr(
        dispatch, "start", lambda path, *, queue=None, **ids: sent.append((path, ids))
    )
    return sent


def test_it_lists_the_jobs_of_every_kind_filtered_by_kind_and_status(organizer_client: Client):
    duel = DuelFactory()
    evaluation = EvaluationFactory(finished=True)

    everything = organizer_client.get("/admin/core/job/").content.decode()
    failed_duels = organizer_client.get("/admin/core/job/?kind=duel&status=failed")
    evaluations = organizer_client.get("/admin/core/job/?kind=evaluation").content.decode()

    assert f"/admin/core/duel/{duel.pk}/change/" in everything
    assert f"/admin/core/evaluation/{evaluation.pk}/change/" in everything
    assert f"/admin/core/duel/{duel.pk}/change/" not in failed_duels.content.decode()
    assert f"/admin/core/evaluation/{evaluation.pk}/change/" in evaluations
    assert f"/admin/core/duel/{duel.pk}/change/" not in evaluations


def test_it_retries_a_failed_job_and_refuses_an_unfinished_one(
    run_action: Callable[..., list[str]], started: list
):
    failed = DuelFactory(status=DuelStatus.FAILED, error="lost")
    queued = DuelFactory()
    Job.objects.filter(duel=failed).update(status=JobStatus.FAILED, attempts=3, error="lost")

    notes = run_action(Job, "retry", [failed.job, queued.job])

    failed.refresh_from_db()
    assert (failed.status, failed.job.status, failed.job.attempts) == ("queued", "queued", 0)
    assert started == [("duel_runner.tasks.play_duel", {"duel_id": failed.pk})]
    assert any("only a failed or cancelled job can be retried" in note for note in notes)
    assert "Queued again: 1" in notes


def test_it_cancels_a_queued_job_so_that_no_worker_plays_it(
    run_action: Callable[..., list[str]], started: list
):
    queued = DuelFactory()
    done = DuelFactory(finished=True)

    notes = run_action(Job, "cancel", [queued.job, done.job])

    queued.refresh_from_db()
    assert (queued.status, queued.job.status) == (DuelStatus.CANCELLED, JobStatus.CANCELLED)
    assert "Cancelled by an organizer" in queued.reported_error
    assert Job.objects.get(duel=done).status == JobStatus.SUCCEEDED
    assert any("only a queued or running job can be cancelled" in note for note in notes)
    assert job_claim(kind=JobKind.DUEL, subject_id=queued.pk, worker="late") is None
    assert started == []
