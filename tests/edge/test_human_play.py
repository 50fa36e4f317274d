"""A person's seat driven by the browser: starting a game, and what the page's reply
endpoint refuses. The test stands in for the referee on the in-process seat bus (it
opens the duel on the seat and asks for a move, as ``sandboxes.remote`` does), so each
case checks exactly what would reach the referee."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from core.errors import ArenaError
from core.models import Duel, DuelStatus, Revision
from core.services.human import human_game_create
from core.services.online import seat_bus
from edge.human import _with_choices
from tests.factories import RevisionFactory, UserFactory
from tests.support.human import asked, browser, bus_seat, in_process_bus, reply  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_process_bus")]


@pytest.fixture
def game(django_capture_on_commit_callbacks) -> Duel:
    opponent = RevisionFactory(validated=True, competitor__environment__name="tic_tac_toe")
    with django_capture_on_commit_callbacks(execute=False):
        return human_game_create(user=UserFactory(), opponent=opponent)


def test_it_starts_an_unrated_game_with_the_person_moving_first(game):
    seat = game.revisions()[0].competitor
    assert seat.is_human and seat.is_public
    assert game.tournament is None and game.num_matches == 1
    assert game.status == DuelStatus.QUEUED
    # A person's seat never enters tournaments, ladders or leaderboards.
    assert not Revision.objects.validated().filter(pk=game.revisions()[0].pk).exists()


def test_it_hands_a_legal_move_to_the_referee_once(game):
    asked(game)
    client, token = browser(game.revisions()[0].competitor.owner)

    assert reply(client, game, {"type": "action", "id": 3, "action": 4}, token) == (
        202,
        {"accepted": "act:3"},
    )
    status, body = reply(client, game, {"type": "action", "id": 3, "action": 5}, token)
    assert (status, body["error"]["code"]) == (409, "not_your_turn")
    assert seat_bus().replies(bus_seat(game), 0.1) == [b'{"type":"action","id":3,"action":4}']


def test_it_refuses_an_illegal_move_and_keeps_waiting_for_a_legal_one(game):
    asked(game)
    client, token = browser(game.revisions()[0].competitor.owner)

    status, body = reply(client, game, {"type": "action", "id": 3, "action": 9}, token)
    assert (status, body["error"]["code"]) == (400, "illegal_action")
    assert seat_bus().replies(bus_seat(game), 0.1) == []
    assert reply(client, game, {"type": "action", "id": 3, "action": 0}, token)[0] == 202


def test_it_refuses_a_move_out_of_turn(game):
    asked(game)
    client, token = browser(game.revisions()[0].competitor.owner)
    status, body = reply(client, game, {"type": "action", "id": 2, "action": 0}, token)
    assert (status, body["error"]["code"]) == (409, "not_your_turn")


def test_it_refuses_a_visitor_a_stranger_and_a_request_without_the_csrf_token(game):
    asked(game)
    move = {"type": "action", "id": 3, "action": 4}

    status, body = reply(Client(), game, move, None)
    assert (status, body["error"]["code"]) == (401, "unauthorized")
    stranger, token = browser(UserFactory())
    status, body = reply(stranger, game, move, token)
    assert (status, body["error"]["code"]) == (404, "not_found")
    owner, _ = browser(game.revisions()[0].competitor.owner)
    status, body = reply(owner, game, move, None)
    assert (status, body["error"]["code"]) == (403, "forbidden")
    assert seat_bus().replies(bus_seat(game), 0.1) == []

    events = Client().get(reverse("human_events", args=[game.pk]))
    assert events.status_code == 401
    assert stranger.get(reverse("human_events", args=[game.pk])).status_code == 404


def test_it_bounds_the_games_a_person_has_at_once(settings, django_capture_on_commit_callbacks):
    settings.ARENA_HUMAN_GAMES_PER_USER = 1
    person = UserFactory()
    opponent = RevisionFactory(validated=True, competitor__environment__name="tic_tac_toe")
    with django_capture_on_commit_callbacks(execute=False):
        human_game_create(user=person, opponent=opponent)
        with pytest.raises(ArenaError, match="1 games going already"):
            human_game_create(user=person, opponent=opponent)


def test_it_refuses_a_game_with_simultaneous_moves(django_capture_on_commit_callbacks):
    opponent = RevisionFactory(validated=True, competitor__environment__name="rock_paper_scissors")
    with pytest.raises(ArenaError, match="simultaneous moves"):
        human_game_create(user=UserFactory(), opponent=opponent)


def test_it_refuses_a_game_of_more_than_two_players(django_capture_on_commit_callbacks):
    opponent = RevisionFactory(validated=True, competitor__environment__name="lowest_unique")
    with pytest.raises(ArenaError, match="played by 4 players"):
        human_game_create(user=UserFactory(), opponent=opponent)
    assert not Duel.objects.exists()


def test_it_limits_the_rate_of_a_persons_requests(game, settings):
    settings.ARENA_ONLINE_RATE = "3/min"
    asked(game)
    client, token = browser(game.revisions()[0].competitor.owner)
    statuses = [
        reply(client, game, {"type": "action", "id": 2, "action": 0}, token)[0] for _ in range(4)
    ]
    assert statuses == [409, 409, 409, 429]


class SameMoveTwice:
    """A game naming two of its actions alike, as OpenSpiel's backgammon does for the two
    orders of one roll's dice."""

    def describe_action(self, action):
        return "24/18 13/11" if action in (7, 9) else f"move {action}"

    def choice_parts(self, observation, player, actions):
        return [{} for _ in actions]

    def observation_view(self, observation, player):
        return {"kind": "text", "text": "board"}


def test_it_offers_one_button_for_two_actions_that_are_the_same_move():
    message = {"type": "act", "legal_actions": [7, 8, 9], "observation": {"board": []}}

    offered = _with_choices(message, SameMoveTwice(), 0)["choices"]  # type: ignore[arg-type]

    assert [(choice["action"], choice["text"]) for choice in offered] == [
        (7, "24/18 13/11"),
        (8, "move 8"),
    ]
