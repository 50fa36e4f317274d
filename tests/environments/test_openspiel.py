"""OpenSpiel games as environments: specs, hidden information, chance, replays."""

from __future__ import annotations

import random

import pytest
import yaml

from environments.base import IllegalAction, replay
from environments.openspiel import GAMES_FILE, InvalidSpec, UnknownGame, canonical_spec
from environments.registry import (
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    load_info,
    make_environment,
)

EXAMPLES = [
    "openspiel:chess",
    "openspiel:go(board_size=9)",
    "openspiel:leduc_poker",
    "openspiel:backgammon",
]
#: Leduc poker's cards: OpenSpiel numbers them 0..5, two of each rank.
RANKS = "JJQQKK"


def random_match(spec: str, seed: int, choices: int = 1) -> list[list]:
    """The actions of a match between random players (one entry per step, by seat)."""
    environment = make_environment(spec)
    environment.reset(seed)
    chooser = random.Random(choices)
    actions = []
    while not environment.is_terminal():
        step = {
            seat: chooser.choice(environment.legal_actions(seat)) for seat in environment.to_move()
        }
        environment.step(step)
        actions.append([step.get(seat) for seat in range(environment.num_players)])
    return actions


def private_card(observation: dict) -> str:
    text = observation["observation"]
    return text.split("[Private: ")[1].split("]")[0]


@pytest.mark.parametrize("spec", EXAMPLES)
def test_it_plays_each_example_game_to_the_end_with_a_result(spec: str) -> None:
    environment = make_environment(spec)
    actions = random_match(spec, seed=3)
    replay(environment, 3, actions)

    assert environment.is_terminal()
    assert sorted(environment.scores()) in ([0.0, 1.0], [0.5, 0.5])
    assert environment.to_move() == []
    assert "Over:" in environment.render_text()
    assert environment.render_html().startswith('<div class="openspiel openspiel-')


@pytest.mark.parametrize("spec", ["openspiel:leduc_poker", "openspiel:backgammon"])
def test_it_replays_every_chance_outcome_from_the_seed_and_the_actions(spec: str) -> None:
    actions = random_match(spec, seed=11)

    first = replay(make_environment(spec), 11, actions)
    second = replay(make_environment(spec), 11, actions)

    assert first == second
    histories = [state["history"] for state in first]
    # Chance (the deal, the dice) is in the state's history, never in a seat's actions.
    assert len(histories[-1]) > len(actions)
    assert all(
        seat_action is None or "id" in seat_action for step in actions for seat_action in step
    )


def test_it_draws_other_chance_outcomes_with_another_seed() -> None:
    deals = set()
    for seed in range(12):
        environment = make_environment("openspiel:leduc_poker")
        environment.reset(seed)
        deals.add(tuple(environment.state()["history"][:2]))
    assert len(deals) > 3


def test_it_never_shows_a_seat_the_other_seats_private_card() -> None:
    for seed in range(30):
        environment = make_environment("openspiel:leduc_poker")
        environment.reset(seed)
        dealt = environment.state()["history"][:2]
        chooser = random.Random(seed)
        while not environment.is_terminal():
            for seat in (0, 1):
                seen = environment.observation(seat)
                assert private_card(seen) == str(dealt[seat])
                text = environment.render_observation(seen, seat)
                own, other = dealt[seat], dealt[1 - seat]
                assert f"[Private: {other}]" not in text or own == other
                assert "history" not in seen
            [seat] = environment.to_move()
            environment.step({seat: chooser.choice(environment.legal_actions(seat))})


def test_it_sends_legal_actions_with_their_text() -> None:
    environment = make_environment("openspiel:chess")
    [seat] = environment.to_move()
    legal = environment.legal_actions(seat)

    assert seat == 1  # OpenSpiel's White is its player 1
    assert len(legal) == 20
    assert {"e4", "Nf3"} <= {action["text"] for action in legal}
    assert all(set(action) == {"id", "text"} for action in legal)
    assert environment.legal_actions(0) == []


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (1, 'action must be an object {"id": ..., "text": ...} from legal_actions, got int 1'),
        ("e4", "action must be an object"),
        ({"id": 1}, "missing 'text'"),
        ({"id": 1, "text": "e4", "why": 1}, "unexpected 'why'"),
        ({"id": "1", "text": "e4"}, "'id' must be an integer"),
        ({"id": True, "text": "e4"}, "'id' must be an integer"),
        ({"id": 0, "text": "e4"}, "action 0 is not legal now (legal: "),
    ],
)
def test_it_refuses_an_illegal_action_with_a_precise_reason(action: object, reason: str) -> None:
    environment = make_environment("openspiel:chess")
    before = environment.state()

    with pytest.raises(IllegalAction) as refused:
        environment.step({1: action})

    assert reason in refused.value.reason
    assert environment.state() == before


