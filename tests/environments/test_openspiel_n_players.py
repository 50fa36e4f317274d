"""OpenSpiel games of three to six players: the seats an organizer chooses, what each seat
sees (checked against OpenSpiel's own playouts), scores that rank by returns, and the text
a replay shows."""

from __future__ import annotations

import json
import random
from typing import Any

import pyspiel
import pytest

from environments.base import replay, shares_beaten
from environments.openspiel import InvalidSpec, canonical_spec
from environments.openspiel.adapter import OpenSpielEnvironment
from environments.openspiel.spec import parse_spec, players_parameter
from environments.registry import load_info, make_environment
from referee.results import ranks_from_scores

#: Poker of three and four: the games whose hidden cards the checks below know.
POKER = [
    "openspiel:kuhn_poker(players=3)",
    "openspiel:kuhn_poker(players=4)",
    "openspiel:leduc_poker(players=3)",
    "openspiel:leduc_poker(players=4)",
]
MATCHES = 60


def openspiel_game(spec: str) -> pyspiel.Game:
    """The game loaded by OpenSpiel itself, without the adapter."""
    parsed = parse_spec(spec)
    return pyspiel.load_game(parsed.game, parsed.parameter_dict)


def openspiel_state(game: pyspiel.Game, history: list[int]) -> pyspiel.State:
    """A playout of ``history`` (chance outcomes and moves) in OpenSpiel alone."""
    state = game.new_initial_state()
    for action in history:
        state.apply_action(action)
    return state


def play(spec: str, seed: int) -> tuple[list[tuple[list[int], list[dict]]], list[int]]:
    """A match of random seats: before each step and at the end, the state's history and
    what each seat was shown; and the moves the seats made, in order."""
    environment = make_environment(spec)
    environment.reset(seed)
    chooser = random.Random(seed)
    shown = []
    moves: list[int] = []
    while True:
        seats = range(environment.num_players)
        history = list(environment.state()["history"])
        shown.append((history, [environment.observation(seat) for seat in seats]))
        if environment.is_terminal():
            return shown, moves
        [seat] = environment.to_move()
        action = chooser.choice(environment.legal_actions(seat))
        moves.append(action["id"])
        environment.step({seat: action})


def redealt(history: list[int], players: int, seat: int) -> list[int]:
    """``history`` with the private cards of every seat but ``seat`` passed round among
    them (the first ``players`` chance outcomes deal one card to each, in seat order): a
    deal that ``seat`` cannot tell from the real one."""
    others = [other for other in range(players) if other != seat]
    cards = list(history[:players])
    for position, other in enumerate(others):
        cards[other] = history[others[(position + 1) % len(others)]]
    return cards + history[players:]


@pytest.mark.parametrize("spec", POKER)
def test_each_seat_sees_exactly_what_openspiel_shows_that_player(spec: str) -> None:
    game = openspiel_game(spec)
    players = game.num_players()
    for seed in range(MATCHES):
        shown, moves = play(spec, seed)
        final_history = shown[-1][0]
        # The independent playout is of the same chance outcomes and the seats' moves.
        playout = game.new_initial_state()
        made = []
        for action in final_history:
            if not playout.is_chance_node():
                made.append(action)
            playout.apply_action(action)
        assert made == moves
        for history, observations in shown:
            state = openspiel_state(game, history)
            assert len(observations) == players
            for seat, seen in enumerate(observations):
                assert seen["player"] == seat
                assert seen["observation"] == state.observation_string(seat)
                assert seen["information_state"] == state.information_state_string(seat)
                assert set(seen) <= {
                    "game",
                    "player",
                    "to_move",
                    "observation",
                    "information_state",
                    "returns",
                }


