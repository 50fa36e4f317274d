"""OpenSpiel games played through the referee by the reference random player, in the
process sandbox, and replayed from what the duel stored."""

from __future__ import annotations

import pytest

from environments.base import replay, shares_beaten
from environments.openspiel.adapter import OpenSpielEnvironment
from environments.registry import make_environment
from referee.duel import run_duel
from referee.results import Outcome, ranks_from_scores, score_total, seat_rotation
from referee.validation import validate
from sandboxes.base import AgentSource
from tests.support.sandboxes import player

RANDOM = "openspiel/random_player.py"


@pytest.mark.parametrize(
    "spec",
    [
        "openspiel:chess",
        "openspiel:go(board_size=9)",
        "openspiel:leduc_poker",
        "openspiel:backgammon",
    ],
)
def test_random_players_play_each_example_game_to_the_end(backend, spec: str) -> None:
    result = run_duel(spec, (player(RANDOM), player(RANDOM)), backend=backend, matches=2, seed=5)

    assert result.infrastructure_error == ""
    assert len(result.matches) == 2
    for match in result.matches:
        assert match.faults == [], match.error_msg
        assert match.result in (Outcome.PLAYER_1_WIN, Outcome.PLAYER_2_WIN, Outcome.DRAW)
        # The stored seed and actions give back the same end, chance included.
        environment = make_environment(spec)
        replay(environment, match.seed, match.actions)
        assert environment.is_terminal()
        by_player = {
            seat: score for seat, score in zip(match.seats, environment.scores(), strict=True)
        }
        assert (by_player[1], by_player[2]) == (match.scores[0], match.scores[1])


def test_the_random_player_passes_validation_at_leduc_poker(backend) -> None:
    validation = validate("openspiel:leduc_poker", player(RANDOM), backend=backend, seed=1)
    assert validation.passed, validation.message
    assert len(validation.duel.matches) == 4


def test_an_agent_that_answers_with_the_bare_id_loses_for_an_illegal_action(
    backend, tmp_path
) -> None:
    bare = tmp_path / "bare.py"
    bare.write_text(
        "from arena_sdk import Agent, run\n"
        "class Bare(Agent):\n"
        "    def act(self, turn):\n"
        "        return turn.legal_actions[0]['id']\n"
        "run(Bare())\n"
    )
    result = run_duel(
        "openspiel:leduc_poker",
        (AgentSource.from_path(bare), player(RANDOM)),
        backend=backend,
        matches=1,
        seed=2,
    )
    [match] = result.matches
    [fault] = match.faults
    assert (fault.player, fault.kind.value) == (1, "illegal_action")
    assert 'action must be an object {"id": ..., "text": ...}' in fault.message
    assert match.result == Outcome.PLAYER_2_WIN


SEED_LOGGER = """
import sys
from arena_sdk import Agent, run

class SeedLogger(Agent):
    def start(self, match):
        print("seed", match.seed, file=sys.stderr, flush=True)

    def act(self, turn):
        return turn.random.choice(turn.legal_actions)

run(SeedLogger())
"""


def test_no_agent_is_given_the_seed_the_cards_are_dealt_from(backend, tmp_path) -> None:
    logger = tmp_path / "logger.py"
    logger.write_text(SEED_LOGGER)
    source = AgentSource.from_path(logger)

    first = run_duel("openspiel:leduc_poker", (source, source), backend=backend, matches=4, seed=9)
    again = run_duel("openspiel:leduc_poker", (source, source), backend=backend, matches=4, seed=9)

    given = [line.split()[1] for line in first.logs[0].splitlines() if line.startswith("seed")]
    assert len(given) == 4
    assert not {str(match.seed) for match in first.matches} & set(given)
    # Still derived from the match seed: a duel played again with its seed is the same.
    assert [match.actions for match in first.matches] == [match.actions for match in again.matches]
    assert first.logs[0] == again.logs[0]


@pytest.mark.parametrize(
    "spec", ["openspiel:kuhn_poker(players=3)", "openspiel:leduc_poker(players=4)"]
)
def test_random_players_play_a_duel_of_more_seats_ranked_by_their_returns(
    backend, spec: str
) -> None:
    seats = make_environment(spec).num_players
    matches = 2 * seats

    result = run_duel(spec, [player(RANDOM)] * seats, backend=backend, matches=matches, seed=7)
    document = result.as_json()

    assert result.infrastructure_error == "", result.error_msg
    assert document["num_players"] == seats
    assert document["errors"] == [0] * seats
    assert [match.seats for match in result.matches] == [
        seat_rotation(seats, index) for index in range(matches)
    ]
    for match in result.matches:
        assert match.faults == [], match.error_msg
        # The stored seed and moves give back the deal and the returns; each duel player
        # scores its seat's share of the others it beat, so equal returns rank equal.
        environment = make_environment(spec)
        assert isinstance(environment, OpenSpielEnvironment)
        replay(environment, match.seed, match.actions)
        returns = dict(zip(match.seats, environment.returns(), strict=True))
        by_player = [returns[number] for number in range(1, seats + 1)]
        assert match.scores == shares_beaten(by_player)
        assert match.ranks == [1 + sum(other > mine for other in by_player) for mine in by_player]
        assert match.result in (Outcome.RANKED, Outcome.DRAW)
    assert document["scores"] == [
        score_total(match.scores[number] for match in result.matches) for number in range(seats)
    ]
    assert document["ranks"] == ranks_from_scores(document["scores"])
    assert document["result"] in (Outcome.RANKED.value, Outcome.DRAW.value)


def test_an_agent_validates_in_every_seat_of_a_game_of_three(backend) -> None:
    validation = validate("openspiel:kuhn_poker(players=3)", player(RANDOM), backend=backend)

    assert validation.passed, validation.message
    assert len(validation.duel.players) == 3
    assert all(len(match.seats) == 3 for match in validation.duel.matches)
