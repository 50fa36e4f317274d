"""Harness version 1: the prompts an LLM player is given, and how its answers are read.

Every model gets the same prompts. One request per move, built afresh from the game's
description and rules (``info.yml``), the text rendering of what the player sees
(``Environment.render_observation``), its moves so far in the match and the legal
actions. The model may reason freely, but its answer must end with a line
``ANSWER: <action>``, the action written as JSON exactly as listed; anything else is
refused, and the model is asked again (``retry_prompt``) naming what was wrong. Changing
a text here changes the harness: bump ``HARNESS_VERSION`` (its hash changes by itself).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from environments.base import Environment
from environments.registry import EnvironmentInfo

HARNESS_VERSION = "1"
#: The versions this code can play (one at a time: the current one).
SUPPORTED_HARNESS_VERSIONS: tuple[str, ...] = (HARNESS_VERSION,)
#: Requests after a refused answer, each naming the error, before the move is lost.
MAX_ANSWER_RETRIES = 2
ANSWER_PREFIX = "ANSWER:"
_ANSWER_LINE = re.compile(r"^\s*ANSWER:[ \t]*(?P<value>.*?)\s*$", re.MULTILINE)


def system_prompt(info: EnvironmentInfo, environment: Environment, seat: int) -> str:
    configuration = json.dumps(environment.configuration, sort_keys=True)
    others = environment.num_players - 1
    against = "another player" if others == 1 else f"{others} other players"
    return (
        f"You are playing {info.title} against {against}. You are player {seat + 1} "
        f"of {environment.num_players}"
        + (
            " and you move first."
            if seat == environment.first_seat and not environment.simultaneous
            else "."
        )
        + f"\n\nThe game: {info.description.strip()}\n\nThe rules: {info.rules.strip()}"
        + f"\n\nGame settings: {configuration}"
        + "\n\nEach turn you are shown the position and the list of legal actions. Think as "
        "briefly or as long as you like, then end your reply with exactly one final line of "
        f"the form\n{ANSWER_PREFIX} <action>\nwhere <action> is one of the legal actions, "
        "written exactly as it appears in the list (JSON: a number as a number, a string in "
        "double quotes, an object with its keys). Nothing may follow that line."
    )


@dataclasses.dataclass(frozen=True)
class Turn:
    """What one move's prompt is built from."""

    environment: str
    match: int
    step: int
    seat: int
    observation: dict[str, Any]
    legal_actions: list[Any]
    own_moves: list[Any]
    move_time: float
    time_bank: float


def move_prompt(turn: Turn, environment: Environment) -> str:
    own = ", ".join(_json(action) for action in turn.own_moves) or "none yet"
    position = environment.render_observation(turn.observation, turn.seat)
    return (
        f"Game: {turn.environment}. Match {turn.match + 1}, move {turn.step + 1}. "
        f"You are player {turn.seat + 1}.\n\n"
        f"The position as you see it:\n{position}"
        f"\n\nObservation (JSON): {_json(turn.observation)}"
        f"\nYour moves so far in this match: {own}"
        f"\nLegal actions: {_json(turn.legal_actions)}"
        f"\nTime: {turn.move_time:g} s for this move, and {turn.time_bank:g} s left in your "
        "time bank for the match."
        f"\n\nReply, ending with the line: {ANSWER_PREFIX} <one of the legal actions>"
    )


def retry_prompt(error: str, legal_actions: list[Any], retry: int) -> str:
    return (
        f"Your answer was not accepted: {error}. This is retry {retry} of "
        f"{MAX_ANSWER_RETRIES}; after it the move is lost.\nLegal actions: "
        f"{_json(legal_actions)}\nAnswer again, ending with exactly one line: "
        f"{ANSWER_PREFIX} <one of the legal actions>"
    )


class Verdict:
    LEGAL = "legal"
    ILLEGAL = "illegal"
    UNPARSEABLE = "unparseable"
    TOO_LONG = "too_long"


@dataclasses.dataclass(frozen=True)
class Reading:
    """How an answer was read: its verdict, the action (when one was parsed) and why
    it was refused."""

    verdict: str
    action: Any = None
    error: str = ""

    @property
    def parsed(self) -> bool:
        return self.verdict in (Verdict.LEGAL, Verdict.ILLEGAL)


def read_answer(text: str, legal_actions: list[Any], *, too_long: int | None = None) -> Reading:
    """Read the model's answer strictly: the last line must be ``ANSWER: <JSON>`` and the
    JSON one of ``legal_actions`` (compared as JSON: ``1`` is not ``1.0`` nor ``true``)."""
    if too_long is not None:
        return Reading(Verdict.TOO_LONG, error=f"the answer was longer than {too_long} characters")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return Reading(Verdict.UNPARSEABLE, error="the answer was empty")
    last = _ANSWER_LINE.match(lines[-1])
    if last is None:
        earlier = any(_ANSWER_LINE.match(line) for line in lines)
        where = "is not the last line" if earlier else "is missing"
        return Reading(
            Verdict.UNPARSEABLE, error=f"the final line '{ANSWER_PREFIX} <action>' {where}"
        )
    value = last.group("value")
    try:
        action = json.loads(value)
    except ValueError:
        return Reading(
            Verdict.UNPARSEABLE,
            error=f"{cut(value)!r} after {ANSWER_PREFIX} is not valid JSON",
        )
    legal = {_json(candidate) for candidate in legal_actions}
    if _json(action) not in legal:
        return Reading(
            Verdict.ILLEGAL, action, error=f"{cut(_json(action))} is not one of the legal actions"
        )
    return Reading(Verdict.LEGAL, action)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def cut(text: str, limit: int = 80) -> str:
    """``text``, or its first ``limit`` characters ending in "..." (for messages)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
