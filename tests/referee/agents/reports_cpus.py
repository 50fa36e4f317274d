"""Says on its log, at every move, which CPUs it may run on, then plays the first legal
action (for the tests of a duel's shared CPU, ``sandboxes.cpus``)."""

import os

from arena_sdk import Agent


class ReportsCpus(Agent):
    def act(self, turn):
        print("cpus " + ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0))))
        return turn.legal_actions[0]
