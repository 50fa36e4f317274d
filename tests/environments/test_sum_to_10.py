from __future__ import annotations

import pytest

from environments.base import JSON
from environments.sum_to_10.environment import SumTo10
from tests.support.games import refuse


def play(additions: list[int], environment: SumTo10 | None = None) -> SumTo10:
    environment = environment or SumTo10()
    for addition in additions:
        (player,) = environment.to_move()
        environment.step({player: addition})
    return environment


def test_it_starts_at_zero_with_player_0_to_move() -> None:
    environment = SumTo10()

    assert environment.to_move() == [0]
    assert environment.legal_actions(0) == [1, 2, 3]
    assert environment.legal_actions(1) == []
    assert environment.observation(0) == {"total": 0, "target": 10, "mark": 1}
    assert environment.observation(1) == {"total": 0, "target": 10, "mark": 2}
    assert environment.scores() == [0.0, 0.0]
    assert environment.state()["last_action"] is None


def test_it_adds_to_the_total_and_alternates_players() -> None:
    environment = play([3, 1])

    assert environment.observation(0) == {"total": 4, "target": 10, "mark": 1}
    assert environment.to_move() == [0]
    assert environment.state()["additions"] == [3, 1]
    assert environment.state()["last_action"] == 1


@pytest.mark.parametrize(("total", "legal"), [(7, [1, 2, 3]), (8, [1, 2]), (9, [1])])
def test_it_only_offers_additions_that_stay_within_the_target(total: int, legal: list[int]) -> None:
    environment = play([1] * total)

    assert environment.observation(0)["total"] == total
    (player,) = environment.to_move()
    assert environment.legal_actions(player) == legal


def test_it_gives_the_win_to_whoever_reaches_the_target() -> None:
    environment = play([3, 3, 3, 1])

    assert environment.is_terminal()
    assert environment.to_move() == []
    assert environment.scores() == [0.0, 1.0]
    assert environment.state()["winner"] == 1
    assert environment.legal_actions(0) == environment.legal_actions(1) == []

    first = play([2, 3, 1, 2, 2])
    assert first.scores() == [1.0, 0.0]
    assert first.winner() == 0


def test_it_refuses_an_addition_past_the_target() -> None:
    environment = play([3, 3, 3])

    reason = refuse(environment, 1, 2)

    assert reason == "adding 2 would bring the total to 11, over the target 10"


@pytest.mark.parametrize("addition", [0, 4, 10, -1])
def test_it_refuses_an_addition_out_of_range(addition: int) -> None:
    assert f"addition {addition} is out of range 1..3" in refuse(SumTo10(), 0, addition)


@pytest.mark.parametrize(
    ("action", "type_name"),
    [("2", "str"), (2.0, "float"), (True, "bool"), (None, "NoneType"), ([2], "list")],
)
def test_it_refuses_an_action_that_is_not_an_integer(action: JSON, type_name: str) -> None:
    reason = refuse(SumTo10(), 0, action)

    assert "addition must be an integer" in reason
    assert type_name in reason


def test_it_refuses_a_player_acting_out_of_turn() -> None:
    assert refuse(SumTo10(), 1, 1) == "it is not this player's turn"


def test_it_refuses_any_action_after_the_end() -> None:
    environment = play([3, 3, 3, 1])

    assert refuse(environment, 0, 1) == "the match is already over"
    assert refuse(environment, 1, 1) == "the match is already over"


def test_it_honours_the_configuration() -> None:
    environment = SumTo10({"target": 5, "max_add": 4})

    assert environment.legal_actions(0) == [1, 2, 3, 4]
    play([4, 1], environment)
    assert environment.scores() == [0.0, 1.0]


def test_it_renders_the_running_total() -> None:
    environment = play([3, 3, 3, 1])

    text = environment.render_text()
    assert "player 2 added 1 -> 10" in text
    assert "Player 2 wins by reaching 10" in text
    fragment = environment.render_html()
    assert fragment.startswith('<div class="sum-to-10">')
    assert fragment.count("sum-to-10-reached") == 10
    assert fragment.count("sum-to-10-last") == 1
    assert fragment.count("sum-to-10-win") == 1
