"""At its first move, waits until it may run on one CPU only (its duel's, once the sandbox
has pinned it; a minute at most), then says on its log at every move which CPUs it may run
on and plays the first legal action; and at its exit where it may run then (for the tests
of a duel's shared CPU in a sandbox that pins its agents in the background)."""

import atexit
import os
import time

from arena_sdk import Agent


def _cpus() -> str:
    return ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))


atexit.register(lambda: print("exiting on cpus " + _cpus(), flush=True))


class WaitsForOneCpu(Agent):
    waited = False

    def act(self, turn):
        if not self.waited:
            self.waited = True
            deadline = time.monotonic() + 60
            while len(os.sched_getaffinity(0)) > 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        print("cpus " + _cpus())
        return turn.legal_actions[0]
