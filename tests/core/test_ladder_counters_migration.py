"""The migration that gives every ladder entry its counters (duels played, its last duel's
end), on a database made by the code before it: counted from the history as the duels'
ends count them from then on."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from core.models import Participant
from tests.support.migrations import database_at, latest, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0030_score_competition_entries")]


@pytest.fixture
def before_counters() -> Iterator[Any]:
    with database_at(BEFORE) as apps:
        yield apps


def test_it_counts_each_ladder_entrys_duels_from_the_history(before_counters):
    model = before_counters.get_model
    owner = model("core", "User").objects.create(email="old@example.org")
    game = model("core", "Environment").objects.create(
        name="tic_tac_toe", title="Tic-tac-toe", description="", rules="", players=2,
        matches_per_duel=2, validation_matches=2, move_time=1, time_bank=10, startup_time=15,
        memory_mb=512, cpu_seconds=300,
    )  # fmt: skip
    revisions = []
    for name in ("a", "b", "c"):
        competitor = model("core", "Competitor").objects.create(
            owner=owner, environment=game, name=name
        )
        revisions.append(
            model("core", "Revision").objects.create(
                competitor=competitor,
                version=1,
                filename="main.py",
                sha256="a" * 64,
                size=1,
                entry_point="main.py",
            )
        )
    Tournament, Participant_, Duel, DuelSeat = (
        model("core", name) for name in ("Tournament", "Participant", "Duel", "DuelSeat")
    )
    ladder = Tournament.objects.create(
        environment=game, name="Ladder", format="ladder", status="running", matches_per_duel=2
    )
    round_robin = Tournament.objects.create(environment=game, name="RR", matches_per_duel=2)
    entries = [Participant_.objects.create(tournament=ladder, revision=r) for r in revisions]
    other = Participant_.objects.create(tournament=round_robin, revision=revisions[0])
    start = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)

    def duel(tournament: Any, one: Any, two: Any, status: str, minute: int | None) -> None:
        played = Duel.objects.create(
            tournament=tournament,
            environment=game,
            num_matches=2,
            seed=minute or 0,
            status=status,
            result="DRAW" if status == "succeeded" else "",
            ended_at=None if minute is None else start.replace(minute=minute),
        )
        for number, revision in enumerate((one, two), start=1):
            DuelSeat.objects.create(duel=played, number=number, revision=revision)

    a, b, c = revisions
    duel(ladder, a, b, "succeeded", 10)
    duel(ladder, a, c, "succeeded", 20)
    duel(ladder, b, c, "failed", 30)
    duel(ladder, a, b, "running", None)
    duel(round_robin, a, a, "succeeded", 40)  # another tournament's

    migrate(latest())

    counted = {entry.pk: entry for entry in Participant.objects.all()}
    assert [counted[entry.pk].duels_played for entry in entries] == [2, 1, 1]
    assert [counted[entry.pk].last_duel_at.minute for entry in entries] == [20, 30, 30]
    assert (counted[other.pk].duels_played, counted[other.pk].last_duel_at) == (0, None)
