"""The production path with real processes: the tournament manager daemon
(``manage.py run_tournament_manager``) and a Celery worker on a Redis broker, against
PostgreSQL, take a scheduled Swiss tournament from its launch to its final standings."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.models import (
    Environment,
    RatingChange,
    Revision,
    StepStatus,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.processes import ended
from tests.support.workers import wait_for
from tournament_manager.ratings import distinct_matches
from tournament_manager.services.tournaments import tournament_create, tournament_schedule

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

FINAL = {StepStatus.SUCCEEDED, StepStatus.FAILED}


def validated(revisions: list[Revision]) -> bool:
    for revision in revisions:
        revision.refresh_from_db()
    return all(r.validation_status in FINAL for r in revisions)


def test_the_manager_and_a_worker_play_a_scheduled_swiss_tournament(celery_workers):
    celery_workers.start("worker")
    owner = make_user()
    optimal, *randoms = [
        upload(owner, "sum_to_10", name, PLAYERS / "sum_to_10" / filename)
        for name, filename in (
            ("optimal", "optimal.py"),
            ("rando", "random_player.py"),
            ("also-rando", "random_player.py"),
        )
    ]
    wait_for(lambda: validated([optimal, *randoms]), timeout=90, what="validation")
    assert all(r.is_valid for r in (optimal, *randoms)), celery_workers.log("worker")
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="sum_to_10"),
            name="Scheduled Swiss",
            revisions=[optimal, *randoms],
            format=TournamentFormat.SWISS,
            rounds=3,
            matches_per_duel=4,
        )
        tournament_schedule(tournament=tournament, starts_at=timezone.now() + timedelta(seconds=1))

    manager = celery_workers.manage("manager", "run_tournament_manager", "--interval", "0.2")

    wait_for(
        lambda: (
            Tournament.objects.filter(pk=tournament.pk, status=TournamentStatus.RUNNING)
            .exclude(started_at=None)
            .exists()
            or Tournament.objects.filter(
                pk=tournament.pk, status=TournamentStatus.COMPLETED
            ).exists()
        ),
        timeout=120,  # the manager's process boots first: slow on a loaded machine
        what="the manager to launch the tournament when it is due",
    )
    wait_for(
        lambda: Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.COMPLETED, TournamentStatus.FAILED]
        ).exists(),
        timeout=120,
        what="three Swiss rounds played by the worker, scheduled by the manager",
    )
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED, (
        tournament.error,
        celery_workers.log("manager"),
    )
    assert tournament.started_at >= tournament.starts_at
    duels = list(tournament.duels.order_by("round"))
    assert [duel.round for duel in duels] == [1, 2, 3]
    assert len({frozenset((d.revisions()[0].pk, d.revisions()[1].pk)) for d in duels}) == 3
    assert all(duel.job.attempts == 1 and duel.matches.count() == 4 for duel in duels)
    standings = list(tournament.participants.order_by("rank"))
    assert [p.byes for p in standings] == [1, 1, 1]
    assert sum(p.points for p in standings) == 3 * 2 + 3 * 2
    assert [p.points for p in standings] == sorted((p.points for p in standings), reverse=True)
    # Sum to 10 is won by its first player's right moves: the optimal player wins each
    # match it starts and loses no duel. A random player wins a match it starts 1 time in
    # 27 (the seeds are random): it may draw a duel, so who ranks first is chance.
    assert next(p for p in standings if p.revision == optimal).losses == 0
    assert (tournament.duels_total, tournament.duels_done, tournament.duels_failed) == (3, 3, 0)

    manager.send_signal(signal.SIGTERM)
    assert ended(manager) == 0
    log = celery_workers.log("manager")
    assert "SIGTERM received" in log and "Tournament manager stopped." in log


def test_the_manager_recovers_a_round_robin_when_its_worker_is_killed(celery_workers):
    # Short, so that the killed worker's duel is taken over in seconds; not so short that
    # a healthy worker's heartbeat on a loaded machine misses it.
    short_lease = {"ARENA_DUEL_LEASE_SECONDS": "5"}
    first = celery_workers.start("first", **short_lease)
    owner = make_user()
    revisions = [
        upload(owner, "connect_four", name, PLAYERS / "connect_four" / filename)
        for name, filename in (
            ("minimax", "minimax.py"),
            ("kaggle", "kaggle_style.py"),
            ("rando", "random_player.py"),
        )
    ]
    wait_for(lambda: validated(revisions), timeout=90, what="validation")
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name="connect_four"),
            name="Interrupted cup",
            revisions=revisions,
            matches_per_duel=120,
        )
        tournament_schedule(tournament=tournament, starts_at=timezone.now())
    manager = celery_workers.manage(
        "manager", "run_tournament_manager", "--interval", "0.2", **short_lease
    )
    celery_workers.manage("watchdog", "run_watchdog", "--interval", "0.2", **short_lease)
    wait_for(
        lambda: tournament.duels.filter(status="running").exists(),
        timeout=120,  # after the manager's and the watchdog's processes boot
        what="the first worker to start a duel",
    )

    celery_workers.kill(first)
    celery_workers.start("second", **short_lease)

    wait_for(
        lambda: Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.COMPLETED, TournamentStatus.FAILED]
        ).exists(),
        timeout=180,
        what="the watchdog to re-queue the lost duel and the second worker to finish",
    )
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED, celery_workers.log("watchdog")
    duels = list(tournament.duels.all())
    assert len(duels) == 3
    assert all(duel.status == "succeeded" and duel.matches.count() == 120 for duel in duels)
    assert max(duel.job.attempts for duel in duels) == 2
    assert (tournament.duels_done, tournament.duels_failed) == (3, 0)
    # Each distinct match rated once (two players each), the lost attempt's never.
    distinct = sum(len(distinct_matches(duel.matches.order_by("index"))) for duel in duels)
    assert distinct > 3 * 100  # few repeats once each match has an opening of its own
    assert RatingChange.objects.filter(duel__in=duels).count() == 2 * distinct
    manager.send_signal(signal.SIGTERM)
    assert ended(manager) == 0
