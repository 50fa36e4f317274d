"""The records a duel produces: faults, matches and the duel document."""

from __future__ import annotations

import dataclasses
import enum
import math
import random
from collections.abc import Iterable
from typing import Any


class Outcome(enum.StrEnum):
    """Result of a match or a duel, from the duel's point of view."""

    PLAYER_1_WIN = "PLAYER_1_WIN"
    PLAYER_2_WIN = "PLAYER_2_WIN"
    DRAW = "DRAW"
    #: More than two players, not all equal: the scores rank them (``ranks_from_scores``).
    RANKED = "RANKED"
    #: Something outside both agents failed; never scored, to be played again.
    ERROR = "ERROR"


class FaultKind(enum.StrEnum):
    """Every way an agent can misbehave; each is charged to that agent."""

    TIMEOUT = "timeout"
    ILLEGAL_ACTION = "illegal_action"
    MALFORMED_MESSAGE = "malformed_message"
    OVERSIZED_MESSAGE = "oversized_message"
    CRASH = "crash"
    MEMORY_EXCEEDED = "memory_exceeded"
    #: The agent was already unusable (it failed and its one restart failed too),
    #: so the match was not played.
    FORFEIT = "forfeit"
    #: Its player gave the match up (a person's "Resign" button: ``SeatBus.resign``).
    RESIGNED = "resigned"

    @property
    def meaning(self) -> str:
        """What the fault means, in words a newcomer understands (replays, duel pages)."""
        return _FAULT_TEXTS[self][0]

    @property
    def advice(self) -> str:
        """What the agent's author can do about it (validation reports)."""
        return _FAULT_TEXTS[self][1]


#: Each fault's meaning and advice: the one place these texts live (docs/protocol.md
#: says the same at more length).
_FAULT_TEXTS: dict[FaultKind, tuple[str, str]] = {
    FaultKind.TIMEOUT: (
        "did not answer in time: no reply within the move time plus what was left of its "
        "time bank (or no start within the startup time, or its CPU time ran out)",
        "Answer each request within the move time limit; long set-up work belongs before "
        "the handshake (module import or __init__), which has its own limit.",
    ),
    FaultKind.ILLEGAL_ACTION: (
        "played an action that is not among the legal actions",
        "Return one of the actions listed in legal_actions.",
    ),
    FaultKind.MALFORMED_MESSAGE: (
        "sent a line that is not a valid protocol message",
        "Write only protocol messages to stdout (one JSON object per line) and your logs to "
        "stderr; with the SDK, print() already goes to the log.",
    ),
    FaultKind.OVERSIZED_MESSAGE: (
        "sent a line longer than the protocol allows",
        "Keep each message under the size limit and end it with a newline.",
    ),
    FaultKind.CRASH: (
        "stopped: the process exited, closed its output, or its code raised an error",
        "The agent stopped or raised an error; the log below shows where.",
    ),
    FaultKind.MEMORY_EXCEEDED: (
        "ran out of memory under the sandbox's limit",
        "Use less memory than the environment's limit.",
    ),
    FaultKind.FORFEIT: (
        "had already failed after its one restart in this duel; the match was not played",
        "The agent failed twice and could not play on.",
    ),
    FaultKind.RESIGNED: (
        "resigned (gave the match up)",
        "Nothing to fix: resigning is a choice.",
    ),
}


#: A total of scores is kept to this many decimal places, so that equal points are equal
#: however they were added up: a game's fractional scores (a third, a sixth) summed in
#: another order differ in the last bit (25/6 is 4.166666666666667 one way and
#: 4.166666666666666 the other), which would rank two equal players apart. Two totals
#: closer than half of 1e-9 are the same total.
SCORE_DECIMALS = 9


def score_total(scores: Iterable[float]) -> float:
    """The sum of ``scores`` as the game means it: exactly rounded (``math.fsum``, whatever
    the order), then to ``SCORE_DECIMALS`` places."""
    return round(math.fsum(scores), SCORE_DECIMALS)


def ranks_from_scores(scores: list[float]) -> list[int]:
    """Each player's rank, best first by score; equal scores share a rank (1, 2, 2, 4)."""
    return [1 + sum(1 for other in scores if other > score) for score in scores]


def outcome_of(scores: list[float]) -> Outcome:
    """The result the players' scores give: who of two won, or (more than two) ranked."""
    if len(set(scores)) <= 1:
        return Outcome.DRAW
    if len(scores) > 2:
        return Outcome.RANKED
    return Outcome.PLAYER_1_WIN if scores[0] > scores[1] else Outcome.PLAYER_2_WIN


def match_seed(duel_seed: int, index: int) -> int:
    """The seed of match ``index`` of a duel seeded ``duel_seed``: known before it is
    played (a page can tell who will move first)."""
    return random.Random(duel_seed * 1_000_003 + index).randrange(2**31)


def seat_rotation(players: int, index: int) -> list[int]:
    """The duel player in each environment seat of match ``index``: the seats turn by one
    each match (two players: 1 first, then 2 first), so over a multiple of ``players``
    matches everyone sits in every seat equally often; otherwise the first seats of the
    rotation come round once more than the rest."""
    return [(seat + index) % players + 1 for seat in range(players)]


@dataclasses.dataclass
class Fault:
    player: int  # 1 to N, the duel's numbering
    kind: FaultKind
    message: str
    step: int | None = None

    def describe(self) -> str:
        # ``step`` counts from 0 in the record; people count moves from 1.
        where = f" on move {self.step + 1}" if self.step is not None else ""
        return f"player {self.player} {self.kind.value}{where}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {
            "player": self.player,
            "kind": self.kind.value,
            "message": self.message,
            "step": self.step,
        }


