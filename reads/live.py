"""Watching a running duel: what a spectator is shown, from the events its worker stores.

The worker stores the referee's public events in batches (``LiveEvent``: a match begins
with its seed, the actions of each step, a match ends). A spectator's stream keeps its
own copy of the game and applies them, exactly as a replay recomputes a match from its
seed and actions, and shows the game's own picture (``Environment.view``, drawn by the
browser as a replay draws it): a spectator sees what the match's public replay will show,
and nothing of the seats' requests (their observations or legal actions). Beside the board,
each seat's player, its side in the game (``Environment.seat_side``), whether it is to move
and its clock: the move limit and the time bank the referee tells after each step, which
the page counts down for the seat to move.

A game with hidden information (``Environment.hidden_information``: cards in a hand) is
shown a match at a time, once the match is over, when its replay would show it anyway:
during the match spectators see only that it is being played, how many moves it has
had, whose turn it is and the clocks, so a running match never leaks what one seat holds to
someone passing it on to the other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
from django.contrib.auth.models import AnonymousUser

from core.models import Duel, DuelStatus, LiveEvent
from environments.base import Environment, IllegalAction
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment
from reads.access import can_see_duel
from reads.outcomes import duel_outcome
from reads.replays import (
    match_replay,
    match_result_text,
    player_labels,
    result_text,
    show_action,
)

#: Where a duel's live stream is served (by the gateway, ``edge.live``): the duel's id follows.
LIVE_PREFIX = "/api/v1/online/live/"


def duel_watchable(duel: Duel) -> bool:
    """Whether anyone may watch the duel live: its replays are public."""
    return can_see_duel(AnonymousUser(), duel)


@dataclasses.dataclass(frozen=True)
class LiveDuel:
    """A duel open to spectators: whoever may see it without an account."""

    pk: int
    environment: str
    #: Its number of players (a game with a ``players`` setting is set up for them).
    players: int
    labels: dict[int, str]
    url: str


def live_duel(duel_id: int) -> LiveDuel | None:
    """The duel, if it exists and its replays are public; None otherwise (a private one's
    existence is not told)."""
    duel = Duel.objects.with_seats().select_related("tournament").filter(pk=duel_id).first()
    if duel is None or not duel_watchable(duel):
        return None
    return LiveDuel(
        pk=duel.pk,
        environment=duel.environment.game,
        players=duel.num_players,
        labels=player_labels(duel),
        url=duel.get_absolute_url(),
    )


def live_events_after(duel_id: int, after: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """The duel's stored batches after id ``after``: (id, its events)."""
    rows = LiveEvent.objects.filter(duel_id=duel_id, id__gt=after).values_list("id", "lines")
    return [(pk, [orjson.loads(line) for line in lines.splitlines()]) for pk, lines in rows]


def live_ending(duel_id: int) -> dict[str, Any] | None:
    """What a spectator is told once the duel is over (its result and replays); None
    while it is queued or running."""
    duel = Duel.objects.with_seats().filter(pk=duel_id).first()
    if duel is None:
        return {
            "result": "The duel was deleted.",
            "view": None,
            "duel": None,
            "results": [],
            "replays": [],
        }
    if not duel.is_finished:
        return None
    labels = player_labels(duel)
    if duel.status == DuelStatus.SUCCEEDED:
        text = result_text(duel.result, labels)
    elif duel.status == DuelStatus.CANCELLED:
        text = "Cancelled."
    else:
        text = "Failed for a reason outside the agents: not scored."
    matches = list(duel.matches.order_by("index"))
    # The last moves may have been stored after the stream's last look: the final board
    # comes from the replay, public now that the duel is over.
    final = match_replay(matches[-1]).views if matches else []
    # The page's badge and sentence as the duel's page now shows them.
    outcome = duel_outcome(duel, labels=labels, seats=duel.players(), matches=matches)
    return {
        "result": text,
        "outcome": {"label": outcome.label, "style": outcome.style, "text": outcome.text},
        "view": final[-1] if final else None,
        "duel": duel.get_absolute_url(),
        "results": [
            {"match": match.index, "result": match_result_text(match, labels)} for match in matches
        ],
        "replays": [{"match": match.index, "url": match.get_absolute_url()} for match in matches],
    }


