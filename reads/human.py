"""A person's games in the browser as their pages show them: the play page (live, or the
final position and result once over) and "My games"."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import QuerySet

from core.models import Duel, DuelResult, DuelSeat, DuelStatus, User
from core.services.human import human_duel_seat, human_games, human_opponent
from reads.replays import first_mover, game_of, match_replay
from referee.results import FaultKind, match_seed, seat_rotation


def faults_in_words(faults: list[dict[str, Any]], you: int, opponent: str) -> str:
    """A match's faults for the person who played it (``you``: their duel player
    number): "You, on move 3, did not answer in time..." or "rando, on move 2, played an
    action that is not among the legal actions." """
    sentences = []
    for fault in faults:
        who = "You" if fault.get("player") == you else opponent
        step = fault.get("step")
        where = f", on move {step + 1}," if isinstance(step, int) else ""
        try:
            meaning = FaultKind(str(fault.get("kind"))).meaning
        except ValueError:  # a kind this version does not know, from an older game
            meaning = str(fault.get("kind", "")).replace("_", " ")
        sentences.append(f"{who}{where} {meaning}.")
    return " ".join(sentences)


def _outcome(result: str, you: int) -> str:
    """The person's outcome (player ``you``): "win", "loss", "draw", or "" without one."""
    if result == DuelResult.DRAW:
        return "draw"
    if result in (DuelResult.PLAYER_1_WIN, DuelResult.PLAYER_2_WIN):
        return "win" if result == f"PLAYER_{you}_WIN" else "loss"
    return ""


_OUTCOME_WORDS = {"win": "You won!", "loss": "You lost.", "draw": "A draw."}


@dataclasses.dataclass(frozen=True)
class GameEnd:
    """How a finished game ended, for its page."""

    #: "win", "loss", "draw", or "" when it has no result (aborted, or Arena failed).
    outcome: str
    #: The result and why, in words.
    text: str
    #: The final position as the game draws it (``Environment.view``: the whole board,
    #: its last move and winning line), or None without one.
    view: dict[str, Any] | None


def _game_end(duel: Duel, you: DuelSeat, opponent: str) -> GameEnd:
    if duel.status == DuelStatus.CANCELLED:
        return GameEnd("", f"Aborted: no result. {duel.reported_error}".strip(), None)
    match = duel.matches.first()
    if duel.status == DuelStatus.FAILED or match is None:
        why = duel.reported_error or "Arena could not referee it."
        return GameEnd("", f"The game ended without a result: {why}", None)
    outcome = _outcome(match.result, you.number)
    words = faults_in_words(match.faults, you.number, opponent)
    text = f"{_OUTCOME_WORDS.get(outcome, 'No result.')} {words}".strip()
    views = match_replay(match).views
    return GameEnd(outcome, text, views[-1] if views else None)


@dataclasses.dataclass(frozen=True)
class PlayPage:
    duel: Duel
    you: DuelSeat
    opponent: DuelSeat
    you_move_first: bool
    #: Set once the game is over: its page shows it instead of waiting for the referee.
    end: GameEnd | None


def play_page(*, user: User, duel: Duel) -> PlayPage | None:
    """The play page of ``user``'s game ``duel`` (None if it is not theirs)."""
    you = human_duel_seat(user=user, duel=duel)
    if you is None:
        return None
    opponent = human_opponent(duel)
    # The game's one match seats duel player 1 first; who moves first is the game's to say
    # (in chess, White: the second seat).
    seat = seat_rotation(2, 0).index(you.number)
    first = first_mover(game_of(duel), match_seed(duel.seed, 0))
    end = _game_end(duel, you, str(opponent.revision)) if duel.is_finished else None
    return PlayPage(duel, you, opponent, first == seat, end)


@dataclasses.dataclass(frozen=True)
class GameRow:
    duel: Duel
    opponent: str
    #: "win", "loss", "draw", "" (no result), or "playing" while queued or running.
    outcome: str


def my_games(*, user: User) -> QuerySet[Duel]:
    return human_games(user).with_seats()


def game_rows(*, user: User, duels: list[Duel]) -> list[GameRow]:
    rows = []
    for duel in duels:
        you = human_duel_seat(user=user, duel=duel)
        if you is None:
            continue
        outcome = _outcome(duel.result, you.number) if duel.is_finished else "playing"
        rows.append(GameRow(duel, str(human_opponent(duel).revision), outcome))
    return rows
