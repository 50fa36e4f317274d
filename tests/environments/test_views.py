"""What a game gives the browser to draw: ``view`` (the whole state, for replays and the live
view), ``observation_view`` (a player's own, for playing by hand) and ``choice_parts``
(what each legal move means on the board)."""

from __future__ import annotations

import json
import re

import pyspiel
import pytest

from environments.registry import environment_names, load_info, make_environment

GAMES = [*environment_names(), "openspiel:chess", "openspiel:leduc_poker", "openspiel:kuhn_poker"]


def played(name: str, steps: int, seed: int = 1):
    """The game after ``steps`` first-legal moves (fewer if it ends)."""
    environment = make_environment(name)
    environment.reset(seed)
    for _step in range(steps):
        if environment.is_terminal():
            break
        environment.step(
            {player: environment.legal_actions(player)[0] for player in environment.to_move()}
        )
    return environment


@pytest.mark.parametrize("name", GAMES)
def test_every_game_has_a_view_that_a_drawer_of_its_kind_draws(name):
    environment = played(name, 3)
    view = environment.view()
    json.dumps(view)
    if view["kind"] in ("html", "text"):
        return  # the default drawers (web/static/web/boards.js)
    scripts = [path.read_text() for path in load_info(name).static_dir.glob("*.js")]
    assert any(f'register("{view["kind"]}"' in script for script in scripts), view["kind"]


@pytest.mark.parametrize("name", GAMES)
def test_every_game_pictures_what_a_player_sees_from_its_observation(name):
    environment = played(name, 2)
    for player in environment.to_move():
        observation = environment.observation(player)
        view = environment.observation_view(observation, player)
        json.dumps(view)
        parts = environment.choice_parts(observation, player, environment.legal_actions(player))
        assert len(parts) == len(environment.legal_actions(player))


def test_tic_tac_toe_and_connect_four_views_are_a_digit_a_cell():
    game = played("tic_tac_toe", 5)
    assert game.view() == {
        "kind": "tic_tac_toe",
        "rows": 3,
        "columns": 3,
        "board": "121210000",
        "last": 4,
        "win": [],
        "status": "Player 2 (O) to move",
    }
    assert game.observation_view(game.observation(1), 1)["you"] == "O"
    assert game.choice_parts(game.observation(1), 1, [5, 8]) == [{"cell": 5}, {"cell": 8}]
    four = make_environment("connect_four")
    four.reset(1)
    for turn, column in enumerate((0, 0, 1, 1, 2, 2, 3)):
        four.step({turn % 2: column})
    assert four.view()["board"][-7:] == "1111000" and four.view()["win"] == [35, 36, 37, 38]
    assert four.view()["last"] == 38 and four.view()["status"] == "Player 1 (red) wins"
    assert four.choice_parts(four.observation(0), 0, [2]) == [{"column": 2}]


def test_quarto_view_and_moves_name_squares_and_pieces():
    game = played("quarto", 2)
    view = game.view()
    assert view["kind"] == "quarto" and view["board"][0] == 0 and view["last"] == 0
    assert view["piece"] == 1 and 0 not in view["available"] and 1 not in view["available"]
    [part] = game.choice_parts(game.observation(0), 0, [{"square": 3, "piece": 2}])
    assert part == {"square": 3, "piece": 2}


def test_a_chess_view_is_its_fen_and_last_move_and_moves_are_squares():
    game = make_environment("openspiel:chess")
    game.reset(0)
    [white] = game.to_move()
    [e4] = [action for action in game.legal_actions(white) if action["text"] == "e4"]
    game.step({white: e4})
    view = game.view()
    assert view["fen"] == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert view["last"] == "e2e4" and len(json.dumps(view)) < 200
    black = game.observation(0)
    assert game.observation_view(black, 0) == {"kind": "chess", "fen": view["fen"], "you": "Black"}


def test_chess_moves_name_their_squares_castling_and_promotion():
    game = make_environment("openspiel:chess")
    for fen, wanted in (
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", {"O-O": ("e1", "g1", None)}),
        ("8/P7/8/8/8/8/8/k6K w - - 0 1", {"a8=Q+": ("a7", "a8", "q"), "a8=N": ("a7", "a8", "n")}),
    ):
        state = pyspiel.load_game("chess").new_initial_state(fen)
        legal = [
            {"id": action, "text": state.action_to_string(action)}
            for action in state.legal_actions()
        ]
        parts = game.choice_parts({"observation": fen}, 1, legal)
        named = {
            action["text"]: (part["from"], part["to"], part["promotion"])
            for action, part in zip(legal, parts, strict=True)
        }
        for text, squares in wanted.items():
            assert named[text] == squares
    # Without a position to read, the moves are offered as buttons.
    assert game.choice_parts({}, 1, [{"id": 1, "text": "x"}]) == [{}]


def test_a_leduc_player_sees_its_own_card_never_the_opponents():
    seen: dict[str, dict] = {}
    game = make_environment("openspiel:leduc_poker")
    for seed in range(40):
        game.reset(seed)
        [player] = game.to_move()
        hands = game.view()["hands"]
        view = game.observation_view(game.observation(player), player)
        assert view["hands"][player] == hands[player] and view["hands"][1 - player] is None
        assert view["you"] == player and view["public"] is None and view["pot"] == 2
        assert "Private" not in json.dumps(view)
        # The same card in hand, another card opposite: the very same picture.
        key = f"{player}:{hands[player]}"
        if key in seen:
            assert seen[key] == view
        seen[key] = view
    assert len(seen) < 40


def test_leduc_views_read_the_betting_and_the_public_card():
    game = make_environment("openspiel:leduc_poker")
    game.reset(3)
    for _move in range(2):
        [player] = game.to_move()
        [call] = [action for action in game.legal_actions(player) if action["text"] == "Call"]
        game.step({player: call})
    view = game.view()
    assert view["rounds"] == ["Call, Call", ""] and re.fullmatch("[JQK][♠♥]", view["public"])
    [player] = game.to_move()
    mine = game.observation_view(game.observation(player), player)
    assert mine["rounds"] == ["Call, Call", ""] and mine["public"] == view["public"]
