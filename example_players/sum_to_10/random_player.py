"""Sum to 10: a uniformly random legal amount (subclass style)."""

from __future__ import annotations

from typing import Any

from arena_sdk import Agent, Turn, run


class RandomPlayer(Agent):
    name = "sum-random"

    def act(self, turn: Turn) -> Any:
        # turn.random is seeded from the match seed, so a duel replays identically.
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(RandomPlayer())
