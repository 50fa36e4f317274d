"""Replays: every state of a match recomputed from its seed and actions, and faults explained.

Games are deterministic, so a match stores only its seed and its actions; the frames the
replay viewer shows are rendered here by the environment itself (``render_html``), whose
output escapes everything that came from an agent.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from core.models import Duel, DuelResult, Match
from environments.base import IllegalAction
from environments.registry import (
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    load_info,
    make_environment,
)
from referee.results import FaultKind


def _fault_meaning(kind: str) -> str:
    try:
        return FaultKind(kind).meaning
    except ValueError:  # a kind this version does not know, from an older duel
        return kind.replace("_", " ")


def player_labels(duel: Duel) -> dict[int, str]:
    """How pages name duel players 1 and 2: the revisions, told apart in self-play."""
    first, second = str(duel.revision_1), str(duel.revision_2)
    if first == second:
        return {1: f"{first} (player 1)", 2: f"{second} (player 2)"}
    return {1: first, 2: second}


@dataclasses.dataclass(frozen=True)
class FaultNote:
    player: int
    label: str
    kind: str
    message: str
    step: int | None
    explanation: str

    @property
    def text(self) -> str:
        # ``step`` counts from 0 (the protocol's step); people count moves from 1.
        where = f", on move {self.step + 1}," if self.step is not None else ""
        return f"{self.label}{where} {self.explanation}. {self.message}".strip()


def match_faults(match: Match, labels: dict[int, str]) -> list[FaultNote]:
    notes = []
    for fault in match.faults:
        kind = str(fault.get("kind", ""))
        player = int(fault.get("player", 0))
        notes.append(
            FaultNote(
                player=player,
                label=labels.get(player, f"player {player}"),
                kind=kind,
                message=str(fault.get("message", "")),
                step=fault.get("step"),
                explanation=_fault_meaning(kind),
            )
        )
    return notes


def result_text(result: str, labels: dict[int, str]) -> str:
    """A duel's or a match's result as people read it; "" when it has none yet."""
    return {
        DuelResult.PLAYER_1_WIN: f"{labels[1]} won",
        DuelResult.PLAYER_2_WIN: f"{labels[2]} won",
        DuelResult.DRAW: "Draw",
        DuelResult.ERROR: "Error: not scored",
    }.get(result, "")


def match_result_text(match: Match, labels: dict[int, str]) -> str:
    return result_text(match.result, labels) or "Error: not scored"


def show_action(action: Any) -> str:
    """An action as a person reads it: ``4``, ``rock``, ``{"square": 3, "piece": 5}``."""
    if isinstance(action, str):
        return action
    return json.dumps(action, ensure_ascii=False)


@dataclasses.dataclass(frozen=True)
class Replay:
    #: One per state, the start included: {"step", "html", "moves", "time"}.
    frames: list[dict[str, Any]]
    #: Duel player label sitting in each environment seat.
    seat_labels: list[str]
    faults: list[FaultNote]
    result_text: str
    #: Set when the stored actions no longer replay (the game's rules changed).
    error: str
    #: File names of the game's stylesheets (``environment_static``).
    stylesheets: list[str] = dataclasses.field(default_factory=list)

    @property
    def final_step(self) -> int:
        return len(self.frames) - 1


def match_replay(match: Match) -> Replay:
    duel = match.duel
    labels = player_labels(duel)
    seat_labels = [labels[player] for player in match.seats]
    environment_name = duel.revision_1.competitor.environment.name
    faults = match_faults(match, labels)
    result_text = match_result_text(match, labels)
    try:
        environment = make_environment(environment_name)
        static_dir = load_info(environment_name).static_dir
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        return Replay([], seat_labels, faults, result_text, "this game is no longer installed")
    stylesheets = sorted(path.name for path in static_dir.glob("*.css"))
    environment.reset(match.seed)
    frames: list[dict[str, Any]] = [
        {"step": 0, "html": environment.render_html(), "moves": [], "time": None}
    ]
    error = ""
    for step, actions in enumerate(match.actions, start=1):
        try:
            environment.step(
                {seat: action for seat, action in enumerate(actions) if action is not None}
            )
        except (IllegalAction, KeyError, TypeError, ValueError) as problem:
            error = f"step {step} no longer replays with the current rules: {problem}"
            break
        timings = match.timings[step - 1] if step - 1 < len(match.timings) else []
        moves = []
        for seat, action in enumerate(actions):
            if action is None:
                continue
            took = timings[seat] if seat < len(timings) else None
            moves.append(
                {
                    "seat": seat + 1,
                    "player": seat_labels[seat] if seat < len(seat_labels) else f"seat {seat}",
                    "action": show_action(action),
                    "time": took,
                }
            )
        frames.append(
            {
                "step": step,
                "html": environment.render_html(),
                "moves": moves,
                "time": sum(move["time"] or 0 for move in moves) if moves else None,
            }
        )
    return Replay(frames, seat_labels, faults, result_text, error, stylesheets)