@pytest.mark.parametrize("spec", POKER)
def test_no_seat_can_tell_the_others_cards_while_the_hand_is_played(spec: str) -> None:
    game = openspiel_game(spec)
    players = game.num_players()
    for seed in range(MATCHES):
        shown, _ = play(spec, seed)
        deal = shown[-1][0][:players]
        assert len(set(deal)) == players
        for index, (history, observations) in enumerate(shown):
            running = index < len(shown) - 1
            for seat, seen in enumerate(observations):
                own, others = deal[seat], [card for n, card in enumerate(deal) if n != seat]
                text = json.dumps(seen) + make_environment(spec).render_observation(seen, seat)
                if "leduc" in spec:
                    private = {part.split("]")[0] for part in text.split("[Private: ")[1:]}
                    assert private == {str(own)}
                else:  # kuhn: the first character of both texts is one's own card
                    assert seen["observation"][0] == seen["information_state"][0] == str(own)
                if running:
                    # With the others' cards dealt otherwise, the seat is shown the same.
                    other_deal = openspiel_state(game, redealt(history, players, seat))
                    assert [other_deal.history()[n] for n in range(players) if n != seat] != (
                        others
                    )
                    assert seen["observation"] == other_deal.observation_string(seat)
                    assert seen["information_state"] == (other_deal.information_state_string(seat))


@pytest.mark.parametrize("spec", POKER)
def test_scores_rank_the_seats_as_their_returns_and_replay_from_seed_and_moves(
    spec: str,
) -> None:
    game = openspiel_game(spec)
    for seed in range(MATCHES):
        environment = make_environment(spec)
        assert isinstance(environment, OpenSpielEnvironment)
        shown, _ = play(spec, seed)
        history = shown[-1][0]
        returns = openspiel_state(game, history).returns()
        steps: list[list[Any]] = [[None] * game.num_players() for _ in range(len(shown) - 1)]
        for step, (before, observations) in enumerate(shown[:-1]):
            # The move of this step comes next in the history, after the chance outcomes.
            [seat] = observations[0]["to_move"]
            action = history[len(before)]
            text = openspiel_state(game, before).action_to_string(seat, action)
            steps[step][seat] = {"id": action, "text": text}
        replay(environment, seed, steps)

        assert environment.returns() == pytest.approx(returns)
        assert environment.scores() == shares_beaten(list(returns))
        assert ranks_from_scores(environment.scores()) == [
            1 + sum(other > mine for other in returns) for mine in returns
        ]
        assert sum(environment.scores()) == pytest.approx(game.num_players() / 2)
        assert shown[-1][1][0]["returns"] == environment.returns()


def test_equal_returns_rank_equal_and_the_status_names_the_shared_first_place() -> None:
    spec = "openspiel:leduc_poker(players=3)"
    shared = None
    for seed in range(400):
        shown, _ = play(spec, seed)
        returns = [float(value) for value in shown[-1][1][0]["returns"]]
        leaders = [seat for seat, value in enumerate(returns) if value == max(returns)]
        if len(leaders) == 2:
            shared = (seed, returns, leaders)
            break
    assert shared is not None, "no split pot among 400 seeded hands"
    seed, returns, leaders = shared
    environment = make_environment(spec)
    environment.reset(seed)
    chooser = random.Random(seed)
    while not environment.is_terminal():
        [seat] = environment.to_move()
        environment.step({seat: chooser.choice(environment.legal_actions(seat))})

    scores = environment.scores()
    ranks = ranks_from_scores(scores)
    assert [ranks[seat] for seat in leaders] == [1, 1]
    assert environment.winner() is None
    numbers = " and ".join(str(seat + 1) for seat in leaders)
    status = environment.render_text().splitlines()[0]
    assert status.startswith(f"Over: players {numbers} share first place (returns ")
    assert status.endswith(", ".join(f"{value:g}" for value in returns) + ")")


def test_the_status_line_names_the_third_player_to_move_and_every_return() -> None:
    environment = make_environment("openspiel:kuhn_poker(players=3)")
    assert isinstance(environment, OpenSpielEnvironment)
    environment.reset(1)
    seen = []
    while not environment.is_terminal():
        seen.append(environment.render_text().splitlines()[0])
        [seat] = environment.to_move()
        environment.step({seat: environment.legal_actions(seat)[0]})  # everyone passes
    assert seen == ["Player 1 to move", "Player 2 to move", "Player 3 to move"]
    returns = environment.returns()
    assert len(returns) == 3 and sum(returns) == 0
    assert f"(returns {', '.join(f'{value:g}' for value in returns)})" in (
        environment.render_html()
    )
    observation = environment.observation(2)
    assert f"returns by player: {returns}" in environment.render_observation(observation, 2)


