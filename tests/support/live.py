"""Checks shared by the tests of live watching."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class Played(Protocol):
    """A match as the referee records it (``MatchRecord``) or the database keeps it."""

    @property
    def index(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def first_player(self) -> int: ...
    @property
    def seats(self) -> list[int]: ...
    @property
    def actions(self) -> list[list[Any]]: ...
    @property
    def result(self) -> str: ...


def assert_told_as_recorded(events: list[dict[str, Any]], matches: Iterable[Played]) -> None:
    """Each match's events are its start (seed, first player, each seat's player, the
    clock), its steps' actions as recorded, in order, each step's banks within the clock,
    and its result."""
    for match in matches:
        told = [event for event in events if event["match"] == match.index]
        start = told[0]
        assert {key: start[key] for key in ("type", "match", "seed", "first_player", "seats")} == {
            "type": "match",
            "match": match.index,
            "seed": match.seed,
            "first_player": match.first_player,
            "seats": list(match.seats),
        }
        assert start["move_time"] > 0 and start["time_bank"] >= 0
        steps = [event for event in told if event["type"] == "step"]
        assert [event["actions"] for event in steps] == match.actions
        # An opening's steps are the referee's: no clock ran.
        for step in steps:
            if not step.get("opening"):
                assert len(step["banks"]) == len(match.seats)
                assert all(0 <= bank <= start["time_bank"] for bank in step["banks"])
        assert [event["step"] for event in steps] == list(range(len(match.actions)))
        assert told[-1]["type"] == "match_end" and told[-1]["result"] == match.result
