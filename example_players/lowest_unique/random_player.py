"""Lowest unique number: a uniformly random number (decorator style)."""

from __future__ import annotations

from typing import Any

from arena_sdk import Turn, agent, run


@agent
def random_number(turn: Turn) -> Any:
    # turn.random is seeded from the match seed and the seat, so a duel replays identically.
    return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(random_number)
