"""Replays: every state of a match recomputed from its seed and actions, and faults explained.

Games are deterministic, so a match stores only its seed and its actions. The replay page
carries one compact picture of each state (``Environment.view``: a board, a FEN), which
the browser draws (``web/static/web/boards.js`` and the game's own drawer), and the HTML
of one state only (``render_html``, which escapes everything that came from an agent),
for a browser without JavaScript.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, NamedTuple

from core.models import Duel, DuelResult, Match, MatchLog
from environments.base import Environment, IllegalAction, readable_action
from environments.registry import (
    EnvironmentInfo,
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    load_info,
    make_environment,
)
from reads.access import Visitor, can_see_logs
from referee.results import FaultKind, ranks_from_scores


def _fault_meaning(kind: str) -> str:
    try:
        return FaultKind(kind).meaning
    except ValueError:  # a kind this version does not know, from an older duel
        return kind.replace("_", " ")


def player_labels(duel: Duel) -> dict[int, str]:
    """How pages name a duel's players (1 to N): the revisions, told apart in self-play."""
    names = [str(revision) for revision in duel.revisions()]
    if len(set(names)) < len(names):
        return {number: f"{name} (player {number})" for number, name in enumerate(names, 1)}
    return dict(enumerate(names, start=1))


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


def result_text(result: str, labels: dict[int, str], ranks: list[int] | None = None) -> str:
    """A duel's or a match's result as people read it; "" when it has none yet. A result
    of more than two players names who came first (``ranks``: each player's)."""
    if result == DuelResult.RANKED:
        if not ranks:
            return "Ranked by score"
        first = [labels[number] for number, rank in enumerate(ranks, start=1) if rank == 1]
        return f"{' and '.join(first)} first"
    texts: dict[str, str] = {
        DuelResult.PLAYER_1_WIN: f"{labels[1]} won",
        DuelResult.PLAYER_2_WIN: f"{labels[2]} won",
        DuelResult.DRAW: "Draw",
        DuelResult.ERROR: "Error: not scored",
    }
    return texts.get(result, "")


def match_result_text(match: Match, labels: dict[int, str]) -> str:
    ranks = ranks_from_scores(match.scores)
    return result_text(match.result, labels, ranks) or "Error: not scored"


def show_action(action: Any) -> str:
    """An action as a person reads it, where no game is at hand (an LLM's answer)."""
    return readable_action(action)


@dataclasses.dataclass(frozen=True)
class BoardAssets:
    """The files of a game's ``static/`` folder a page with its board names
    (``environment_static``): stylesheets, and the script of its drawer if it has one."""

    stylesheets: list[str] = dataclasses.field(default_factory=list)
    scripts: list[str] = dataclasses.field(default_factory=list)


def board_assets(info: EnvironmentInfo) -> BoardAssets:
    folder = info.static_dir
    return BoardAssets(
        stylesheets=sorted(path.name for path in folder.glob("*.css")),
        scripts=sorted(path.name for path in folder.glob("*.js")),
    )


def game_board_assets(game: str) -> BoardAssets:
    """``board_assets`` of the game named ``game``; none once it is no longer installed."""
    try:
        return board_assets(load_info(game))
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        return BoardAssets()


