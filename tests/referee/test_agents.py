"""``referee.agents``: the threads that start and stop a duel's agents side by side."""

from __future__ import annotations

import os
import signal
import threading
import time

from referee.agents import side_by_side


def test_it_runs_the_calls_at_once_and_gives_each_outcome():
    # Each call waits for the other: one after the other, the first would wait in vain.
    both = threading.Barrier(2, timeout=60)

    def fails() -> int:
        both.wait()
        raise ValueError("no")

    first, second = side_by_side([lambda: both.wait() + 10, fails])

    assert first.result() in (10, 11)
    assert isinstance(second.exception(), ValueError)


def test_a_process_forked_after_duels_still_starts_its_agents():
    # Two threads kept idle in this process: a child forked now has neither, and a pool
    # that counted them as idle would leave its calls waiting for ever.
    side_by_side([lambda: time.sleep(0.2), lambda: time.sleep(0.2)])
    time.sleep(0.5)  # both back to idle (a loaded machine only makes them later to be)
    child = os.fork()
    if child == 0:
        signal.alarm(30)
        futures = side_by_side([lambda: 3, lambda: 4])
        os._exit(0 if [future.result() for future in futures] == [3, 4] else 1)
    _, status = os.waitpid(child, 0)

    assert os.waitstatus_to_exitcode(status) == 0


def test_the_first_call_runs_on_the_calling_thread_and_its_failure_is_its_outcome():
    # A warm agent is taken in microseconds: handing that to a thread and waiting to be
    # woken by its end cost more than the call.
    def fails() -> int:
        raise ValueError("no")

    here, there = side_by_side([threading.get_ident, threading.get_ident])
    failed, succeeded = side_by_side([fails, lambda: 4])

    assert here.result() == threading.get_ident() != there.result()
    assert isinstance(failed.exception(), ValueError)
    assert succeeded.result() == 4
