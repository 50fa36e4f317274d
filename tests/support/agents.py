"""Agents the tests upload as source text."""

from __future__ import annotations

#: A sum_to_10 agent that thinks 50 ms a move: a duel lasts long enough to watch, or to
#: kill a worker in the middle of (60 matches: about 15 s).
SLOW_AGENT = """
import time

from arena_sdk import Agent, run


class Slow(Agent):
    def act(self, turn):
        time.sleep(0.05)
        return turn.random.choice(turn.legal_actions)


if __name__ == "__main__":
    run(Slow())
"""

#: An agent that needs ``six`` (``requirements.txt``): a build must install it.
USES_SIX = b"""\
import sys

import six
from arena_sdk import Agent


class UsesSix(Agent):
    def start(self, match):
        print("six", six.__version__, "from", six.__file__, file=sys.stderr)

    def act(self, turn):
        return turn.random.choice(turn.legal_actions)
"""
