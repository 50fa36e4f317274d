"""A one-player game has no duels and no rating: where a game of duels shows its
leaderboard, its pages lead to its score competitions, and they name its limits as an
evaluation applies them (per episode, per evaluation), not as a duel does."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from core.models import User
from tests.factories import CompetitorFactory, EnvironmentFactory, ScoreCompetitionFactory

pytestmark = pytest.mark.django_db


def facts(page: str) -> dict[str, str]:
    """The environment page's limits, by name."""
    return dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", page))


def test_a_one_player_game_page_lists_the_limits_an_evaluation_applies(client: Client) -> None:
    EnvironmentFactory(name="cartpole")

    limits = facts(client.get("/environments/cartpole/").content.decode())

    assert limits["Episodes per evaluation"] == "20"
    assert limits["Time bank per episode"] == "10.0 s"
    assert limits["CPU time per evaluation"] == "5 min 00 s"
    assert not [name for name in limits if "duel" in name or "match" in name.lower()]


def test_a_game_of_duels_page_still_lists_its_duel_limits(client: Client) -> None:
    EnvironmentFactory(name="tic_tac_toe")

    limits = facts(client.get("/environments/tic_tac_toe/").content.decode())

    assert {"Matches per duel", "Time bank per match", "CPU time per duel"} <= limits.keys()
    assert "Time bank per episode" not in limits


def test_a_one_player_game_page_shows_its_score_competitions_where_a_leaderboard_would_be(
    client: Client,
) -> None:
    competition = ScoreCompetitionFactory(name="Balance cup")

    page = client.get("/environments/cartpole/").content.decode()

    assert 'id="leaderboard-title"' not in page and "No rated competitor yet" not in page
    main = page[page.index('<div class="column-main">') :]
    assert main.index("Score competitions") < main.index("Rules")
    assert f'href="{competition.get_absolute_url()}">Balance cup</a>' in page


def test_the_home_page_promises_score_competitions_for_a_one_player_game(client: Client) -> None:
    EnvironmentFactory(name="cartpole")
    EnvironmentFactory(name="tic_tac_toe")

    page = client.get("/").content.decode()

    cards = {
        name: next(card for card in page.split('<li class="card">') if f"/{name}/" in card)
        for name in ("cartpole", "tic_tac_toe")
    }
    assert "Score competitions and rules →" in cards["cartpole"]
    assert "Leaderboard" not in cards["cartpole"]
    assert "Leaderboard and rules →" in cards["tic_tac_toe"]


def test_a_one_player_game_leaderboard_leads_to_its_only_score_competition(
    client: Client,
) -> None:
    competition = ScoreCompetitionFactory(name="Balance cup")

    response = client.get("/environments/cartpole/leaderboard/")

    assert response.status_code == 302
    assert response["Location"] == competition.get_absolute_url()
    page = client.get(response["Location"]).content.decode()
    assert "Balance cup" in page and "Leaderboard" in page


def test_a_one_player_game_leaderboard_lists_its_score_competitions(
    client: Client, organizer: User
) -> None:
    ScoreCompetitionFactory(name="Balance cup")
    ScoreCompetitionFactory(name="Long balance")
    ScoreCompetitionFactory(name="Secret balance", is_public=False)

    page = client.get("/environments/cartpole/leaderboard/").content.decode()

    assert "Balance cup" in page and "Long balance" in page and "Secret balance" not in page
    assert "No rated competitor yet" not in page and "one-player game" in page
    client.force_login(organizer)
    assert "Secret balance" in client.get("/environments/cartpole/leaderboard/").content.decode()


def test_a_one_player_game_without_a_score_competition_says_so(client: Client) -> None:
    EnvironmentFactory(name="cartpole")

    response = client.get("/environments/cartpole/leaderboard/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "No score competition yet" in page and "No rated competitor yet" not in page


@pytest.mark.parametrize(("game", "rated"), [("cartpole", False), ("tic_tac_toe", True)])
def test_a_competitor_page_promises_a_leaderboard_only_in_a_game_of_duels(
    client: Client, game: str, rated: bool
) -> None:
    competitor = CompetitorFactory(environment=EnvironmentFactory(name=game), is_public=True)

    page = client.get(competitor.get_absolute_url()).content.decode()

    assert ("<dt>Leaderboard</dt>" in page) == rated
    assert ("Leaderboard score history" in page) == rated
