"""``python -m arena_sdk path/to/main.py``: find the agent in a file and serve it."""

from __future__ import annotations

import sys
from pathlib import Path

from arena_sdk.adapters import AgentNotFound, load_agent
from arena_sdk.serve import protocol_streams, run


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m arena_sdk path/to/agent.py", file=sys.stderr)
        return 2
    # Take the protocol streams first: the agent's module may print while it loads.
    streams = protocol_streams()
    try:
        agent = load_agent(Path(argv[0]))
    except AgentNotFound as error:
        print(f"arena: {argv[0]}: {error}", file=sys.stderr)
        return 3
    run(agent, streams)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
