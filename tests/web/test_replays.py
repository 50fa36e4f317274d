"""The replay page: every state recomputed from the seed and the actions."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from core.services.environments import environment_add_openspiel
from environments.base import square_name
from environments.registry import make_environment
from reads.replays import Replay
from tests.factories import (
    DuelFactory,
    EnvironmentFactory,
    MatchFactory,
    RevisionFactory,
    TournamentFactory,
)
from web.templatetags.arena import replay_move_items

pytestmark = pytest.mark.django_db


def views_of(response) -> list[dict]:
    """The compact document the page carries: the picture of each state."""
    found = re.search(
        r'<script id="replay-views" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert found, "no views on the page"
    return json.loads(found.group(1))


def moves_of(response) -> list[list[tuple[str, str]]]:
    """The move list: for each step, who played what."""
    page = html.unescape(response.content.decode())
    items = re.findall(r'<li class="move(?: current)?"><a [^>]*>(.*?)</a></li>', page)
    return [
        re.findall(
            r'<span class="move-player">(.*?)</span> <code class="move-action">(.*?)</code>', item
        )
        for item in items
    ]


def board_html(response) -> str:
    return response.content.decode().split("data-replay-board")[1].split(">", 1)[1]


def test_it_carries_a_view_per_state_and_lists_the_moves_and_their_times(client, match):
    response = client.get(match.get_absolute_url())

    views = views_of(response)
    moves = moves_of(response)
    assert response.status_code == 200
    assert len(views) == len(moves) == match.steps + 1
    assert moves[0] == []
    environment = make_environment("tic_tac_toe")
    environment.reset(match.seed)
    assert views[0] == environment.view()
    for view, played, actions in zip(views[1:], moves[1:], match.actions, strict=True):
        environment.step({seat: move for seat, move in enumerate(actions) if move is not None})
        assert view == environment.view()
        [(_player, action)] = played
        cell = next(action for action in actions if action is not None)
        assert action == square_name(cell, 3)  # the cell's name: b2 for the centre
    assert views[-1]["kind"] == "tic_tac_toe" and len(views[-1]["board"]) == 9
    assert response.content.decode().count('<span class="move-time">1 ms</span>') == match.steps
    # The first seat is player 1 (alice) in match 0, then the seats alternate.
    assert moves[1][0][0] == "alices-bot v1"
    assert moves[2][0][0] == "bobs-bot v1"
    # The page names the board's drawer: the registry, then the game's own.
    page = response.content.decode()
    assert page.index("web/boards.js") < page.index("tic_tac_toe.js") < page.index("web/replay.js")


def test_the_move_list_names_quarto_moves_by_square_and_piece_given(client):
    quarto = EnvironmentFactory(name="quarto")
    duel = DuelFactory(tournament=TournamentFactory(environment=quarto), finished=True)
    opening = [
        [{"square": None, "piece": 3}, None],
        [None, {"square": 6, "piece": 1}],  # piece 3 on square 6; piece 1 to player 1
        [{"square": 15, "piece": 0}, None],
    ]
    match = MatchFactory(duel=duel, played={"actions": opening, "scores": [0.5, 0.5]})

    response = client.get(match.get_absolute_url() + "?step=2")

    moves = moves_of(response)
    assert [action for [(_player, action)] in moves[1:]] == [
        "gives piece 3",
        "c2, gives piece 1",
        "d4, gives piece 0",
    ]
    position = html.unescape(response.content.decode()).split("data-replay-move>")[1]
    assert position.startswith(f"{moves[2][0][0]} played c2, gives piece 1</span>")


def test_the_move_list_writes_chess_in_standard_algebraic_notation(client):
    chess = environment_add_openspiel(spec="openspiel:chess")
    game = make_environment("openspiel:chess")
    game.reset(0)
    actions = []
    for san in ("e4", "e5", "Nf3", "Nc6", "Bb5"):
        [mover] = game.to_move()
        [action] = [move for move in game.legal_actions(mover) if move["text"] == san]
        game.step({mover: action})
        actions.append([action if seat == mover else None for seat in range(2)])
    duel = DuelFactory(tournament=TournamentFactory(environment=chess), finished=True)
    match = MatchFactory(duel=duel, seed=0, played={"actions": actions, "scores": [0.5, 0.5]})

    moves = moves_of(client.get(match.get_absolute_url()))

    assert [action for [(_player, action)] in moves[1:]] == ["e4", "e5", "Nf3", "Nc6", "Bb5"]


def test_it_shows_the_final_state_and_the_move_list_without_javascript(client, match):
    response = client.get(match.get_absolute_url())

    page = response.content.decode()
    environment = make_environment("tic_tac_toe")
    environment.reset(match.seed)
    for actions in match.actions:
        environment.step({seat: move for seat, move in enumerate(actions) if move is not None})
    assert board_html(response).startswith(environment.render_html())
    assert f"Step {match.steps} of {match.steps}" in page
    assert page.count('class="move') >= match.steps + 1
    assert f'href="?step={match.steps - 1}"' in page


def test_it_shows_the_step_asked_for_in_the_address(client, match):
    response = client.get(match.get_absolute_url() + "?step=1")

    page = response.content.decode()
    assert "Step 1 of" in page
    assert 'data-step="1"' in page
    environment = make_environment("tic_tac_toe")
    environment.reset(match.seed)
    environment.step({0: match.actions[0][0]})
    assert board_html(response).startswith(environment.render_html())
    assert "Step 0 of" in client.get(match.get_absolute_url() + "?step=-5").content.decode()
    assert "Step 0 of" not in client.get(match.get_absolute_url() + "?step=x").content.decode()
    past = client.get(match.get_absolute_url() + "?step=99").content.decode()
    assert f"Step {match.steps} of {match.steps}" in past


def test_it_explains_the_fault_that_ended_a_match(alice_client, validation_duel):
    response = alice_client.get(reverse("match", args=[validation_duel.pk, 0]))

    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert len(views_of(response)) == 2
    assert "The match ended by a fault: illegal action" in page
    assert (
        "alices-bot v1 (player 2), on move 2, played an action that is not among the legal "
        "actions. 4 is illegal: cell 4 is already taken by player 1 (X)"
    ) in page
    assert "alices-bot v1 (player 1) won" in page


def test_it_explains_faults_in_the_duels_match_list(alice_client, validation_duel):
    response = alice_client.get(validation_duel.get_absolute_url())

    page = html.unescape(response.content.decode())
    assert "illegal action" in page
    assert "4 is illegal: cell 4 is already taken by player 1 (X)" in page


def test_it_replays_a_simultaneous_game_with_both_moves_per_step(client):
    revision = RevisionFactory(
        competitor__environment__name="rock_paper_scissors", competitor__is_public=True
    )
    duel = DuelFactory(validation=True, revisions=[revision, revision], finished=True)
    match = MatchFactory(duel=duel)

    response = client.get(match.get_absolute_url())

    moves = moves_of(response)
    assert len(views_of(response)) == len(moves) == match.steps + 1
    assert {len(played) for played in moves[1:]} == {2}
    assert moves[1][0][1] in {"rock", "paper", "scissors"}
    assert "rock_paper_scissors.css" in response.content.decode()


def test_it_says_so_when_stored_actions_no_longer_replay(client, duel):
    match = MatchFactory(duel=duel, actions=[[4, None], [None, 4]], steps=2)

    response = client.get(match.get_absolute_url())

    assert response.status_code == 200
    assert len(views_of(response)) == 2
    assert "step 2 no longer replays with the current rules" in html.unescape(
        response.content.decode()
    )


def test_the_move_list_escapes_what_it_shows():
    frames = [
        {"step": 0, "moves": [], "time": None},
        {
            "step": 1,
            "moves": [{"player": "<b>x</b>", "action": "<script>", "time": 0.5}],
            "time": 0.5,
        },
    ]
    items = replay_move_items(Replay(frames, [], [], "", ""), 1)

    assert "<script>" not in items and "&lt;script&gt;" in items and "&lt;b&gt;x" in items
    assert items.count("<li") == 2 and 'aria-current="step"' in items.split("<li")[2]
    assert ">Start<" in items and '<span class="move-time">500 ms</span>' in items
