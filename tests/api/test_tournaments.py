"""Tournaments and their standings through the API."""

from __future__ import annotations

import pytest

from core.models import TournamentFormat, TournamentStatus
from tests.factories import EnvironmentFactory, ParticipantFactory, TournamentFactory
from tests.support.responses import ok

pytestmark = pytest.mark.django_db


def test_it_lists_tournaments_newest_first_with_their_progress(client, tournament):
    later = TournamentFactory(name="Winter cup", status=TournamentStatus.RUNNING)

    page = ok(client.get("/api/v1/tournaments"))

    assert [t["name"] for t in page["items"]] == ["Winter cup", "Autumn cup"]
    assert page["items"][0]["id"] == later.pk
    autumn = page["items"][1]
    assert autumn["status"] == "completed"
    assert autumn["format"] == "round_robin"
    assert autumn["environment"] == "tic_tac_toe"
    assert (autumn["duels_total"], autumn["duels_done"], autumn["duels_failed"]) == (1, 1, 0)


def test_it_filters_tournaments_by_environment_status_and_format(client, tournament):
    TournamentFactory(name="Winter cup", status=TournamentStatus.RUNNING)
    TournamentFactory(
        name="Four in a row", environment=EnvironmentFactory(name="connect_four"), format="swiss"
    )

    def listed(query: str) -> list[str]:
        return [t["name"] for t in ok(client.get(f"/api/v1/tournaments?{query}"))["items"]]

    assert listed("status=running") == ["Winter cup"]
    assert listed("environment=connect_four") == ["Four in a row"]
    assert listed("format=swiss") == ["Four in a row"]
    assert listed("environment=tic_tac_toe&status=completed") == ["Autumn cup"]
    assert client.get("/api/v1/tournaments?status=paused").status_code == 422


def test_it_gives_a_tournament_with_its_standings_best_first(client, tournament):
    detail = ok(client.get(f"/api/v1/tournaments/{tournament.pk}"))

    assert detail["name"] == "Autumn cup"
    assert [
        (row["rank"], row["competitor"], row["owner"], row["points"], row["wins"], row["losses"])
        for row in detail["standings"]
    ] == [(1, "alices-bot", "Alice", 2, 1, 0), (2, "bobs-bot", "Bob", 0, 0, 1)]
    assert detail["standings"][0]["revision"] == 1
    assert detail["standings"][0]["buchholz"] is None  # a round robin has none


def test_a_swiss_tournament_gives_buchholz_which_breaks_ties_on_points(client):
    swiss = TournamentFactory(format=TournamentFormat.SWISS, rounds=3, current_round=3)
    ParticipantFactory(
        tournament=swiss, revision__competitor__is_public=True, points=4, buchholz=6, rank=1
    )
    ParticipantFactory(
        tournament=swiss, revision__competitor__is_public=True, points=4, buchholz=2, rank=2
    )

    standings = ok(client.get(f"/api/v1/tournaments/{swiss.pk}"))["standings"]

    assert [(row["rank"], row["points"], row["buchholz"]) for row in standings] == [
        (1, 4, 6),
        (2, 4, 2),
    ]


def test_a_private_tournament_is_hidden_from_everyone_but_the_organizers(
    client, carol, organizer, bearer
):
    private = TournamentFactory(name="Staff trial", is_public=False)

    assert client.get(f"/api/v1/tournaments/{private.pk}").status_code == 404
    assert client.get(f"/api/v1/tournaments/{private.pk}", **bearer(carol)).status_code == 404
    assert ok(client.get("/api/v1/tournaments", **bearer(carol)))["count"] == 0
    assert ok(client.get(f"/api/v1/tournaments/{private.pk}", **bearer(organizer)))["name"] == (
        "Staff trial"
    )
    assert ok(client.get("/api/v1/tournaments", **bearer(organizer)))["count"] == 1
