"""A match the referee opened with random moves replays on its page like any other: the
opening's moves are its first actions."""

from __future__ import annotations

import html
import re

import pytest

from core.models import CompetitorKind, Duel
from duel_runner.services import duel_store_result, seat_clock
from environments.registry import make_environment
from referee.duel import run_duel
from tests.factories import CompetitorFactory, MatchFactory
from tests.support.sandboxes import agent

pytestmark = pytest.mark.django_db


def moves_of(page: str) -> list[str]:
    """The move list's actions, in order."""
    return re.findall(r'<code class="move-action">(.*?)</code>', html.unescape(page))


def test_a_played_match_with_an_opening_replays_on_its_page(client, duel: Duel, backend):
    result = run_duel(
        "tic_tac_toe",
        (agent("first_legal.py"), agent("first_legal.py")),
        backend=backend,
        seed=duel.seed,
        matches=2,
    )
    duel_store_result(duel=duel, result=result, worker="test")
    environment = make_environment("tic_tac_toe")

    for record in result.matches:
        match = duel.matches.get(index=record.index)
        page = client.get(match.get_absolute_url()).content.decode()

        assert record.opening == 2
        assert match.actions == record.actions
        moves = moves_of(page)
        assert len(moves) == len(record.actions)
        # The opening's two moves come first, named as the game names any move.
        for shown, actions in zip(moves[:2], record.actions[:2], strict=True):
            [action] = [action for action in actions if action is not None]
            assert shown == environment.describe_action(action)
        assert "no longer replays" not in page
        # Told as the opening's moves, not as a player's choice; the agents' moves after.
        players = re.findall(
            r'<span class="move-player">(.*?)</span>', html.unescape(page.split("move-list")[1])
        )
        assert match.opening == 2
        assert all(player.startswith("The opening, for ") for player in players[:2])
        assert not any(player.startswith("The opening") for player in players[2:])
    # Both matches begin alike, the seats swapped.
    first, second = duel.matches.order_by("index")
    assert first.actions[:2] == second.actions[:2] and first.seats == second.seats[::-1]


def test_the_test_factory_plays_the_duels_openings(duel: Duel):
    # Its matches are as a duel's now are: no two alike.
    for _ in range(3):
        MatchFactory(duel=duel)
    played = [(tuple(match.seats), str(match.actions)) for match in duel.matches.all()]
    assert len(set(played)) == len(played) == 4


def test_a_persons_game_starts_from_the_first_position(duel: Duel):
    person = CompetitorFactory(environment=duel.environment, kind=CompetitorKind.HUMAN)
    bot = duel.revisions()[0].competitor

    assert seat_clock([person, bot], "tic_tac_toe")["opening_moves"] == 0
    assert "opening_moves" not in seat_clock([bot, bot], "tic_tac_toe")
