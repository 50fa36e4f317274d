"""One CPU for a turn-based duel: its referee and its agents share it.

In a game played in turns one of them works at a time: the referee waits while an agent
thinks, and the agent waits for the referee's next request. Sharing one CPU then costs
them no computing time and saves every message a wake-up on another CPU, which on a
virtual machine costs tens of microseconds: on this project's 2-core machine a 200-match
Connect Four duel of random agents played its moves in 0.20 s on one CPU against 0.46 s
spread over two, and a JSON ping-pong between two processes made 41,000 round trips a
second against 11,000 (BENCHMARKS.md).

Each duel takes a CPU that no other duel on the machine holds (a lock file per CPU, as
the process sandbox takes its user ids, released with the process if it dies); when
every CPU is taken the duel is not pinned, and neither is anything on a machine (or in a
cpuset) of one CPU. An agent may move itself to other CPUs (any process may): that costs
it the shared CPU's speed-up, nothing else, and takes nothing it could not take before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from arena_sdk.cpus import pin_threads

CPU_LOCKS = Path(tempfile.gettempdir()) / "arena-sandbox-cpus"

#: The CPUs this process may run on, as it started (a thread started by a pinned one
#: inherits its pin: this is what to give back).
PROCESS_CPUS = frozenset(os.sched_getaffinity(0))
#: The CPUs this process's duels hold now.
_held: set[int] = set()


@contextlib.contextmanager
def away_from_duels() -> Iterator[None]:
    """Run the calling thread (and what it starts) off the CPUs this process's duels
    hold while the block runs: work in the background, such as starting an agent ahead,
    then takes nothing from a duel being played."""
    before = os.sched_getaffinity(0)
    elsewhere = PROCESS_CPUS - _held
    if not elsewhere or elsewhere == before:
        yield
        return
    os.sched_setaffinity(0, elsewhere)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


class CpuClaim:
    """A CPU claimed for one duel (``claim_cpu``): held from the claim, so that work in
    the background (``away_from_duels``) keeps off it even before anything runs on it."""

    def __init__(self, cpu: int, descriptor: int) -> None:
        self.cpu = cpu
        self._descriptor: int | None = descriptor
        #: The calling thread's CPUs before ``pin_here``, given back on release.
        self._before: set[int] | None = None

    def pin_here(self) -> None:
        """Run the calling thread on the CPU until the claim is released."""
        self._before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.cpu})

    def release(self) -> None:
        """Let the CPU go (from the thread that pinned itself, if one did). Idempotent."""
        if self._descriptor is None:
            return
        _held.discard(self.cpu)
        if self._before is not None:
            os.sched_setaffinity(0, self._before)
            self._before = None
        os.close(self._descriptor)
        self._descriptor = None


@contextlib.contextmanager
def claim_cpu(directory: Path = CPU_LOCKS) -> Iterator[CpuClaim | None]:
    """Claim a CPU that no other duel holds while the block runs; yields the claim, or
    None (none free, or only one: nothing to share)."""
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        yield None
        return
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    cpus = sorted(allowed)
    start = os.getpid() % len(cpus)  # workers of one host try different CPUs first
    claim: CpuClaim | None = None
    for offset in range(len(cpus)):
        cpu = cpus[(start + offset) % len(cpus)]
        descriptor = os.open(directory / f"{cpu}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            continue
        claim = CpuClaim(cpu, descriptor)
        break
    if claim is None:
        yield None
        return
    _held.add(claim.cpu)
    try:
        yield claim
    finally:
        claim.release()


@contextlib.contextmanager
def duel_cpu(directory: Path = CPU_LOCKS) -> Iterator[int | None]:
    """Claim a CPU that no other duel holds and run the calling thread on it while the
    block runs; yields the CPU, or None (none free, or only one: nothing pinned)."""
    with claim_cpu(directory) as claim:
        if claim is None:
            yield None
            return
        claim.pin_here()
        yield claim.cpu


def pin_process(pid: int, cpus: set[int]) -> bool:
    """Run every thread of process ``pid`` on ``cpus`` (what it forks later inherits
    that); False where it could not be done (it ended, or it may not be moved from here).
    The SDK's ``pin_threads``, which a fork server uses on its child too."""
    return pin_threads(pid, cpus)
