"""The tournament manager's reconcile steps on factory rows: builds and validations whose
worker died are queued again or failed after their last attempt; work whose queue message
was lost is sent again. ``sent`` records the tasks that would have been started."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core import dispatch
from core.leases import worker_name
from core.models import DuelStatus, Job, LiveEvent, Revision, StepStatus, TournamentStatus
from core.services import revision_step_begin, revision_step_finish
from tests.factories import DuelFactory, RevisionFactory
from tournament_manager.daemon import run_once
from tournament_manager.services import tournament_launch

pytestmark = pytest.mark.django_db(transaction=True)

BUILD = "builder.tasks.build_revision"
VALIDATE = "duel_runner.tasks.validate_revision"
PLAY = "duel_runner.tasks.play_duel"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(task, id) of every piece of work handed to the workers, once its transaction commits."""
    started: list[tuple[str, int]] = []
    lock = threading.Lock()

    def start(path: str, **ids: int) -> None:
        def record() -> None:
            with lock:
                started.append((path, *ids.values()))

        transaction.on_commit(record)

    monkeypatch.setattr(dispatch, "start", start)
    return started


def ago(seconds: float) -> object:
    return timezone.now() - timedelta(seconds=seconds)


def running(step: str, *, attempts: int, expired: bool = True, **fields: object) -> Revision:
    """A revision whose ``step`` a worker (maybe dead) holds."""
    if step == "validation":
        fields.setdefault("build_status", StepStatus.SUCCEEDED)
    return RevisionFactory(
        **{
            f"{step}_status": StepStatus.RUNNING,
            f"{step}_attempts": attempts,
            f"{step}_lease_owner": "dead-host:123",
            f"{step}_lease_expires_at": ago(1) if expired else ago(-60),
            f"{step}_started_at": ago(120),
            **fields,
        }
    )


@pytest.mark.parametrize(("step", "task"), [("build", BUILD), ("validation", VALIDATE)])
def test_it_queues_again_a_step_whose_lease_expired(step, task, sent):
    revision = running(step, attempts=1)

    assert run_once()

    revision.refresh_from_db()
    assert getattr(revision, f"{step}_status") == StepStatus.QUEUED
    assert getattr(revision, f"{step}_lease_owner") == ""
    assert getattr(revision, f"{step}_attempts") == 1  # counted again when it is claimed
    assert sent == [(task, revision.pk)]
    assert not run_once()


def test_it_leaves_a_step_whose_lease_is_renewed(sent):
    revision = running("build", attempts=1, expired=False)

    assert not run_once()

    revision.refresh_from_db()
    assert revision.build_status == StepStatus.RUNNING and sent == []


def test_it_fails_a_build_whose_worker_stopped_on_its_last_attempt(settings, sent):
    settings.ARENA_REVISION_MAX_ATTEMPTS = 3
    revision = running("build", attempts=3)

    assert run_once()

    revision.refresh_from_db()
    assert revision.build_status == StepStatus.FAILED
    assert revision.build_error.startswith(
        "The worker building this revision stopped 3 times before it finished"
    )
    assert "an organizer can rebuild it" in revision.build_error
    assert revision.validation_status == StepStatus.NONE
    assert (revision.build_lease_owner, revision.build_lease_expires_at) == ("", None)
    assert sent == []


def test_it_fails_a_validation_whose_worker_stopped_on_its_last_attempt(settings, sent):
    settings.ARENA_REVISION_MAX_ATTEMPTS = 2
    revision = running("validation", attempts=2)

    assert run_once()

    revision.refresh_from_db()
    assert revision.validation_status == StepStatus.FAILED
    assert "The worker validating this revision stopped 2 times" in revision.validation_error
    assert revision.build_status == StepStatus.SUCCEEDED


