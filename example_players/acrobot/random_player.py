"""Acrobot: a uniformly random torque (subclass style); the baseline to beat."""

from __future__ import annotations

from typing import Any

from arena_sdk import Agent, Turn, run


class RandomPlayer(Agent):
    name = "acrobot-random"

    def act(self, turn: Turn) -> Any:
        # turn.random is seeded from the episode's seed, so an evaluation replays identically.
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(RandomPlayer())
