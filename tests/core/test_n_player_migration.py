"""The migration that makes room for games of more than two players keeps every existing
duel, match and rating as it was, and the code reads them as two-player rows."""

from __future__ import annotations

import pytest

from core.models import Duel, Match, Rating, RatingChange
from tests.support.migrations import database_at, latest, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0017_competitor_kind_human")]
AFTER = [("core", "0018_duels_of_more_than_two_players")]


@pytest.fixture
def before_n_players():
    with database_at(BEFORE) as apps:
        yield apps


def test_it_keeps_every_duel_match_and_rating_of_two_players(before_n_players):
    apps = before_n_players
    model = apps.get_model
    owner = model("core", "User").objects.create(email="old@example.org")
    environment = model("core", "Environment").objects.create(
        name="tic_tac_toe", title="Tic-tac-toe", description="", rules="", players=2,
        matches_per_duel=10, validation_matches=2, move_time=1, time_bank=10, startup_time=15,
        memory_mb=512, cpu_seconds=300,
    )  # fmt: skip
    revisions = []
    for name in ("old-x", "old-o"):
        competitor = model("core", "Competitor").objects.create(
            owner=owner, environment=environment, name=name
        )
        revision = model("core", "Revision").objects.create(
            competitor=competitor, version=1, filename="main.py", sha256="a" * 64,
            size=1, entry_point="main.py",
        )  # fmt: skip
        revisions.append(revision)
    duel = model("core", "Duel").objects.create(
        revision_1=revisions[0], revision_2=revisions[1], num_matches=2, seed=5,
        status="succeeded", result="PLAYER_1_WIN", player_1_wins=1, draws=1,
        player_1_score=1.5, player_2_score=0.5, player_1_log="x's log",
    )  # fmt: skip
    for index, (first, scores, result) in enumerate(
        [(1, (1.0, 0.0), "PLAYER_1_WIN"), (2, (0.5, 0.5), "DRAW")]
    ):
        model("core", "Match").objects.create(
            duel=duel, index=index, first_player=first, seed=index, result=result,
            player_1_score=scores[0], player_2_score=scores[1], actions=[[4, None]],
        )  # fmt: skip
    rating = model("core", "Rating").objects.create(
        competitor=revisions[0].competitor, mu=27.5, sigma=7.9, games=2
    )
    model("core", "RatingChange").objects.create(
        rating=rating, duel=duel, mu_before=25, sigma_before=8.3, mu_after=27.5, sigma_after=7.9
    )

    migrate(AFTER)
    migrate(latest())

    stored = Duel.objects.get(pk=duel.pk)
    assert stored.num_players == 2
    assert stored.result == "PLAYER_1_WIN"
    players = stored.players()
    assert [(p.number, p.revision.pk, p.score, p.rank) for p in players] == [
        (1, revisions[0].pk, 1.5, 1),
        (2, revisions[1].pk, 0.5, 2),
    ]
    assert players[0].log == "x's log"
    matches = list(Match.objects.filter(duel=stored).order_by("index"))
    assert [match.seats for match in matches] == [[1, 2], [2, 1]]
    assert [match.scores for match in matches] == [[1.0, 0.0], [0.5, 0.5]]
    assert [match.actions for match in matches] == [[[4, None]]] * 2
    kept = Rating.objects.get(pk=rating.pk)
    assert (kept.mu, kept.sigma, kept.games) == (27.5, 7.9, 2)
    assert RatingChange.objects.filter(rating=kept, duel=stored).count() == 1
