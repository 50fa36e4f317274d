"""Arena agent SDK: write an agent, then serve it with ``run`` (or ``python -m arena_sdk``).

    from arena_sdk import Agent, run

    class Random(Agent):
        def act(self, turn):
            return turn.random.choice(turn.legal_actions)

    if __name__ == "__main__":
        run(Random())

The package has no dependencies and is installed in every sandbox image.
"""

from arena_sdk.adapters import (
    AgentNotFound,
    KaggleAgent,
    PlayerAgent,
    Struct,
    find_agent,
    load_agent,
)
from arena_sdk.agent import Agent, FunctionAgent, Match, OnlineError, Result, Turn, agent
from arena_sdk.protocol import PROTOCOL_VERSION
from arena_sdk.serve import run, serve

__version__ = "0.1.0"

__all__ = [
    "PROTOCOL_VERSION",
    "Agent",
    "AgentNotFound",
    "FunctionAgent",
    "KaggleAgent",
    "Match",
    "OnlineError",
    "PlayerAgent",
    "Result",
    "Struct",
    "Turn",
    "agent",
    "find_agent",
    "load_agent",
    "run",
    "serve",
]