def test_a_game_of_more_players_keeps_its_hidden_information_and_first_mover() -> None:
    poker = make_environment("openspiel:leduc_poker(players=4)")
    race = make_environment("openspiel:chinese_checkers(players=3)")

    assert poker.hidden_information and poker.num_players == 4
    assert poker.first_seat is None  # the deal comes first
    assert not race.hidden_information and race.num_players == 3
    assert race.first_seat == 0 and race.to_move() == [0]


def test_it_finds_the_parameter_that_sets_the_count_from_openspiel() -> None:
    assert players_parameter("kuhn_poker") == "players"
    assert players_parameter("leduc_poker") == "players"  # not starting_player
    assert players_parameter("tiny_hanabi") == "num_players"
    assert players_parameter("universal_poker") == "numPlayers"
    assert players_parameter("bridge") is None  # always four
    assert players_parameter("liars_dice") is None  # two, in this OpenSpiel


@pytest.mark.parametrize(
    ("spec", "players", "canonical"),
    [
        ("openspiel:kuhn_poker", 3, "openspiel:kuhn_poker(players=3)"),
        ("openspiel:leduc_poker", 4, "openspiel:leduc_poker(players=4)"),
        ("openspiel:goofspiel(num_cards=4)", 5, "openspiel:goofspiel(num_cards=4,players=5)"),
        ("openspiel:kuhn_poker(players=6)", 6, "openspiel:kuhn_poker(players=6)"),
        ("openspiel:kuhn_poker", 2, "openspiel:kuhn_poker"),
        ("openspiel:bridge", 4, "openspiel:bridge"),
    ],
)
def test_the_organizer_chooses_the_seats(spec: str, players: int, canonical: str) -> None:
    assert canonical_spec(spec, players=players) == canonical
    assert load_info(canonical).players == players
    assert make_environment(canonical).num_players == players


@pytest.mark.parametrize(
    ("spec", "players", "message"),
    [
        ("openspiel:kuhn_poker", 7, "Arena seats 2 to 6 players in a duel, not 7"),
        ("openspiel:kuhn_poker", 1, "Arena seats 2 to 6 players in a duel, not 1"),
        ("openspiel:liars_dice", 3, "OpenSpiel's liars_dice is played by exactly 2 players"),
        ("openspiel:bridge", 3, "OpenSpiel's bridge is played by exactly 4 players, not 3"),
        ("openspiel:cribbage", 5, "OpenSpiel's cribbage is played by 2 to 4 players, not 5"),
        (
            "openspiel:kuhn_poker(players=4)",
            3,
            "the spec sets players=4 and the seats are 3: give the number of players once",
        ),
        ("openspiel:universal_poker", 3, "OpenSpiel crashed setting up"),
        ("openspiel:kuhn_poker(players=8)", None, "it has 8 player(s); Arena plays"),
    ],
)
def test_it_refuses_seats_arena_or_the_game_cannot_give(
    spec: str, players: int | None, message: str
) -> None:
    with pytest.raises(InvalidSpec) as refused:
        canonical_spec(spec, players=players)
    assert message in str(refused.value)


def test_a_spec_fixes_its_count_and_the_registry_names_the_spec_for_another() -> None:
    with pytest.raises(ValueError, match=r"its spec for 3 is openspiel:kuhn_poker\(players=3\)"):
        make_environment("openspiel:kuhn_poker", players=3)
    with pytest.raises(ValueError, match="liars_dice is played by exactly 2 players"):
        make_environment("openspiel:liars_dice", players=3)
    assert make_environment("openspiel:kuhn_poker(players=3)", players=3).num_players == 3


def test_a_game_whose_deal_repeats_still_reaches_its_first_position() -> None:
    # crazy_eights turns its starting card over again while it is an eight: always taking
    # the first outcome never ended the deal, and adding the game hung.
    assert make_environment("openspiel:crazy_eights(players=3)").to_move()
