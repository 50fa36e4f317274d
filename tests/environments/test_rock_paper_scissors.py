from __future__ import annotations

import pytest

from environments.base import JSON, IllegalAction
from environments.rock_paper_scissors.environment import RockPaperScissors
from tests.support import games


def play(
    rounds: list[tuple[str, str]], environment: RockPaperScissors | None = None
) -> RockPaperScissors:
    environment = environment or RockPaperScissors()
    for first, second in rounds:
        environment.step({0: first, 1: second})
    return environment


def refuse(environment: RockPaperScissors, player: int, action: JSON) -> str:
    # Mid-match both players must act, so the other one plays a legal action.
    others = {} if environment.is_terminal() else {0: "rock", 1: "rock"}
    return games.refuse(environment, player, action, alongside=others)


def test_it_asks_both_players_at_once() -> None:
    environment = RockPaperScissors()

    assert environment.simultaneous
    assert environment.to_move() == [0, 1]
    assert environment.legal_actions(0) == ["rock", "paper", "scissors"]
    assert environment.legal_actions(1) == ["rock", "paper", "scissors"]
    assert environment.observation(0) == {
        "round": 0,
        "my_points": 0,
        "opponent_points": 0,
        "history": [],
        "opponent_last": None,
    }
    assert environment.scores() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("first", "second", "points"),
    [
        ("rock", "rock", [0, 0]),
        ("rock", "paper", [0, 1]),
        ("rock", "scissors", [1, 0]),
        ("paper", "rock", [1, 0]),
        ("paper", "paper", [0, 0]),
        ("paper", "scissors", [0, 1]),
        ("scissors", "rock", [0, 1]),
        ("scissors", "paper", [1, 0]),
        ("scissors", "scissors", [0, 0]),
    ],
)
def test_it_resolves_every_pair_of_actions(first: str, second: str, points: list[int]) -> None:
    environment = play([(first, second)])

    state = environment.state()
    assert state["points"] == points
    assert state["round"] == 1
    assert state["history"] == [[first, second]]
    assert state["last_action"] == [first, second]
    assert not state["terminal"]
    assert environment.to_move() == [0, 1]


def test_it_shows_each_player_the_match_from_their_side() -> None:
    environment = play([("rock", "paper"), ("scissors", "scissors")])

    assert environment.observation(0) == {
        "round": 2,
        "my_points": 0,
        "opponent_points": 1,
        "history": [["rock", "paper"], ["scissors", "scissors"]],
        "opponent_last": "scissors",
    }
    assert environment.observation(1) == {
        "round": 2,
        "my_points": 1,
        "opponent_points": 0,
        "history": [["paper", "rock"], ["scissors", "scissors"]],
        "opponent_last": "scissors",
    }


def test_it_ends_when_a_player_reaches_three_points() -> None:
    environment = play([("rock", "scissors"), ("paper", "paper"), ("paper", "rock")])
    assert not environment.is_terminal()

    play([("scissors", "paper")], environment)

    assert environment.is_terminal()
    assert environment.to_move() == []
    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winner"] == 0
    assert environment.legal_actions(0) == environment.legal_actions(1) == []


def test_it_lets_the_first_player_win_first_to_three() -> None:
    environment = play([("rock", "paper")] * 3)

    assert environment.scores() == [0.0, 1.0]
    assert environment.winner() == 1


def test_it_is_a_draw_when_the_round_cap_ends_level() -> None:
    environment = play([("paper", "scissors"), ("rock", "scissors")] + [("rock", "rock")] * 27)
    assert not environment.is_terminal()

    play([("paper", "paper")], environment)

    assert environment.is_terminal()
    assert environment.state()["round"] == 30
    assert environment.state()["points"] == [1, 1]
    assert environment.scores() == [0.5, 0.5]
    assert environment.state()["winner"] is None


def test_it_gives_the_match_to_the_leader_at_the_round_cap() -> None:
    environment = play([("rock", "scissors")] + [("rock", "rock")] * 28)
    assert not environment.is_terminal()

    play([("scissors", "scissors")], environment)

    assert environment.is_terminal()
    assert environment.state()["points"] == [1, 0]
    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winner"] == 0


def test_it_honours_the_configuration() -> None:
    environment = RockPaperScissors({"points_to_win": 1, "max_rounds": 5})

    play([("rock", "scissors")], environment)

    assert environment.scores() == [1.0, 0.0]


@pytest.mark.parametrize(
    ("action", "type_name"),
    [(0, "int"), (1.5, "float"), (True, "bool"), (None, "NoneType"), (["rock"], "list")],
)
def test_it_refuses_an_action_that_is_not_a_string(action: JSON, type_name: str) -> None:
    reason = refuse(RockPaperScissors(), 1, action)

    assert "action must be one of the strings 'rock', 'paper', 'scissors'" in reason
    assert type_name in reason


@pytest.mark.parametrize("action", ["lizard", "Rock", "", " rock"])
def test_it_refuses_an_unknown_action_name(action: str) -> None:
    reason = refuse(RockPaperScissors(), 0, action)

    assert reason == f"unknown action {action!r}: expected 'rock', 'paper' or 'scissors'"


def test_it_needs_an_action_from_both_players() -> None:
    environment = RockPaperScissors()

    with pytest.raises(IllegalAction) as refused:
        environment.step({0: "rock"})

    assert refused.value.player == 1
    assert environment.state()["round"] == 0


def test_it_refuses_a_player_who_is_not_in_the_match() -> None:
    environment = RockPaperScissors()

    with pytest.raises(IllegalAction) as refused:
        environment.check_action(2, "rock")

    assert refused.value.reason == "it is not this player's turn"
    assert environment.legal_actions(2) == []


def test_it_refuses_any_action_after_the_end() -> None:
    environment = play([("rock", "paper")] * 3)

    assert refuse(environment, 0, "rock") == "the match is already over"
    assert refuse(environment, 1, "paper") == "the match is already over"


def test_it_renders_the_score_and_rounds() -> None:
    environment = play([("rock", "paper")] * 3)

    text = environment.render_text()
    assert "round 3: rock vs paper -> player 2" in text
    assert "Player 2 wins 3 to 0" in text
    fragment = environment.render_html()
    assert fragment.startswith('<div class="rock-paper-scissors">')
    assert fragment.count("rock-paper-scissors-last") == 1
    assert "rock-paper-scissors-win" in fragment