def test_it_refuses_a_text_that_is_not_the_actions() -> None:
    environment = make_environment("openspiel:chess")
    legal = environment.legal_actions(1)[0]

    with pytest.raises(IllegalAction) as refused:
        environment.check_action(1, {"id": legal["id"], "text": "Qh5"})

    assert refused.value.reason == (
        f"'text' 'Qh5' does not match action {legal['id']}, which is {legal['text']!r}"
    )


def test_it_refuses_a_move_out_of_turn() -> None:
    environment = make_environment("openspiel:chess")
    with pytest.raises(IllegalAction, match="not this player's turn"):
        environment.check_action(0, environment.legal_actions(1)[0])


def test_it_plays_simultaneous_games_with_every_seat_at_once() -> None:
    environment = make_environment("openspiel:goofspiel(num_cards=4)")
    assert environment.simultaneous
    assert environment.to_move() == [0, 1]
    actions = random_match("openspiel:goofspiel(num_cards=4)", seed=2)
    assert all(None not in step for step in actions)


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("openspiel:chesss", UnknownGame, "no game named 'chesss'; did you mean chess"),
        ("openspiel:go(board_siz=9)", InvalidSpec, "go has no parameter 'board_siz'"),
        ("openspiel:go(board_size=nine)", InvalidSpec, "'board_size' must be int, got 'nine'"),
        ("openspiel:go(board_size=9.5)", InvalidSpec, "'board_size' must be int"),
        ("openspiel:go(board_size=9,board_size=7)", InvalidSpec, "given twice"),
        ("openspiel:go(board_size)", InvalidSpec, "not of the form <name>=<value>"),
        ("openspiel:go(board_size=9", InvalidSpec, "is not of the form openspiel:<game>"),
        ("openspiel:leduc_poker(players=7)", InvalidSpec, "7 player(s); Arena plays"),
        ("openspiel:blackjack", InvalidSpec, "1 player(s)"),
        ("openspiel:tiny_bridge_2p", InvalidSpec, "cooperative"),
        ("openspiel:hanabi", InvalidSpec, "gives rewards during play"),
        ("openspiel:2048", InvalidSpec, "player(s)"),
        ("openspiel:negotiation", InvalidSpec, "drawn inside OpenSpiel"),
        ("openspiel:oshi_zumo(coins=x)", InvalidSpec, "must be int"),
        ("openspiel:efg_game(filename=/etc/passwd)", InvalidSpec, "names a file"),
        ("openspiel:go(board_size=400)", InvalidSpec, "supports board size up to 19"),
        ("openspiel:mnk(m=300,n=300,k=5)", InvalidSpec, "over Arena's"),
        ("openspiel:" + "x" * 200, InvalidSpec, "longer than 200"),
    ],
)
def test_it_refuses_a_bad_spec_with_the_reason(
    spec: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as refused:
        make_environment(spec)
    assert message in str(refused.value)


def test_spec_errors_are_the_registrys_errors() -> None:
    # Callers (the referee, the site) catch these two for any environment name.
    assert issubclass(UnknownGame, UnknownEnvironment)
    assert issubclass(InvalidSpec, InvalidEnvironmentInfo)


def test_it_writes_a_spec_one_way() -> None:
    assert canonical_spec("openspiel:go( komi=6.5 , board_size=9)") == (
        "openspiel:go(board_size=9,komi=6.5)"
    )
    assert canonical_spec("openspiel:chess(chess960=True)") == "openspiel:chess(chess960=true)"


def test_it_gives_each_game_limits_and_rules() -> None:
    chess = load_info("openspiel:chess")
    go = load_info("openspiel:go(board_size=9)")
    unknown = load_info("openspiel:breakthrough")

    assert (chess.title, chess.matches_per_duel, chess.players) == ("Chess", 4, 2)
    assert go.title == "Go (board_size=9)"
    assert load_info("openspiel:chess(chess960=True)").title == "Chess (chess960=true)"
    assert "exactly as listed" in chess.rules
    assert unknown.title == "Breakthrough"
    assert unknown.matches_per_duel == 10
    assert chess.html_class == "openspiel"
    assert (chess.static_dir / "openspiel.css").is_file()


def test_random_chess_ends_within_its_move_limit() -> None:
    # Random chess ends by the fifty-move rule or repetition long before OpenSpiel's
    # limit: the tests that play it stay fast.
    environment = make_environment("openspiel:chess")
    assert environment.configuration["max_game_length"] > 1000
    assert len(random_match("openspiel:chess", seed=5)) < 1000


def test_it_renders_a_chess_board_with_escaped_text() -> None:
    page = make_environment("openspiel:chess").render_html()

    assert page.count('class="openspiel-square') == 64
    assert "♔" in page and "♚" in page
    assert "Player 2 (White) to move" in page


def test_every_game_with_defaults_in_the_games_file_is_playable() -> None:
    games = yaml.safe_load(GAMES_FILE.read_text())["games"]
    for game in games:
        info = load_info(f"openspiel:{game}")
        assert info.title == games[game]["title"]
        assert info.players == 2
        assert make_environment(f"openspiel:{game}").to_move()