@dataclasses.dataclass
class MatchRecord:
    """One match: enough to replay every state (seed, seats, actions)."""

    index: int
    seed: int
    #: The duel player (1 to N) in each environment seat.
    seats: list[int]
    result: Outcome = Outcome.ERROR
    error_msg: str = ""
    #: Each duel player's score, player 1's first.
    scores: list[float] = dataclasses.field(default_factory=list)
    faults: list[Fault] = dataclasses.field(default_factory=list)
    #: One entry per step, one slot per environment seat (None: did not act).
    actions: list[list[Any]] = dataclasses.field(default_factory=list)
    #: Seconds each action took, same shape as ``actions``.
    timings: list[list[float | None]] = dataclasses.field(default_factory=list)
    duration: float = 0.0
    #: Duel player -> its conversation in this match, for seats that keep one
    #: (an LLM player's: every prompt and answer, ``llm.records``).
    transcripts: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: The first steps of ``actions`` that the referee played, the match's opening
    #: (``referee.openings``); the agents played the rest.
    opening: int = 0
    #: Duel player -> step -> what its agent wrote on stderr while choosing that move
    #: (``sandboxes.base.AgentLog``: since its previous answer), capped; moves with no
    #: log are left out.
    move_logs: dict[int, dict[int, str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.scores:
            self.scores = [0.0] * len(self.seats)

    @property
    def first_player(self) -> int:
        """The duel player in the environment's first seat."""
        return self.seats[0]

    @property
    def ranks(self) -> list[int]:
        return ranks_from_scores(self.scores)

    def as_json(self, *, include_logs: bool = True) -> dict[str, Any]:
        document: dict[str, Any] = {
            "index": self.index,
            "seed": self.seed,
            "first_player": self.first_player,
            "seats": self.seats,
            "result": self.result.value,
            "error_msg": self.error_msg,
            "scores": self.scores,
            "ranks": self.ranks,
            "faults": [fault.as_json() for fault in self.faults],
            "actions": self.actions,
            "timings": self.timings,
            "steps": len(self.actions),
            "opening": self.opening,
            "duration": round(self.duration, 6),
        }
        if self.transcripts:
            document["transcripts"] = {
                str(player): conversation for player, conversation in self.transcripts.items()
            }
        if include_logs and self.move_logs:
            document["move_logs"] = {
                str(player): [{"step": step, "log": text} for step, text in sorted(steps.items())]
                for player, steps in sorted(self.move_logs.items())
            }
        return document


@dataclasses.dataclass
class DuelResult:
    environment: str
    #: The players' names, player 1's first (two to six of them).
    players: list[str]
    seed: int
    matches: list[MatchRecord] = dataclasses.field(default_factory=list)
    #: Set when the duel could not be played at all for reasons outside the agents.
    infrastructure_error: str = ""
    #: Each player's restarts and log, in player order (empty until the duel is over).
    restarts: list[int] = dataclasses.field(default_factory=list)
    logs: list[str] = dataclasses.field(default_factory=list)
    duration: float = 0.0

    def __post_init__(self) -> None:
        self.restarts = self.restarts or [0] * len(self.players)
        self.logs = self.logs or [""] * len(self.players)

    def _count(self, predicate: Any) -> int:
        return sum(1 for match in self.matches if predicate(match))

    def errors_of(self, player: int) -> int:
        return self._count(lambda match: any(fault.player == player for fault in match.faults))

    def wins_of(self, player: int) -> int:
        """Matches ``player`` won outright: the best score, shared with nobody."""
        return self._count(
            lambda match: (
                match.result is not Outcome.ERROR
                and match.ranks[player - 1] == 1
                and match.ranks.count(1) == 1
            )
        )

    @property
    def other_errors(self) -> int:
        return self._count(lambda match: match.result is Outcome.ERROR) + (
            1 if self.infrastructure_error else 0
        )

    @property
    def scores(self) -> list[float]:
        """Each player's total match score, player 1's first."""
        return [
            score_total(match.scores[player] for match in self.matches)
            for player in range(len(self.players))
        ]

    @property
    def result(self) -> Outcome:
        if self.other_errors:
            return Outcome.ERROR
        return outcome_of(self.scores)

    @property
    def error_msg(self) -> str:
        if self.infrastructure_error:
            return self.infrastructure_error
        messages = [fault.describe() for match in self.matches for fault in match.faults]
        messages += [match.error_msg for match in self.matches if match.result is Outcome.ERROR]
        unique = list(dict.fromkeys(messages))
        return "; ".join(unique[:5]) + (f" (and {len(unique) - 5} more)" if len(unique) > 5 else "")

    def as_json(self, *, include_logs: bool = True) -> dict[str, Any]:
        document: dict[str, Any] = {
            "environment": self.environment,
            "seed": self.seed,
            "result": self.result.value,
            "error_msg": self.error_msg,
            "num_matches": len(self.matches),
            "other_errors": self.other_errors,
            "draws": self._count(lambda m: m.result is Outcome.DRAW),
            # Every player's figures, player 1's first.
            "num_players": len(self.players),
            "players": self.players,
            "scores": self.scores,
            "ranks": ranks_from_scores(self.scores),
            "wins": [self.wins_of(player) for player in range(1, len(self.players) + 1)],
            "errors": [self.errors_of(player) for player in range(1, len(self.players) + 1)],
            "restarts": self.restarts,
            "duration": round(self.duration, 6),
            "matches": [match.as_json(include_logs=include_logs) for match in self.matches],
        }
        if include_logs:
            document["logs"] = self.logs
        return document
