"""Any OpenSpiel game (openspiel:chess, openspiel:leduc_poker, ...): a uniformly random
legal action (subclass style). Legal actions are objects {"id": ..., "text": ...}; the
chosen one is sent back exactly as listed."""

from __future__ import annotations

from typing import Any

from arena_sdk import Agent, Turn, run


class RandomPlayer(Agent):
    name = "openspiel-random"

    def act(self, turn: Turn) -> Any:
        # turn.random is seeded from the match seed, so a duel replays identically.
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(RandomPlayer())
