"""The tournament manager's passes (``run_once``) and its command, on factory rows whose
duels nobody plays (``dispatched`` records what would have been started)."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.db.models import QuerySet
from django.utils import timezone

from core.errors import ArenaError
from core.jobs.watchdog import jobs_recover
from core.models import (
    Duel,
    DuelResult,
    DuelSeat,
    DuelStatus,
    Job,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tests.factories import CompetitorFactory, EnvironmentFactory, RevisionFactory
from tests.support.concurrency import twice_at_once
from tournament_manager import daemon
from tournament_manager.daemon import run_once
from tournament_manager.management.commands.run_tournament_manager import Command
from tournament_manager.services.tournaments import tournament_launch, tournament_schedule

pytestmark = pytest.mark.django_db(transaction=True)


def scheduled(tournament: Tournament, *, seconds_from_now: float = -1) -> Tournament:
    tournament_schedule(
        tournament=tournament, starts_at=timezone.now() + timedelta(seconds=seconds_from_now)
    )
    return tournament


def expire(duel: Duel, *, attempts: int) -> None:
    """What a worker that died mid-duel leaves: running, with a lease nobody renews."""
    started = timezone.now() - timedelta(minutes=2)
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING)
    Job.objects.filter(duel=duel).update(
        status=DuelStatus.RUNNING,
        attempts=attempts,
        lease_owner="dead-host:123",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
        resend_at=None,
        started_at=started,
    )


def played_on_paper(duels: QuerySet[Duel]) -> None:
    """Results stored the way a worker does, without telling the tournament."""
    times = {"started_at": timezone.now() - timedelta(seconds=30), "ended_at": timezone.now()}
    Job.objects.filter(duel__in=duels).update(
        status=DuelStatus.SUCCEEDED, attempts=1, resend_at=None, **times
    )
    duels.update(status=DuelStatus.SUCCEEDED, result=DuelResult.PLAYER_1_WIN)
    DuelSeat.objects.filter(duel__in=duels, number=1).update(score=2)


# --- scheduled launches -------------------------------------------------------------------


def test_it_launches_a_scheduled_tournament_once_it_is_due(make_tournament, dispatched):
    due = scheduled(make_tournament(3))
    later = scheduled(make_tournament(3), seconds_from_now=3600)

    assert run_once()

    due.refresh_from_db()
    later.refresh_from_db()
    assert due.status == TournamentStatus.RUNNING
    assert sorted(dispatched) == sorted(due.duels.values_list("pk", flat=True))
    assert len(dispatched) == 3
    assert later.status == TournamentStatus.DRAFT
    assert not run_once()


def test_it_unschedules_a_draft_that_cannot_start_and_says_why(make_tournament, dispatched):
    lonely = scheduled(make_tournament(1))

    assert run_once()

    lonely.refresh_from_db()
    assert (lonely.status, lonely.starts_at) == (TournamentStatus.DRAFT, None)
    assert "at least two participants" in lonely.error
    assert not run_once()


def test_it_schedules_drafts_only(make_tournament, dispatched):
    tournament = tournament_launch(tournament=make_tournament(2))

    with pytest.raises(ArenaError, match="not a draft"):
        scheduled(tournament)


# --- a duel that failed (the lifecycle of every job: tests/core/test_jobs.py) --------------


def test_it_fails_a_duel_after_too_many_attempts_without_scoring_it(
    make_tournament, finish, settings, dispatched
):
    settings.ARENA_DUEL_MAX_ATTEMPTS = 3
    tournament = tournament_launch(tournament=make_tournament(3))
    first, second, third = tournament.duels.order_by("pk")
    finish(first)
    finish(second)
    expire(third, attempts=3)
    dispatched.clear()

    assert jobs_recover()  # the watchdog's pass (run_watchdog) fails it
    run_once()  # and the tournament manager's settles the tournament

    third.refresh_from_db()
    tournament.refresh_from_db()
    assert (third.status, third.result) == (DuelStatus.FAILED, "")
    assert "stopped 3 times" in third.reported_error
    assert dispatched == []
    assert tournament.status == TournamentStatus.FAILED
    assert (tournament.duels_done, tournament.duels_failed) == (2, 1)
    assert tournament.error == "1 duel(s) failed; re-run them from the admin"
    assert sum(p.points for p in tournament.participants.all()) == 2 * 2


# --- finishing, rounds ---------------------------------------------------------------------


def test_it_finishes_a_tournament_whose_duels_are_done_with_exact_counts(
    make_tournament, dispatched
):
    tournament = tournament_launch(tournament=make_tournament(3))
    played_on_paper(tournament.duels.all())
    Tournament.objects.filter(pk=tournament.pk).update(duels_done=1, duels_failed=1)  # drifted

    assert run_once()

    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_total, tournament.duels_done, tournament.duels_failed) == (3, 3, 0)
    assert sum(p.points for p in tournament.participants.all()) == 3 * 2
    assert not run_once()


def test_it_plays_a_scheduled_swiss_tournament_round_after_round(make_tournament, dispatched):
    tournament = scheduled(make_tournament(4, format=TournamentFormat.SWISS, rounds=2))

    assert run_once()
    assert tournament.duels.filter(round=1).count() == 2
    played_on_paper(tournament.duels.filter(round=1))
    assert run_once()
    assert tournament.duels.filter(round=2).count() == 2
    played_on_paper(tournament.duels.filter(round=2))
    assert run_once()

    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.current_round, tournament.duels_total, tournament.duels_done) == (2, 4, 4)
    assert sorted(dispatched) == sorted(tournament.duels.values_list("pk", flat=True))


# --- several managers at once --------------------------------------------------------------


def test_two_managers_at_once_start_each_duel_exactly_once(make_tournament, settings, dispatched):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    launches = [scheduled(make_tournament(4)) for _ in range(3)]
    stalled = tournament_launch(tournament=make_tournament(4))
    for duel in stalled.duels.all():
        expire(duel, attempts=1)
    swiss = tournament_launch(
        tournament=make_tournament(4, format=TournamentFormat.SWISS, rounds=2)
    )
    played_on_paper(swiss.duels.all())
    sum_to_10 = EnvironmentFactory(name="sum_to_10")
    for _ in range(5):
        RevisionFactory(competitor=CompetitorFactory(environment=sum_to_10), validated=True)
    ladder = tournament_launch(
        tournament=make_tournament(0, format=TournamentFormat.LADDER, environment=sum_to_10)
    )
    dispatched.clear()

    def manager() -> None:
        for _ in range(4):
            jobs_recover()  # the stalled duels are the watchdog's, run alongside
            run_once()

    twice_at_once(manager)
    expected = [
        *Duel.objects.filter(tournament__in=[*launches, stalled, ladder]).values_list(
            "pk", flat=True
        ),
        *swiss.duels.filter(round=2).values_list("pk", flat=True),
    ]
    assert sorted(dispatched) == sorted(expected)
    assert len(expected) == 3 * 6 + 6 + 2 + 2
    assert all(t.duels.count() == 6 for t in launches)
    assert ladder.duels.count() == 2
    swiss.refresh_from_db()
    assert swiss.current_round == 2


# --- the command ---------------------------------------------------------------------------


def test_the_command_makes_one_pass_with_once(make_tournament, dispatched):
    tournament = scheduled(make_tournament(2))

    call_command("run_tournament_manager", "--once", verbosity=0)

    assert Tournament.objects.get(pk=tournament.pk).status == TournamentStatus.RUNNING
    assert len(dispatched) == 1


def test_the_loop_survives_a_lost_database_connection(
    make_tournament, dispatched, monkeypatch, caplog
):
    """The manager's connection is killed by the server between two passes: the pass
    that finds out is logged, and the next one reconnects and does the work."""
    if connection.vendor != "postgresql":
        pytest.skip("killing the connection from the server needs PostgreSQL")
    tournament = scheduled(make_tournament(2))
    command = Command()
    command.stopping = threading.Event()
    passes: list[bool | str] = []
    real_run_once = daemon.run_once

    def run_once_then_stop() -> bool:
        if not passes:
            _kill_own_connection()
        try:
            did_work = real_run_once()
        except OperationalError:
            passes.append("lost")
            raise
        passes.append(did_work)
        if len(passes) >= 2:
            command.stopping.set()
        return did_work

    monkeypatch.setattr(daemon, "run_once", run_once_then_stop)

    with caplog.at_level(logging.WARNING, logger="tournament_manager.daemon"):
        command.serve(interval=0.01)

    assert passes == ["lost", True]
    assert "database error" in caplog.text
    assert Tournament.objects.get(pk=tournament.pk).status == TournamentStatus.RUNNING


def _kill_own_connection() -> None:
    """Have another session terminate this connection's server process."""
    import psycopg

    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [pid] = cursor.fetchone()
    database = connection.settings_dict
    with psycopg.connect(
        host=database["HOST"],
        port=database["PORT"] or None,
        user=database["USER"],
        password=database["PASSWORD"],
        dbname=database["NAME"],
        autocommit=True,
    ) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", [pid])
