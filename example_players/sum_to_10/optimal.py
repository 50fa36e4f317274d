"""Sum to 10: the winning strategy (decorator style).

With moves of 1 to 3, a player who leaves the opponent a multiple of 4 to go wins:
whatever they add, the reply brings the remainder back to a multiple of 4, and
finally to 0. So aim for totals 2, 6 and 10. From a losing position, add 1 and hope
the opponent slips. Other targets and move sizes (``target``, ``max_add`` in the
configuration) follow the same rule with multiples of max_add + 1.
"""

from __future__ import annotations

from typing import Any

from arena_sdk import Turn, agent, run

DEFAULT_MAX_ADD = 3


@agent
def optimal(turn: Turn) -> Any:
    observation = turn.observation
    max_add = turn.match.configuration.get("max_add", DEFAULT_MAX_ADD)
    remaining = observation.get("target", 10) - observation["total"]
    winning_move = remaining % (max_add + 1)
    if winning_move in turn.legal_actions:
        return winning_move
    return min(turn.legal_actions)


if __name__ == "__main__":
    run(optimal)
