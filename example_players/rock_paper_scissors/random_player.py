"""Rock-paper-scissors: a uniformly random throw (decorator style)."""

from __future__ import annotations

from typing import Any

from arena_sdk import Turn, agent, run


@agent
def random_throw(turn: Turn) -> Any:
    # turn.random is seeded from the match seed, so a duel replays identically.
    return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(random_throw)
