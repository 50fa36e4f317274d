"""What happened in a duel, as its page says it beside its badge: the players' side of it
(who won, who lost by a fault, whether a validation passed), not only its job's status.

A duel's job succeeds once the duel was played and stored, whatever the agents did in it:
a duel lost by a timeout, or a self-play that failed its revision's validation, is a
succeeded job. The duel's page, and the live view when the duel ends, show this instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.models import Duel, DuelSeat, DuelStatus, Match
from reads.replays import match_faults, result_text

#: Each fault as the way a match was lost: "lost 2 matches by a timeout".
FAULT_CAUSES = {
    "timeout": "a timeout",
    "illegal_action": "an illegal action",
    "malformed_message": "a malformed message",
    "oversized_message": "an oversized message",
    "crash": "a crash",
    "memory_exceeded": "running out of memory",
    "forfeit": "forfeit",
    "resigned": "resigning",
}


@dataclasses.dataclass(frozen=True)
class DuelOutcome:
    #: The badge: a word or two, and its look (the page's ``badge-<style>``: "good",
    #: "bad", "pending" or "muted", as ``web.templatetags.arena.STATUS_STYLES`` gives).
    label: str
    style: str
    #: The sentence beside the badge ("" when the badge says it all).
    text: str


def _cause(kinds: list[str]) -> str:
    causes = [FAULT_CAUSES.get(kind, kind.replace("_", " ")) for kind in kinds]
    if len(causes) == 1:
        return causes[0]
    return ", ".join(causes[:-1]) + " and " + causes[-1]


def fault_sentences(matches: Sequence[Match], labels: dict[int, str]) -> list[str]:
    """Who lost matches by a fault, and how: one sentence a player, player 1's first
    ("bobs-bot v1 lost 2 matches by a timeout"); a match lost to a fault of no player
    (``Duel.other_errors``) is the duel's, not a player's, and is not among them."""
    lost: dict[int, int] = {}
    kinds: dict[int, list[str]] = {}
    for match in matches:
        charged: set[int] = set()
        for note in match_faults(match, labels):
            if note.player not in labels:
                continue
            charged.add(note.player)
            if note.kind not in kinds.setdefault(note.player, []):
                kinds[note.player].append(note.kind)
        for player in charged:
            lost[player] = lost.get(player, 0) + 1
    return [
        f"{labels[player]} lost {count} match{'es' if count != 1 else ''} by "
        f"{_cause(kinds[player])}"
        for player, count in sorted(lost.items())
    ]


def _seat_fault_sentences(seats: Sequence[DuelSeat], labels: dict[int, str]) -> list[str]:
    """``fault_sentences`` from the seats' counts alone (a list of duels reads no match)."""
    return [
        f"{labels[seat.number]} lost {seat.errors} match{'es' if seat.errors != 1 else ''} "
        "by a fault"
        for seat in seats
        if seat.errors
    ]


def _validation_outcome(
    labels: dict[int, str], seats: Sequence[DuelSeat], matches: Sequence[Match] | None
) -> DuelOutcome:
    """A self-play passes its revision's validation when no copy made a fault
    (``referee.validation``); the first fault is why it failed."""
    if matches is None:
        if any(seat.errors for seat in seats):
            return DuelOutcome("Validation failed", "bad", "")
        return DuelOutcome("Validated", "good", "")
    notes = [note for match in matches for note in match_faults(match, labels)]
    if not notes:
        played = len(matches)
        return DuelOutcome(
            "Validated",
            "good",
            f"{played} self-play match{'es' if played != 1 else ''} without a fault.",
        )
    more = len(notes) - 1
    return DuelOutcome(
        "Validation failed",
        "bad",
        notes[0].text + (f" ({more} more fault{'s' if more != 1 else ''} below.)" if more else ""),
    )


def duel_outcome(
    duel: Duel,
    *,
    labels: dict[int, str],
    seats: Sequence[DuelSeat],
    matches: Sequence[Match] | None = None,
) -> DuelOutcome:
    """What the pages say of ``duel`` (``labels``: its players' names; ``seats``: its
    players, player 1's first; ``matches``: its matches in order, which name each fault,
    or None for a list of duels, which tells the faults from the seats' counts)."""
    if duel.status == DuelStatus.QUEUED:
        return DuelOutcome("Queued", "pending", "Waiting for a worker.")
    if duel.status == DuelStatus.RUNNING:
        return DuelOutcome("Running", "pending", "")
    if duel.status == DuelStatus.CANCELLED:
        return DuelOutcome("Cancelled", "muted", "Not played: it was cancelled.")
    if duel.status != DuelStatus.SUCCEEDED:
        if duel.is_validation:
            return DuelOutcome(
                "Failed", "bad", "The validation could not be played (not the agent's fault)."
            )
        return DuelOutcome("Failed", "bad", "Failed for a reason outside the agents: not scored.")
    if duel.is_validation:
        return _validation_outcome(labels, seats, matches)
    if matches is None:
        faults = _seat_fault_sentences(seats, labels)
    else:
        faults = fault_sentences(matches, labels)
    ranks = [seat.rank or 0 for seat in seats]
    result = result_text(duel.result, labels, ranks) or duel.get_result_display()
    unscored = duel.other_errors
    if unscored:
        faults.append(
            f"{unscored} match{'es' if unscored != 1 else ''} not scored: a fault of no player"
        )
    if not faults:
        return DuelOutcome("Played", "good", result)
    return DuelOutcome("Played", "bad", f"{result} — {'; '.join(faults)}.")
