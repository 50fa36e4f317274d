"""Organizer actions (rebuild, re-validate, cancel a tournament, re-run a duel) are services
that act with one conditional UPDATE: two organizers clicking at once, on PostgreSQL, act
once between them."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from core.jobs import dispatch
from core.models import DuelStatus, Job, StepStatus, TournamentStatus
from core.services.revisions import revision_rebuild, revision_revalidate
from tests.factories import ParticipantFactory, RevisionFactory, TournamentFactory
from tests.support.concurrency import twice_at_once
from tournament_manager.services.settlement import duel_rerun
from tournament_manager.services.tournaments import tournament_cancel, tournament_launch

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Tasks handed to the workers (none is run)."""
    tasks: list[str] = []
    lock = threading.Lock()

    def start(path: str, **ids: int) -> None:
        with lock:
            tasks.append(path)

    monkeypatch.setattr(dispatch, "start", start)
    return tasks


def test_two_organizers_rebuilding_at_once_rebuild_once(started):
    revision = RevisionFactory(validated=True)

    outcomes = twice_at_once(lambda: revision_rebuild(revision=revision))

    assert sorted(outcomes) == [False, True]
    assert started == ["builder.tasks.build_revision"]
    revision.refresh_from_db()
    assert (revision.build_status, revision.validation_status) == (
        StepStatus.QUEUED,
        StepStatus.QUEUED,
    )


def test_two_organizers_revalidating_at_once_revalidate_once(started):
    revision = RevisionFactory(validated=True)

    outcomes = twice_at_once(lambda: revision_revalidate(revision=revision))

    assert sorted(outcomes) == [False, True]
    assert started == ["duel_runner.tasks.validate_revision"]


def test_two_organizers_cancelling_at_once_cancel_once(started):
    tournament = TournamentFactory()
    for _ in range(3):
        ParticipantFactory(tournament=tournament)
    tournament = tournament_launch(tournament=tournament)

    outcomes = twice_at_once(lambda: tournament_cancel(tournament=tournament))

    assert sorted(outcomes) == [False, True]
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.CANCELLED
    assert tournament.duels.filter(status=DuelStatus.CANCELLED).count() == 3


def test_two_organizers_rerunning_a_duel_at_once_rerun_it_once(started):
    tournament = TournamentFactory()
    for _ in range(2):
        ParticipantFactory(tournament=tournament)
    tournament = tournament_launch(tournament=tournament)
    duel = tournament.duels.get()
    tournament.duels.update(status=DuelStatus.FAILED, error="lost")
    Job.objects.filter(duel__tournament=tournament).update(status=DuelStatus.FAILED)
    started.clear()

    outcomes = twice_at_once(lambda: duel_rerun(duel=duel))

    assert sorted(outcomes) == [False, True]
    assert started == ["duel_runner.tasks.play_duel"]
    duel.refresh_from_db()
    assert duel.status == DuelStatus.QUEUED


def test_a_revision_being_validated_is_not_revalidated(started):
    revision = RevisionFactory(
        build_status=StepStatus.SUCCEEDED,
        validation_status=StepStatus.RUNNING,
        validation_lease_owner="live:1",
        validation_lease_expires_at=timezone.now() + timedelta(seconds=30),
    )

    assert not revision_revalidate(revision=revision)
    assert started == []