class Spectator:
    """One spectator's copy of a running duel: ``take`` applies events, and returns the
    frames to show (a frame at the end of each batch, and the last of each match)."""

    def __init__(self, duel: LiveDuel) -> None:
        self.duel = duel
        try:
            self.environment: Environment | None = make_environment(
                duel.environment, players=duel.players
            )
        except (UnknownEnvironment, InvalidEnvironmentInfo, ValueError):
            self.environment = None
        self.hidden = bool(self.environment is not None and self.environment.hidden_information)
        self.match: int | None = None
        #: The duel player in each seat of the match being played.
        self.seats = [1, 2]
        self.steps = 0
        self.moves: list[str] = []
        #: The match's move limit and each seat's time bank, in seconds; None from a
        #: referee that did not tell them.
        self.move_time: float | None = None
        self.banks: list[float | None] = []
        self.results: dict[int, str] = {}
        self.broken = ""
        self._shown = True

    def _seat_label(self, seat: int) -> str:
        if seat < len(self.seats) and self.seats[seat] in self.duel.labels:
            return self.duel.labels[self.seats[seat]]
        return f"seat {seat + 1}"

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        environment = self.environment
        if kind == "match":
            self.match = int(event["match"])
            first = int(event.get("first_player", 1))
            seats = event.get("seats")
            self.seats = (
                [int(player) for player in seats]
                if isinstance(seats, list)
                else ([1, 2] if first == 1 else [2, 1])
            )
            self.steps = 0
            self.moves = []
            self.broken = ""
            self.move_time = _seconds(event.get("move_time"))
            self.banks = [_seconds(event.get("time_bank"))] * len(self.seats)
            if environment is not None:
                environment.reset(int(event["seed"]))
        elif kind == "step" and event.get("match") == self.match:
            actions = event.get("actions") or []
            self.steps += 1
            banks = event.get("banks")
            if isinstance(banks, list) and len(banks) == len(self.seats):
                self.banks = [_seconds(bank) for bank in banks]
            describe = environment.describe_action if environment is not None else show_action
            # An opening's step was the referee's, at random (``referee.openings``).
            opening = "the opening, for " if event.get("opening") else ""
            self.moves = [
                f"{opening}{self._seat_label(seat)}: {describe(action)}"
                for seat, action in enumerate(actions)
                if action is not None
            ]
            if environment is not None and not self.broken:
                try:
                    environment.step(
                        {seat: action for seat, action in enumerate(actions) if action is not None}
                    )
                except (IllegalAction, KeyError, TypeError, ValueError) as problem:
                    self.broken = f"this match no longer replays with the current rules: {problem}"
        elif kind == "match_end":
            index = int(event["match"])
            result = str(event.get("result", ""))
            ranks = event.get("ranks")
            self.results[index] = (
                result_text(result, self.duel.labels, ranks if isinstance(ranks, list) else None)
                or "Error: not scored"
            )
            if event.get("reason"):
                self.results[index] += f" ({str(event['reason'])[:300]})"
        self._shown = False

    def _players(self, ended: bool) -> list[dict[str, Any]]:
        """Each seat of the match being played: its player's name, side, turn and bank."""
        environment = self.environment
        if self.match is None:
            return []
        movers: set[int] = set()
        if environment is not None and not self.broken and not ended:
            movers = set(environment.to_move())
        return [
            {
                "player": player,
                "name": self._seat_label(seat),
                "side": environment.seat_side(seat) if environment is not None else "",
                "to_move": seat in movers,
                "bank": self.banks[seat] if seat < len(self.banks) else None,
            }
            for seat, player in enumerate(self.seats)
        ]

    def frame(self) -> dict[str, Any]:
        """What the page shows now."""
        ended = self.match is not None and self.match in self.results
        concealed = self.hidden and not ended
        board = None
        if self.environment is not None and self.match is not None and not concealed:
            board = self.environment.view()
        if self.match is None:
            status = "Waiting for the first match to begin."
        elif ended:
            status = f"Match {self.match}: {self.results[self.match]}"
        elif concealed:
            status = (
                f"Match {self.match} is being played ({self.steps} moves so far). Its "
                "players hold hidden information: the board is shown when the match ends."
            )
        else:
            status = f"Match {self.match}, move {self.steps}."
        return {
            "match": self.match,
            "step": self.steps,
            "view": board,
            "moves": [] if concealed else self.moves,
            "status": status,
            "seats": self._players(ended),
            "move_time": self.move_time,
            "error": self.broken,
            "results": [
                {"match": index, "result": text} for index, text in sorted(self.results.items())
            ],
        }

    def take(self, events: list[dict[str, Any]], *, show: bool = True) -> list[dict[str, Any]]:
        """Apply ``events``; the frames to send if ``show``: the end of a match before
        the next one replaces it, and the state after the last event."""
        frames = []
        for event in events:
            if show and event.get("type") == "match" and not self._shown and self.match is not None:
                frames.append(self.frame())
            self._apply(event)
        if show and events:
            frames.append(self.frame())
            self._shown = True
        return frames


def _seconds(value: object) -> float | None:
    """A number of seconds an event tells; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