def test_a_worker_claims_an_expired_step_itself_and_counts_the_attempt(settings):
    revision = running("build", attempts=1)

    claimed = revision_step_begin(revision_id=revision.pk, step="build", worker="new:1")

    assert claimed is not None
    assert (claimed.build_attempts, claimed.build_lease_owner) == (2, "new:1")
    assert claimed.build_lease_expires_at > timezone.now()


def test_a_worker_cannot_claim_a_step_past_its_last_attempt(settings):
    settings.ARENA_REVISION_MAX_ATTEMPTS = 2
    revision = running("build", attempts=2)

    assert revision_step_begin(revision_id=revision.pk, step="build", worker="new:1") is None


def test_a_worker_that_lost_its_lease_records_nothing():
    revision = RevisionFactory()
    claimed = revision_step_begin(revision_id=revision.pk, step="build", worker="first:1")
    Revision.objects.filter(pk=revision.pk).update(build_lease_expires_at=ago(1))
    assert revision_step_begin(revision_id=revision.pk, step="build", worker="second:2")

    assert not revision_step_finish(
        revision=claimed, step="build", succeeded=False, error="late", worker="first:1"
    )

    revision.refresh_from_db()
    assert (revision.build_status, revision.build_error) == (StepStatus.RUNNING, "")
    assert revision.build_lease_owner == "second:2"
    assert revision_step_finish(revision=claimed, step="build", succeeded=True, worker="second:2")


def test_the_heartbeat_keeps_a_long_step_from_being_taken_over(settings, sent):
    from core.services import revision_step_heartbeat

    settings.ARENA_REVISION_LEASE_SECONDS = 1
    revision = RevisionFactory()
    worker = worker_name()
    revision_step_begin(revision_id=revision.pk, step="build", worker=worker)
    with revision_step_heartbeat(revision=revision, step="build", worker=worker):
        for _ in range(4):
            threading.Event().wait(0.5)
            assert not run_once()

    revision.refresh_from_db()
    assert (revision.build_status, revision.build_attempts) == (StepStatus.RUNNING, 1)


# --- work whose queue message was lost ------------------------------------------------------


def test_it_sends_a_build_queued_too_long_again_waiting_twice_as_long_each_time(settings, sent):
    settings.ARENA_RESEND_AFTER_SECONDS = 60
    revision = RevisionFactory(build_resend_at=ago(1))

    assert run_once()

    revision.refresh_from_db()
    assert sent == [(BUILD, revision.pk)]
    assert revision.build_resends == 1
    wait = (revision.build_resend_at - timezone.now()).total_seconds()
    assert 115 < wait <= 120
    assert not run_once()


def test_it_sends_a_validation_again_only_once_its_build_succeeded(sent):
    building = RevisionFactory(build_status=StepStatus.RUNNING, validation_resend_at=ago(1))
    built = RevisionFactory(build_status=StepStatus.SUCCEEDED, validation_resend_at=ago(1))

    assert run_once()

    assert sent == [(VALIDATE, built.pk)]
    building.refresh_from_db()
    assert building.validation_resends == 0


def test_it_fails_a_build_no_worker_took_up_after_the_last_resend(settings, sent):
    settings.ARENA_MAX_RESENDS = 2
    revision = RevisionFactory(build_resend_at=ago(1), build_resends=2)

    assert run_once()

    revision.refresh_from_db()
    assert revision.build_status == StepStatus.FAILED
    assert "No worker took up building this revision" in revision.build_error
    assert "sent to the workers 3 times" in revision.build_error
    assert sent == []


def test_it_sends_a_duel_queued_too_long_again(make_tournament, sent):
    tournament = tournament_launch(tournament=make_tournament(2))
    duel = tournament.duels.get()
    sent.clear()
    Job.objects.filter(duel=duel).update(resend_at=ago(1))

    assert run_once()

    duel.refresh_from_db()
    assert sent == [(PLAY, duel.pk)]
    assert (duel.status, duel.job.resends) == (DuelStatus.QUEUED, 1)
    assert not run_once()