@dataclasses.dataclass(frozen=True)
class Replay:
    #: One per state, the start included, for the move list: {"step", "moves", "time"}.
    frames: list[dict[str, Any]]
    #: Duel player label sitting in each environment seat.
    seat_labels: list[str]
    faults: list[FaultNote]
    result_text: str
    #: Set when the stored actions no longer replay (the game's rules changed).
    error: str
    assets: BoardAssets = dataclasses.field(default_factory=BoardAssets)
    #: The environment seat that moves first (``first_mover``); None: all move at once.
    first_seat: int | None = None
    #: The picture of each state (``Environment.view``), drawn by the browser.
    views: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: The state shown first (``match_replay``'s ``step``), and its HTML, for a browser
    #: without JavaScript.
    step: int = 0
    html: str = ""

    @property
    def final_step(self) -> int:
        return len(self.frames) - 1


class ReplayBroken(Exception):
    """A stored step no longer applies (the game's rules changed since the match)."""

    def __init__(self, step: int, problem: Exception) -> None:
        super().__init__(f"step {step} no longer replays with the current rules: {problem}")


def _replayed(environment: Environment, match: Match) -> Iterator[int]:
    """Reset ``environment`` to the match's start, then apply its steps one by one,
    yielding the step number after each state (0 for the start)."""
    environment.reset(match.seed)
    yield 0
    for step, actions in enumerate(match.actions, start=1):
        try:
            environment.step(
                {seat: action for seat, action in enumerate(actions) if action is not None}
            )
        except (IllegalAction, KeyError, TypeError, ValueError) as problem:
            raise ReplayBroken(step, problem) from None
        yield step


def _environment_of(match: Match) -> tuple[Environment, EnvironmentInfo] | None:
    """The match's game and its ``info.yml``; None once the game is no longer installed."""
    name = match.duel.environment.game
    try:
        return make_environment(name, players=len(match.seats)), load_info(name)
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        return None


NOT_INSTALLED = "this game is no longer installed"


def game_of(duel: Duel) -> Environment | None:
    """A fresh copy of the duel's game, for as many seats as it has; None once the game is
    no longer installed. One copy serves a whole duel (``first_mover`` resets it)."""
    try:
        return make_environment(duel.environment.game, players=duel.num_players)
    except (UnknownEnvironment, InvalidEnvironmentInfo, ValueError):
        return None


def first_mover(environment: Environment | None, seed: int) -> int | None:
    """The environment seat that moves first in a match started from ``seed``, as the game
    says (in chess White, OpenSpiel's second seat; in backgammon whoever the opening roll
    favours; in poker the first to bet after the deal); None when everyone moves at once,
    or without the game. Resets ``environment``."""
    return None if environment is None else environment.first_to_move(seed)


def first_mover_label(match: Match, labels: dict[int, str], game: Environment | None) -> str:
    """Who moved first in ``match`` (``game``: ``game_of`` its duel), as pages name the
    duel's players."""
    seat = first_mover(game, match.seed)
    return "all at once" if seat is None else labels[match.seats[seat]]


def match_replay(match: Match, step: int | None = None) -> Replay:
    """The replay of ``match``, shown first at ``step`` (the final state if None or past
    it; the first if negative)."""
    duel = match.duel
    labels = player_labels(duel)
    seat_labels = [labels[player] for player in match.seats]
    faults = match_faults(match, labels)
    result_text = match_result_text(match, labels)
    game = _environment_of(match)
    if game is None:
        return Replay([], seat_labels, faults, result_text, NOT_INSTALLED)
    environment, info = game
    first_seat = first_mover(environment, match.seed)
    wanted = len(match.actions) if step is None else max(step, 0)
    frames: list[dict[str, Any]] = []
    views: list[dict[str, Any]] = []
    shown = ""
    error = ""
    number = 0
    try:
        for number in _replayed(environment, match):
            frames.append(_frame(environment, match, number, seat_labels))
            views.append(environment.view())
            if number == wanted:
                shown = environment.render_html()
    except ReplayBroken as broken:
        error = str(broken)
    final = len(frames) - 1
    if number < wanted:
        # Asked past the end, or the match stops early: the environment is at the last
        # state it reached (a refused step changes nothing).
        shown = environment.render_html()
    return Replay(
        frames,
        seat_labels,
        faults,
        result_text,
        error,
        board_assets(info),
        first_seat,
        views,
        min(wanted, final),
        shown,
    )


def _frame(
    environment: Environment, match: Match, step: int, seat_labels: list[str]
) -> dict[str, Any]:
    if step == 0:
        return {"step": 0, "moves": [], "time": None}
    actions = match.actions[step - 1]
    timings = match.timings[step - 1] if step - 1 < len(match.timings) else []
    # The opening's steps were played by the referee, at random, for the seat (its
    # ``opening``): shown as such, not as the player's choice.
    opening = step <= match.opening
    moves = []
    for seat, action in enumerate(actions):
        if action is None:
            continue
        took = timings[seat] if seat < len(timings) else None
        label = seat_labels[seat] if seat < len(seat_labels) else f"seat {seat}"
        moves.append(
            {
                "seat": seat + 1,
                "player": f"The opening, for {label}," if opening else label,
                "action": environment.describe_action(action),
                "time": took,
            }
        )
    return {
        "step": step,
        "moves": moves,
        "time": sum(move["time"] or 0 for move in moves) if moves else None,
    }


@dataclasses.dataclass(frozen=True)
class ReplayStates:
    match: Match
    #: The game's JSON state at the start and after each step.
    states: list[dict[str, Any]]
    #: Set when the stored actions no longer replay, or the game is gone.
    error: str


def match_states(match: Match) -> ReplayStates:
    """Every state of the match as the game's JSON (``Environment.state()``)."""
    game = _environment_of(match)
    if game is None:
        return ReplayStates(match, [], NOT_INSTALLED)
    environment, _info = game
    states = []
    try:
        for _step in _replayed(environment, match):
            states.append(environment.state())
    except ReplayBroken as broken:
        return ReplayStates(match, states, str(broken))
    return ReplayStates(match, states, "")


def frame_of_step(step: int, final_step: int) -> int:
    """The replay frame showing the move made at ``step``: the state after it (frame
    ``step + 1``); a move refused (the match ended on it), the final state, where its
    fault is told."""
    return min(step + 1, final_step)


def move_logs_visible(user: Visitor, match: Match) -> list[MatchLog]:
    """What the match's players' agents logged during their moves, for the players whose
    logs the visitor may read (``can_see_logs``), player 1's first."""
    duel = match.duel
    players = [
        player
        for player, revision in enumerate(duel.revisions(), start=1)
        if can_see_logs(user, revision.competitor, finished=duel.is_finished)
    ]
    return list(MatchLog.objects.filter(match=match, player__in=players).order_by("player"))


class MoveLogEntry(NamedTuple):
    """What one agent wrote while choosing one move. A tuple, so that the page's match
    document carries it as a short list (``[label, step, log]``): a long match has
    hundreds."""

    #: The player, as pages name the duel's players (``player_labels``).
    label: str
    #: The step of the move (from 0).
    step: int
    log: str


def move_logs_by_frame(
    logs: list[MatchLog], *, labels: dict[int, str], final_step: int
) -> dict[int, list[MoveLogEntry]]:
    """The replay viewer's move-log panels: for each frame, what each agent wrote while
    choosing the move that led to it, player 1's first. The page carries them all in its
    match document (``replay-logs``), from which the viewer's script writes the current
    step's panel as text."""
    frames: dict[int, list[MoveLogEntry]] = {}
    for log in logs:
        for move in log.moves:
            step = move.get("step")
            if not isinstance(step, int) or step < 0:
                continue
            frames.setdefault(frame_of_step(step, final_step), []).append(
                MoveLogEntry(
                    label=labels.get(log.player, f"player {log.player}"),
                    step=step,
                    log=str(move.get("log", "")),
                )
            )
    return frames
