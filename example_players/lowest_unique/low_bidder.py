"""Lowest unique number: picks the number that would have won the previous round against
the others' picks, else a random one (``Agent`` subclass)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from arena_sdk import Agent, Turn, run


class LowBidder(Agent):
    name = "lowest-unique-low-bidder"

    def act(self, turn: Turn) -> Any:
        history = turn.observation["history"]
        if history:
            me = turn.observation["seat"]
            others = Counter(pick for seat, pick in enumerate(history[-1]) if seat != me)
            for number in turn.legal_actions:
                if others[number] == 1:
                    break  # someone else's unique number is lower than any free one
                if others[number] == 0:
                    return number
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(LowBidder())
