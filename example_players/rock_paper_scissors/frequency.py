"""Rock-paper-scissors: beat the opponent's most frequent throw (subclass style).

Counts the opponent's throws over the whole duel, not just this match, since one
process serves every match. Random until it has seen something, and random among
ties, so a copy of itself does not draw forever.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from arena_sdk import Agent, Match, Result, Turn, run

BEATS = {"rock": "paper", "paper": "scissors", "scissors": "rock"}


def opponent_throws(observation: dict) -> Counter[str]:
    return Counter(theirs for _mine, theirs in observation.get("history") or [])


class FrequencyPlayer(Agent):
    name = "rps-frequency"

    def __init__(self) -> None:
        self.earlier_matches: Counter[str] = Counter()
        self.this_match: Counter[str] = Counter()

    def start(self, match: Match) -> None:
        self.this_match = Counter()

    def act(self, turn: Turn) -> Any:
        self.this_match = opponent_throws(turn.observation)
        seen = self.earlier_matches + self.this_match
        if not seen:
            return turn.random.choice(turn.legal_actions)
        most = max(seen.values())
        favourites = sorted(throw for throw, count in seen.items() if count == most)
        counter = BEATS.get(turn.random.choice(favourites))
        if counter in turn.legal_actions:
            return counter
        return turn.random.choice(turn.legal_actions)

    def end(self, result: Result) -> None:
        # The final observation also holds the last round, which no act() saw.
        if result.observation:
            self.this_match = opponent_throws(result.observation)
        self.earlier_matches += self.this_match
        self.this_match = Counter()


if __name__ == "__main__":
    run(FrequencyPlayer())
