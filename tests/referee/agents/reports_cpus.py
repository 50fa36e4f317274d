"""Says on its log, at every move, which CPUs it may run on, then plays the first legal
action; where it may run as it loads, and at its exit, after the duel, where it may run
then (for the tests of a duel's shared CPU, ``sandboxes.cpus``).

With ``WAIT_FOR_ONE_CPU`` set, it first waits at its first move until it may run on one
CPU only (a minute at most): a sandbox that pins its agents in the background (the
docker sandbox) has done it by then."""

import atexit
import os
import time

from arena_sdk import Agent


def _cpus() -> str:
    return ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))


atexit.register(lambda: print("exiting on cpus " + _cpus(), flush=True))
print("loading on cpus " + _cpus(), flush=True)


class ReportsCpus(Agent):
    waiting = bool(os.environ.get("WAIT_FOR_ONE_CPU"))

    def act(self, turn):
        if self.waiting:
            self.waiting = False
            deadline = time.monotonic() + 60
            while len(os.sched_getaffinity(0)) > 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        print("cpus " + _cpus())
        return turn.legal_actions[0]
