"""The migration that makes every player of a duel a seat row, on a database made by the
code before it: a self-play duel (one revision in every seat), duels of two and of four
players, a failed one and their matches carried over with nothing lost (revisions, wins,
scores, ranks, errors, restarts, logs, the game, each match's scores and seats), and
undoing it puts every column back. LLM conversations get their rank in the match (0028)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from core.models import Duel, Match, MatchConversation, RatingChange
from tests.support.migrations import database_at, latest, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0024_revision_step_columns_removed")]
COLUMNS = ("wins", "score", "errors", "restarts", "log")


@pytest.fixture
def before_seats() -> Iterator[Any]:
    with database_at(BEFORE) as apps:
        yield apps


def old_world(apps: Any) -> dict[str, Any]:
    """Duels of every shape, stored as the code before stored them: players 1 and 2 on
    the duel row, 3 and 4 in ``DuelPlayer``; matches of two players with their scores in
    columns only (as recorded before games of more than two), of four with lists."""
    model = apps.get_model
    owner = model("core", "User").objects.create(email="old@example.org")

    def environment(name: str, players: int) -> Any:
        return model("core", "Environment").objects.create(
            name=name, title=name, description="", rules="", players=players,
            matches_per_duel=4, validation_matches=2, move_time=1, time_bank=10,
            startup_time=15, memory_mb=512, cpu_seconds=300,
        )  # fmt: skip

    def revision(environment: Any, name: str) -> Any:
        competitor = model("core", "Competitor").objects.create(
            owner=owner, environment=environment, name=name
        )
        return model("core", "Revision").objects.create(
            competitor=competitor, version=1, filename="main.py", sha256="a" * 64, size=1,
            entry_point="main.py",
        )  # fmt: skip

    tic_tac_toe, lowest_unique = environment("tic_tac_toe", 2), environment("lowest_unique", 4)
    x, o = revision(tic_tac_toe, "x-bot"), revision(tic_tac_toe, "o-bot")
    bidders = [revision(lowest_unique, f"bidder-{n}") for n in range(1, 5)]
    Duel, DuelPlayer, Match = (model("core", name) for name in ("Duel", "DuelPlayer", "Match"))
    self_play = Duel.objects.create(
        revision_1=x, revision_2=x, is_validation=True, num_matches=2, seed=1,
        status="succeeded", result="DRAW", draws=2, player_1_score=1, player_2_score=1,
        player_1_log="first copy", player_2_log="second copy",
    )  # fmt: skip
    two = Duel.objects.create(
        revision_1=x, revision_2=o, num_matches=2, seed=2, status="succeeded",
        result="PLAYER_1_WIN", player_1_wins=1, player_2_wins=0, draws=1, player_1_score=1.5,
        player_2_score=0.5, player_1_errors=0, player_2_errors=1, other_errors=0,
        player_1_restarts=1, player_2_restarts=2, player_1_log="x thinks", player_2_log="o too",
    )  # fmt: skip
    Match.objects.create(
        duel=two, index=0, first_player=1, seed=20, result="PLAYER_1_WIN", player_1_score=1,
        player_2_score=0, actions=[[4, None]],
    )  # fmt: skip
    Match.objects.create(
        duel=two, index=1, first_player=2, seed=21, result="DRAW", player_1_score=0.5,
        player_2_score=0.5, actions=[[None, 0]],
    )  # fmt: skip
    # o's conversations, had it been an LLM player: it lost the first match, drew the second.
    for match in Match.objects.filter(duel=two):
        model("core", "MatchConversation").objects.create(
            match=match, player=2, model="rule-based", harness_version="1", harness_hash="0" * 64
        )
    four = Duel.objects.create(
        revision_1=bidders[0], revision_2=bidders[1], num_players=4, num_matches=1, seed=3,
        status="succeeded", result="RANKED", player_1_wins=1, player_1_score=1.0,
        player_2_score=0.0, player_2_errors=1, player_1_log="one", player_2_log="two",
    )  # fmt: skip
    for number, (bidder, score, log) in enumerate(
        [(bidders[2], 0.5, "three"), (bidders[3], 0.5, "four")], start=3
    ):
        DuelPlayer.objects.create(
            duel=four, number=number, revision=bidder, score=score, restarts=number, log=log
        )
    Match.objects.create(
        duel=four, index=0, first_player=2, seat_players=[2, 3, 4, 1], scores=[1, 0, 0.5, 0.5],
        seed=30, result="RANKED", player_1_score=1, player_2_score=0, actions=[[1, 2, 3, 3]],
    )  # fmt: skip
    failed = Duel.objects.create(
        revision_1=o, revision_2=x, num_matches=2, seed=4, status="failed",
        error="the worker's disk filled up", player_1_log="o started",
    )  # fmt: skip
    # Its third player's row was lost: it keeps the two it has.
    short = Duel.objects.create(
        revision_1=bidders[0], revision_2=bidders[1], num_players=3, num_matches=1, seed=5,
        status="cancelled",
    )  # fmt: skip
    rating = model("core", "Rating").objects.create(competitor=x.competitor, mu=27, sigma=7)
    model("core", "RatingChange").objects.create(
        rating=rating, duel=two, mu_before=25, sigma_before=8, mu_after=27, sigma_after=7
    )
    return {
        "environments": (tic_tac_toe.pk, lowest_unique.pk),
        "x": x.pk, "o": o.pk, "bidders": [bidder.pk for bidder in bidders],
        "self_play": self_play.pk, "two": two.pk, "four": four.pk, "failed": failed.pk,
        "short": short.pk,
    }  # fmt: skip


def seats(duel_id: int) -> list[tuple[Any, ...]]:
    fields = ("number", "revision_id", "wins", "score", "rank", "errors", "restarts", "log")
    return [
        tuple(getattr(seat, field) for field in fields)
        for seat in Duel.objects.get(pk=duel_id).players()
    ]


def test_every_duel_keeps_its_players_as_seat_rows(before_seats):
    old = old_world(before_seats)

    migrate(latest())

    tic_tac_toe, lowest_unique = old["environments"]
    x, o, bidders = old["x"], old["o"], old["bidders"]
    assert seats(old["self_play"]) == [
        (1, x, 0, 1.0, 1, 0, 0, "first copy"),
        (2, x, 0, 1.0, 1, 0, 0, "second copy"),
    ]
    assert seats(old["two"]) == [
        (1, x, 1, 1.5, 1, 0, 1, "x thinks"),
        (2, o, 0, 0.5, 2, 1, 2, "o too"),
    ]
    assert seats(old["four"]) == [
        (1, bidders[0], 1, 1.0, 1, 0, 0, "one"),
        (2, bidders[1], 0, 0.0, 4, 1, 0, "two"),
        (3, bidders[2], 0, 0.5, 2, 0, 3, "three"),
        (4, bidders[3], 0, 0.5, 2, 0, 4, "four"),
    ]
    # Not scored: no ranks, its logs and error kept.
    assert seats(old["failed"]) == [
        (1, o, 0, 0.0, None, 0, 0, "o started"),
        (2, x, 0, 0.0, None, 0, 0, ""),
    ]
    assert Duel.objects.get(pk=old["failed"]).error == "the worker's disk filled up"
    games = dict(Duel.objects.values_list("pk", "environment_id"))
    assert games == {
        old["self_play"]: tic_tac_toe,
        old["two"]: tic_tac_toe,
        old["four"]: lowest_unique,
        old["failed"]: tic_tac_toe,
        old["short"]: lowest_unique,
    }
    short = Duel.objects.get(pk=old["short"])
    assert (short.num_players, len(short.players())) == (2, 2)
    assert Duel.objects.get(pk=old["four"]).num_players == 4
    assert Duel.objects.of_revision(x).count() == 3
    assert Duel.objects.of_revision(bidders[3]).get().pk == old["four"]
    matches = {
        (match.duel_id, match.index): (match.seats, match.scores, match.actions)
        for match in Match.objects.all()
    }
    assert matches == {
        (old["two"], 0): ([1, 2], [1.0, 0.0], [[4, None]]),
        (old["two"], 1): ([2, 1], [0.5, 0.5], [[None, 0]]),
        (old["four"], 0): ([2, 3, 4, 1], [1, 0, 0.5, 0.5], [[1, 2, 3, 3]]),
    }
    assert RatingChange.objects.get().duel_id == old["two"]
    ranks = MatchConversation.objects.filter(match__duel=old["two"]).order_by("match__index")
    assert [conversation.rank for conversation in ranks] == [2, 1]


def test_undoing_it_puts_every_column_back(before_seats):
    old = old_world(before_seats)
    migrate(latest())

    apps = migrate(BEFORE)

    Duel = apps.get_model("core", "Duel")
    two = Duel.objects.get(pk=old["two"])
    assert (two.revision_1_id, two.revision_2_id) == (old["x"], old["o"])
    assert [getattr(two, f"player_1_{column}") for column in COLUMNS] == [1, 1.5, 0, 1, "x thinks"]
    assert [getattr(two, f"player_2_{column}") for column in COLUMNS] == [0, 0.5, 1, 2, "o too"]
    four = Duel.objects.get(pk=old["four"])
    assert (four.revision_1_id, four.revision_2_id) == tuple(old["bidders"][:2])
    more = apps.get_model("core", "DuelPlayer").objects.filter(duel=four).order_by("number")
    assert [(p.number, p.revision_id, p.score, p.restarts, p.log) for p in more] == [
        (3, old["bidders"][2], 0.5, 3, "three"),
        (4, old["bidders"][3], 0.5, 4, "four"),
    ]
    Match = apps.get_model("core", "Match")
    assert [
        (m.player_1_score, m.player_2_score) for m in Match.objects.order_by("duel_id", "index")
    ] == [(1, 0), (0.5, 0.5), (1, 0)]
