"""Says on its log, at every move, which CPUs it may run on, then plays the first legal
action; and at its exit, after the duel, where it may run then (for the tests of a
duel's shared CPU, ``sandboxes.cpus``)."""

import atexit
import os

from arena_sdk import Agent


def _cpus() -> str:
    return ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))


atexit.register(lambda: print("exiting on cpus " + _cpus(), flush=True))


class ReportsCpus(Agent):
    def act(self, turn):
        print("cpus " + _cpus())
        return turn.legal_actions[0]
