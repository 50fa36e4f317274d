"""Logs as it plays: a line as each match starts, two while choosing each move (the
second left without a newline until the answer) and one as each match ends."""

import sys

from arena_sdk import Agent


class LogsEachMove(Agent):
    def start(self, match):
        print(f"match {match.index} starts")

    def act(self, turn):
        print(f"match {turn.match.index} step {turn.step}: thinking <b>&amp;</b>")
        sys.stderr.write(f"chose {turn.legal_actions[0]}")
        return turn.legal_actions[0]

    def end(self, result):
        print(f"match {result.match.index} ends: {result.outcome}")
