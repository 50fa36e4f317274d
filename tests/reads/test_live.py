"""What a spectator of a running duel is shown beside the board (``reads.live.Spectator``):
each seat's player, side, turn and clock, from the referee's events as the worker stores
them. The stream that sends these frames is tested in tests/edge/test_live.py."""

from __future__ import annotations

from typing import Any

from reads.live import LiveDuel, Spectator

ALICE = "alice-bot v1"
BOB = "bobs-bot v2"


def spectator(environment: str) -> Spectator:
    return Spectator(
        LiveDuel(pk=7, environment=environment, players=2, labels={1: ALICE, 2: BOB}, url="/")
    )


def match(seats: list[int], **clock: float) -> dict[str, Any]:
    return {
        "type": "match",
        "match": 1,
        "seed": 3,
        "first_player": seats[0],
        "seats": seats,
        **clock,
    }


def seen(frame: dict[str, Any]) -> list[tuple[str, str, bool, float | None]]:
    return [(seat["name"], seat["side"], seat["to_move"], seat["bank"]) for seat in frame["seats"]]


def test_it_names_each_seats_player_and_side_and_says_who_is_to_move():
    watching = spectator("tic_tac_toe")

    (frame,) = watching.take([match([2, 1], move_time=1.0, time_bank=10)])

    # Bob sits in seat 1 this match: he plays X and moves first.
    assert seen(frame) == [(BOB, "X", True, 10.0), (ALICE, "O", False, 10.0)]
    assert frame["move_time"] == 1.0


def test_the_turn_passes_and_each_bank_is_what_the_referee_told_after_the_step():
    watching = spectator("tic_tac_toe")
    watching.take([match([1, 2], move_time=1.0, time_bank=10)])

    (frame,) = watching.take(
        [{"type": "step", "match": 1, "step": 0, "actions": [4, None], "banks": [9.25, 10.0]}]
    )

    assert seen(frame) == [(ALICE, "X", False, 9.25), (BOB, "O", True, 10.0)]


def test_nobody_is_to_move_once_the_match_is_over():
    watching = spectator("connect_four")
    watching.take([match([1, 2], move_time=1.0, time_bank=10)])

    (frame,) = watching.take([{"type": "match_end", "match": 1, "result": "PLAYER_2_WIN"}])

    assert seen(frame) == [(ALICE, "red", False, 10.0), (BOB, "yellow", False, 10.0)]


def test_chess_seats_are_black_and_white_and_white_moves_first():
    watching = spectator("openspiel:chess")

    (frame,) = watching.take([match([1, 2], move_time=5.0, time_bank=60)])

    # OpenSpiel seats Black first: Bob, in seat 2, has White.
    assert seen(frame) == [(ALICE, "Black", False, 60.0), (BOB, "White", True, 60.0)]


def test_a_game_with_hidden_cards_shows_names_turn_and_clock_but_not_the_board():
    watching = spectator("openspiel:leduc_poker")

    (frame,) = watching.take([match([1, 2], move_time=5.0, time_bank=60)])

    assert frame["view"] is None and frame["moves"] == []
    assert seen(frame) == [(ALICE, "", True, 60.0), (BOB, "", False, 60.0)]


def test_events_without_a_clock_show_none_and_nothing_before_the_first_match():
    watching = spectator("tic_tac_toe")
    assert watching.frame()["seats"] == []

    (frame,) = watching.take([match([1, 2])])

    assert seen(frame) == [(ALICE, "X", True, None), (BOB, "O", False, None)]
    assert frame["move_time"] is None
