"""The harness's prompts and how it reads answers: strict, the same for every model."""

from __future__ import annotations

import re

import pytest

from environments.registry import load_info, make_environment
from llm.harness import HARNESS_VERSION, SUPPORTED_HARNESS_VERSIONS, harness_hash
from llm.prompts import MAX_ANSWER_RETRIES, Turn, Verdict, move_prompt, read_answer, retry_prompt
from llm.prompts import system_prompt as make_system_prompt


def test_it_accepts_a_legal_action_on_the_final_answer_line():
    reading = read_answer("The centre is strongest.\nANSWER: 4", [0, 4, 8])
    assert (reading.verdict, reading.action) == (Verdict.LEGAL, 4)


@pytest.mark.parametrize(
    ("answer", "legal", "verdict", "error"),
    [
        ("ANSWER: 5", [0, 4], Verdict.ILLEGAL, "5 is not one of the legal actions"),
        # JSON is compared as JSON: 4.0 and true are not the action 4 or 1.
        ("ANSWER: 4.0", [4], Verdict.ILLEGAL, "4.0 is not one of the legal actions"),
        ("ANSWER: true", [1], Verdict.ILLEGAL, "true is not one of the legal actions"),
        ("ANSWER: rock", ["rock"], Verdict.UNPARSEABLE, "'rock' after ANSWER: is not valid JSON"),
        ("I play 4", [4], Verdict.UNPARSEABLE, "the final line 'ANSWER: <action>' is missing"),
        (
            "ANSWER: 4\nor maybe not",
            [4],
            Verdict.UNPARSEABLE,
            "the final line 'ANSWER: <action>' is not the last line",
        ),
        ("   \n", [4], Verdict.UNPARSEABLE, "the answer was empty"),
        ("answer: 4", [4], Verdict.UNPARSEABLE, "the final line 'ANSWER: <action>' is missing"),
    ],
)
def test_it_refuses_what_is_not_exactly_a_legal_action(answer, legal, verdict, error):
    reading = read_answer(answer, legal)
    assert reading.verdict == verdict
    assert reading.error == error


def test_it_reads_object_actions_whatever_the_order_of_their_keys():
    legal = [{"square": 3, "piece": 7}, {"square": 3, "piece": 8}]
    reading = read_answer('ANSWER: {"piece": 8, "square": 3}', legal)
    assert reading.verdict == Verdict.LEGAL
    assert reading.action == {"square": 3, "piece": 8}


def test_it_refuses_an_answer_that_was_too_long_whatever_it_says():
    reading = read_answer("ANSWER: 4", [4], too_long=20_000)
    assert reading.verdict == Verdict.TOO_LONG
    assert reading.error == "the answer was longer than 20000 characters"


def _turn(environment, **changes):
    values = {
        "environment": environment.name,
        "match": 0,
        "step": 2,
        "seat": 0,
        "observation": environment.observation(0),
        "legal_actions": environment.legal_actions(0),
        "own_moves": [4],
        "move_time": 60.0,
        "time_bank": 300.0,
    }
    return Turn(**{**values, **changes})


def test_it_prompts_with_the_rules_the_position_the_history_and_the_legal_actions():
    environment = make_environment("tic_tac_toe")
    environment.reset(1)
    environment.step({0: 4})
    environment.step({1: 0})
    info = load_info("tic_tac_toe")

    system = make_system_prompt(info, environment, 0)
    prompt = move_prompt(_turn(environment), environment)

    assert info.description.strip() in system
    assert info.rules.strip() in system
    assert "ANSWER: <action>" in system
    assert "O | 1 | 2" in prompt  # the text rendering of what the player sees
    assert "Your moves so far in this match: 4" in prompt
    assert "Legal actions: [1, 2, 3, 5, 6, 7, 8]" in prompt
    assert "Match 1, move 3" in prompt


def test_it_tells_a_player_of_a_game_of_five_its_seat_and_the_others():
    environment = make_environment("lowest_unique", players=5)

    system = make_system_prompt(load_info("lowest_unique"), environment, 2)

    assert "against 4 other players. You are player 3 of 5." in system
    assert "against another player. You are player 1 of 2" in make_system_prompt(
        load_info("tic_tac_toe"), make_environment("tic_tac_toe"), 0
    )


@pytest.mark.parametrize(
    ("game", "first"),
    [
        ("tic_tac_toe", 0),
        # OpenSpiel's chess seats White second; the dice decide backgammon's first move.
        ("openspiel:chess", 1),
        ("openspiel:backgammon", None),
        ("openspiel:leduc_poker", None),
    ],
)
def test_it_says_you_move_first_only_to_the_seat_that_does(game, first):
    environment = make_environment(game)
    told = [
        "you move first" in make_system_prompt(load_info(game), environment, seat)
        for seat in range(2)
    ]
    assert told == [seat == first for seat in range(2)]


def test_it_names_the_error_and_the_retries_left_when_it_asks_again():
    prompt = retry_prompt("5 is not one of the legal actions", [0, 4], 1)
    assert "5 is not one of the legal actions" in prompt
    assert f"retry 1 of {MAX_ANSWER_RETRIES}" in prompt
    assert "Legal actions: [0, 4]" in prompt


@pytest.mark.parametrize(
    "game",
    ["tic_tac_toe", "connect_four", "quarto", "rock_paper_scissors", "sum_to_10", "lowest_unique"],
)
def test_it_prompts_for_every_game_from_the_players_own_view(game):
    environment = make_environment(game)
    environment.reset(3)
    seat = environment.to_move()[0]
    prompt = move_prompt(
        _turn(environment, seat=seat, observation=environment.observation(seat)), environment
    )
    assert environment.render_observation(environment.observation(seat), seat) in prompt


def test_its_version_and_hash_are_recorded_as_they_are():
    assert HARNESS_VERSION in SUPPORTED_HARNESS_VERSIONS
    assert re.fullmatch(r"[0-9a-f]{64}", harness_hash())
    assert harness_hash() == harness_hash()