def test_it_fails_a_duel_no_worker_took_up_after_the_last_resend(make_tournament, settings, sent):
    settings.ARENA_MAX_RESENDS = 2
    tournament = tournament_launch(tournament=make_tournament(2))
    duel = tournament.duels.get()
    sent.clear()
    Job.objects.filter(duel=duel).update(resend_at=ago(1), resends=2)

    assert run_once()

    duel.refresh_from_db()
    tournament.refresh_from_db()
    assert (duel.status, duel.job.status) == (DuelStatus.FAILED, DuelStatus.FAILED)
    assert "No worker took it up" in duel.error and "3 times" in duel.error
    assert sent == []
    assert (tournament.status, tournament.duels_failed) == (TournamentStatus.FAILED, 1)


def test_a_duel_waiting_behind_running_ones_is_resent_without_counting_it(
    make_tournament, settings, sent
):
    """Busy workers, not a lost message: a long tournament keeps duels queued for hours."""
    settings.ARENA_MAX_RESENDS = 2
    tournament = tournament_launch(tournament=make_tournament(3))
    playing, *waiting = tournament.duels.order_by("pk")
    Job.objects.filter(duel=playing).update(
        status=DuelStatus.RUNNING, lease_owner="busy:1", lease_expires_at=ago(-60)
    )
    sent.clear()
    Job.objects.filter(duel__in=waiting).update(resend_at=ago(1), resends=2)

    assert run_once()

    assert sorted(duel_id for _, duel_id in sent) == sorted(duel.pk for duel in waiting)
    for duel in waiting:
        duel.refresh_from_db()
        assert (duel.status, duel.job.resends) == (DuelStatus.QUEUED, 2)


def test_a_resent_duel_is_played_once_and_rated_once(settings, tmp_path, monkeypatch):
    """Both queue messages reach a worker: the second finds the duel played."""
    from builder.services import revision_build
    from core.services import environments_import
    from duel_runner.services import duel_play
    from tests.factories import CompetitorFactory, TournamentFactory
    from tests.pipeline import PLAYERS

    settings.ARENA_BUILD_ROOT = tmp_path / "builds"
    environments_import()
    from core.models import Environment, Participant, RatingChange

    environment = Environment.objects.get(name="sum_to_10")
    tournament = TournamentFactory(environment=environment, matches_per_duel=2)
    for name in ("optimal", "random_player"):
        code = (PLAYERS / "sum_to_10" / f"{name}.py").read_bytes()
        revision = RevisionFactory(
            competitor=CompetitorFactory(environment=environment), validated=True, code=code
        )
        Revision.objects.filter(pk=revision.pk).update(build_status=StepStatus.QUEUED)
        revision_build(revision_id=revision.pk)
        Participant.objects.create(tournament=tournament, revision=revision)
    dispatched: list[int] = []
    with monkeypatch.context() as patched:
        patched.setattr(dispatch, "start", lambda path, **ids: dispatched.append(ids["duel_id"]))
        tournament = tournament_launch(tournament=tournament)
        duel = tournament.duels.get()
        Job.objects.filter(duel=duel).update(resend_at=ago(1))
        assert run_once()
    assert dispatched == [duel.pk, duel.pk]

    for duel_id in dispatched:
        assert duel_play(duel_id=duel_id) is None

    duel.refresh_from_db()
    assert (duel.status, duel.job.attempts, duel.matches.count()) == (DuelStatus.SUCCEEDED, 1, 2)
    assert RatingChange.objects.count() == 2 * 2  # two players, once per match


def test_it_deletes_the_live_events_a_cancelled_duel_left_and_keeps_a_running_ones(sent):
    cancelled = DuelFactory(status=DuelStatus.CANCELLED)
    playing = DuelFactory(status=DuelStatus.RUNNING)
    for duel in (cancelled, playing):
        LiveEvent.objects.create(duel=duel, lines='{"type": "step"}')

    run_once()

    assert list(LiveEvent.objects.values_list("duel_id", flat=True)) == [playing.pk]
