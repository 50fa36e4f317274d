"""Connect Four: a uniformly random legal column (decorator style)."""

from __future__ import annotations

from arena_sdk import Turn, agent, run


@agent
def random_column(turn: Turn) -> int:
    # turn.random is seeded from the match seed, so a duel replays identically.
    return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(random_column)
