"""The tournament manager's reconcile steps on factory rows, beyond the lifecycle every
job kind shares (``tests/core/test_jobs.py``): a duel waiting behind busy workers, a duel
whose message reached two workers, the live events of finished duels. ``sent`` records
the tasks that would have been started."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.jobs import dispatch
from core.jobs.watchdog import jobs_recover
from core.models import DuelStatus, Job, LiveEvent
from tests.factories import DuelFactory, RevisionFactory
from tournament_manager.daemon import run_once
from tournament_manager.services.tournaments import tournament_launch

pytestmark = pytest.mark.django_db(transaction=True)

BUILD = "builder.tasks.build_revision"
VALIDATE = "duel_runner.tasks.validate_revision"
PLAY = "duel_runner.tasks.play_duel"


def ago(seconds: float) -> object:
    return timezone.now() - timedelta(seconds=seconds)


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

    assert jobs_recover()

    assert sorted(duel_id for _, duel_id in sent) == sorted(duel.pk for duel in waiting)
    for duel in waiting:
        duel.refresh_from_db()
        assert (duel.status, duel.job.resends) == (DuelStatus.QUEUED, 2)


def test_a_resent_duel_is_played_once_and_rated_once(settings, tmp_path, monkeypatch):
    """Both queue messages reach a worker: the second finds the duel played."""
    from builder.services import revision_build_here
    from core.jobs.local_builds import revision_host_lock
    from core.services.environments import environments_import
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
        with revision_host_lock(revision.pk, shared=False):
            revision_build_here(revision=revision)  # its build, made on this host
        Participant.objects.create(tournament=tournament, revision=revision)
    dispatched: list[int] = []
    with monkeypatch.context() as patched:
        patched.setattr(dispatch, "start", lambda path, **ids: dispatched.append(ids["duel_id"]))
        tournament = tournament_launch(tournament=tournament)
        duel = tournament.duels.get()
        Job.objects.filter(duel=duel).update(resend_at=ago(1))
        assert jobs_recover()
    assert dispatched == [duel.pk, duel.pk]

    for duel_id in dispatched:
        duel_play(duel_id=duel_id)

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
