"""The migration that counts every tournament's rated matches by pairing (issue 27), on a
database made by the code before it: counted from the history as the duels' ratings count
them from then on, the matches rated before the environment's latest reset apart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from core.models import Environment, LeaderboardEntry, RatedPairing
from tests.support.migrations import database_at, latest, migrate
from tournament_manager.leaderboard import leaderboard_refit

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0032_fit_cadence")]


@pytest.fixture
def before_pairings() -> Iterator[Any]:
    with database_at(BEFORE) as apps:
        yield apps


def test_it_counts_the_rated_matches_of_each_pairing_from_the_history(before_pairings):
    model = before_pairings.get_model
    owner = model("core", "User").objects.create(email="old@example.org")
    game = model("core", "Environment").objects.create(
        name="tic_tac_toe",
        title="Tic-tac-toe",
        description="",
        rules="",
        players=2,
        matches_per_duel=2,
        validation_matches=2,
        move_time=1,
        time_bank=10,
        startup_time=15,
        memory_mb=512,
        cpu_seconds=300,
    )
    Competitor, Revision, Rating, RatingChange = (
        model("core", name) for name in ("Competitor", "Revision", "Rating", "RatingChange")
    )
    Tournament, Duel, DuelSeat, Match = (
        model("core", name) for name in ("Tournament", "Duel", "DuelSeat", "Match")
    )
    revisions, ratings = [], []
    for name in ("a", "b", "c"):
        competitor = Competitor.objects.create(owner=owner, environment=game, name=name)
        revisions.append(
            Revision.objects.create(
                competitor=competitor,
                version=1,
                filename="main.py",
                sha256="a" * 64,
                size=1,
                entry_point="main.py",
                build_status="succeeded",
                validation_status="succeeded",
            )
        )
        ratings.append(Rating.objects.create(competitor=competitor))
    a, b, c = revisions
    ladder = Tournament.objects.create(
        environment=game, name="Ladder", format="ladder", status="running", matches_per_duel=2
    )

    def duel(one: Any, two: Any, scores: list[tuple[float, float]], *, rated: bool) -> None:
        played = Duel.objects.create(
            tournament=ladder,
            environment=game,
            num_matches=len(scores),
            seed=1,
            status="succeeded",
            result="DRAW",
        )
        for number, revision in enumerate((one, two), start=1):
            DuelSeat.objects.create(duel=played, number=number, revision=revision)
        for index, score in enumerate(scores):
            first = 1 if index % 2 == 0 else 2
            match = Match.objects.create(
                duel=played,
                index=index,
                first_player=first,
                seats=[first, 3 - first],
                scores=list(score),
                seed=index,
                result="DRAW",
            )
            if rated:
                for revision in (one, two):
                    rating = ratings[revisions.index(revision)]
                    RatingChange.objects.create(
                        rating=rating,
                        duel=played,
                        match=match,
                        mu_before=25,
                        sigma_before=8,
                        mu_after=25,
                        sigma_after=8,
                    )

    duel(a, b, [(1, 0), (1, 0), (0.5, 0.5)], rated=True)  # before the reset
    for rating in ratings:
        RatingChange.objects.create(
            rating=rating,
            reason="reset",
            mu_before=25,
            sigma_before=8,
            mu_after=25,
            sigma_after=8,
        )
    duel(a, b, [(0, 1), (1, 0)], rated=True)
    duel(b, c, [(0.5, 0.5), (0, 1)], rated=True)
    duel(a, c, [(1, 0)], rated=False)  # never rated (as self-play is not)

    migrate(latest())

    assert Environment.objects.get(pk=game.pk).ratings_epoch == 1
    counted = {
        (p.one_id, p.two_id, p.first_player, p.epoch): (p.games, p.one_wins, p.draws)
        for p in RatedPairing.objects.all()
    }
    assert counted == {
        (a.pk, b.pk, 1, 0): (2, 1, 1),
        (a.pk, b.pk, 2, 0): (1, 1, 0),
        (a.pk, b.pk, 1, 1): (1, 0, 0),
        (a.pk, b.pk, 2, 1): (1, 1, 0),
        (b.pk, c.pk, 1, 1): (1, 0, 1),
        (b.pk, c.pk, 2, 1): (1, 0, 0),
    }
    # The leaderboard reads the matches rated since the reset alone.
    leaderboard_refit(environment=Environment.objects.get(pk=game.pk), force=True)
    records = {
        entry.revision_id: (entry.matches, entry.wins, entry.draws, entry.losses)
        for entry in LeaderboardEntry.objects.all()
    }
    assert records == {a.pk: (2, 1, 0, 1), b.pk: (4, 1, 1, 2), c.pk: (2, 1, 1, 0)}
