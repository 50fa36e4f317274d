import atexit
import sys

from arena_sdk import Agent


class Goodbye(Agent):
    def __init__(self):
        self.matches = 0
        atexit.register(self.save)

    def act(self, turn):
        return turn.legal_actions[0]

    def end(self, result):
        self.matches += 1

    def save(self):
        sys.stderr.write(f"saving what I learned after {self.matches} matches\n")
