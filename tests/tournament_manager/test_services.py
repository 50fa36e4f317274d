from __future__ import annotations

import random
import types

import pytest
from django.db import transaction

from core.errors import ArenaError
from core.models import (
    DuelResult,
    DuelSeat,
    DuelStatus,
    Environment,
    Match,
    Rating,
    RatingChange,
    TournamentStatus,
)
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tournament_manager.ratings import ratings_reset
from tournament_manager.services import scheduling
from tournament_manager.services.settlement import duel_rerun
from tournament_manager.services.standings import standings_update
from tournament_manager.services.tournaments import tournament_create, tournament_launch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


@pytest.fixture(autouse=True)
def duel_seeds(monkeypatch):
    """The duels' seeds drawn from a seeded generator, not the system's: a duel's seed
    decides its openings and the random players' moves, so the optimal player's results
    here are the same every run. (With the system's seeds, an opening that leaves it a
    lost position and a random player that then plays perfectly drew a duel once in a
    while: CI saw 3 points instead of 4.)"""
    seeded = random.Random(2026)
    monkeypatch.setattr(scheduling, "random", types.SimpleNamespace(SystemRandom=lambda: seeded))


def sum_to_10_field():
    owner = make_user()
    return [
        upload(owner, "sum_to_10", "optimal", PLAYERS / "sum_to_10" / "optimal.py"),
        upload(owner, "sum_to_10", "rando", PLAYERS / "sum_to_10" / "random_player.py"),
        upload(owner, "sum_to_10", "also-rando", PLAYERS / "sum_to_10" / "random_player.py"),
    ]


def launch(revisions, matches=4):
    environment = Environment.objects.get(name="sum_to_10")
    with transaction.atomic():
        tournament = tournament_create(
            environment=environment, name="Cup", revisions=revisions, matches_per_duel=matches
        )
        tournament_launch(tournament=tournament)
    tournament.refresh_from_db()
    return tournament


def test_it_plays_a_round_robin_to_the_end_with_standings():
    optimal, rando, also_rando = sum_to_10_field()
    tournament = launch([optimal, rando, also_rando])

    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_total, tournament.duels_done, tournament.duels_failed) == (3, 3, 0)
    standings = list(tournament.participants.order_by("rank"))
    assert sum(p.points for p in standings) == 6
    assert [p.points for p in standings] == sorted((p.points for p in standings), reverse=True)
    assert standings[0].rank == 1
    # The optimal player wins each match it starts (sum to 10 is the first player's):
    # it loses no duel. A random player wins a match it starts 1 time in 27 (the seeds
    # are random), so a duel of four may end drawn 1 time in 729.
    best = next(p for p in standings if p.revision == optimal)
    assert best.losses == 0 and best.wins + best.draws == 2
    assert Match.objects.filter(duel__tournament=tournament).count() == 12
    for duel in tournament.duels.all():
        assert [m.first_player for m in duel.matches.order_by("index")] == [1, 2, 1, 2]


def test_it_rates_every_match_and_logs_each_change():
    optimal, rando, also_rando = sum_to_10_field()
    launch([optimal, rando, also_rando])

    leaderboard = list(Rating.objects.leaderboard())
    assert leaderboard[0].competitor == optimal.competitor
    assert leaderboard[0].games == 8
    assert RatingChange.objects.filter(reason="match").count() == 2 * 12


def test_it_lets_ties_share_a_rank():
    optimal, rando, also_rando = sum_to_10_field()
    tournament = launch([optimal, rando, also_rando])
    # Make the two random players' records identical: both lost 0-4 to optimal, drew 2-2.
    against_optimal = tournament.duels.of_revision(optimal)
    against_optimal.update(result=DuelResult.PLAYER_1_WIN)
    DuelSeat.objects.filter(duel__in=against_optimal, revision=optimal).update(score=4)
    DuelSeat.objects.filter(duel__in=against_optimal).exclude(revision=optimal).update(score=0)
    between_randos = tournament.duels.of_revision(rando).of_revision(also_rando)
    between_randos.update(result=DuelResult.DRAW)
    DuelSeat.objects.filter(duel__in=between_randos).update(score=2)

    standings = standings_update(tournament=tournament)

    ranks = {p.revision_id: p.rank for p in standings}
    assert ranks[rando.pk] == ranks[also_rando.pk] == 2


def test_it_resets_ratings_with_a_logged_reset():
    optimal, rando, also_rando = sum_to_10_field()
    launch([optimal, rando, also_rando])

    assert ratings_reset() == 3
    assert all(r.mu == 25.0 and r.games == 0 for r in Rating.objects.all())
    assert RatingChange.objects.filter(reason="reset").count() == 3


def test_it_refuses_unvalidated_or_duplicate_entries():
    owner = make_user()
    broken = upload(owner, "sum_to_10", "broken", b"syntax error here(\n")
    optimal = upload(owner, "sum_to_10", "optimal", PLAYERS / "sum_to_10" / "optimal.py")
    environment = Environment.objects.get(name="sum_to_10")

    with pytest.raises(ArenaError, match="not validated"):
        tournament_create(environment=environment, name="x", revisions=[optimal, broken])
    again = upload(owner, "sum_to_10", "optimal", PLAYERS / "sum_to_10" / "optimal.py")
    with pytest.raises(ArenaError, match="one revision only"):
        tournament_create(environment=environment, name="x", revisions=[optimal, again])


def test_it_reruns_a_failed_duel_and_completes_the_tournament():
    optimal, rando, _ = sum_to_10_field()
    environment = Environment.objects.get(name="sum_to_10")
    with transaction.atomic():
        tournament = tournament_create(
            environment=environment, name="Cup", revisions=[optimal, rando], matches_per_duel=2
        )
    # Break the build so the duel fails as an infrastructure error, not a result (a
    # folder that is gone would be built again on this host: its entry point goes).
    entry = rando.build_dir / rando.entry_point
    hidden = entry.with_name("away.py")
    entry.rename(hidden)
    with transaction.atomic():
        tournament_launch(tournament=tournament)
    tournament.refresh_from_db()
    duel = tournament.duels.get()
    assert duel.status == DuelStatus.FAILED
    assert tournament.status == TournamentStatus.FAILED
    assert [seat.errors for seat in duel.players()] == [0, 0]

    hidden.rename(entry)
    with transaction.atomic():
        duel_rerun(duel=duel)
    tournament.refresh_from_db()
    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.job.attempts == 1  # fresh attempts
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_done, tournament.duels_failed) == (1, 0)
