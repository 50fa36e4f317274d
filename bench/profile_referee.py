"""Where a move's time goes: the referee and the agent SDK, profiled one at a time.

    python -m bench.profile_referee            # both sides
    python -m bench.profile_referee agent      # the SDK serve loop only
    python -m bench.profile_referee referee    # run_duel only

``agent`` runs ``arena_sdk.serve`` in this process on a recorded stream of real
requests (no pipes, no referee): the agent's own cost per ``act``, then a cProfile
of it. ``referee`` plays a long duel of random agents with the ``process`` sandbox
and splits CPU time between the referee (getrusage, its whole duel) and its agents
(their ``/proc`` stat from the second match's start to the last's: they are not
children that getrusage counts), then shows a cProfile of the referee. In that
profile ``posix.write`` and ``poll`` also hold the time the referee waited for an
agent, not only its own work.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SDK_PATH = Path(__file__).resolve().parent.parent / "sdk"
if str(SDK_PATH) not in sys.path:  # running from a checkout without installing the SDK
    sys.path.insert(0, str(SDK_PATH))

from arena_sdk import Agent, Turn, protocol, serve  # noqa: E402

from bench.bench_referee import ENVIRONMENT, RANDOM_AGENT, SEED  # noqa: E402
from bench.support import process_cpu_seconds  # noqa: E402
from environments.registry import make_environment  # noqa: E402
from referee.duel import run_duel  # noqa: E402
from sandboxes.base import AgentSource  # noqa: E402
from sandboxes.process import ProcessSandbox  # noqa: E402

TOP = 18


class RandomAgent(Agent):
    def act(self, turn: Turn) -> int:
        return turn.random.choice(turn.legal_actions)


def recorded_stream(matches: int) -> tuple[bytes, int]:
    """What the referee sends one agent over ``matches`` matches, and the number of acts."""
    environment = make_environment(ENVIRONMENT)
    rng = random.Random(SEED)
    hello = {
        "type": protocol.HELLO,
        "protocol": protocol.PROTOCOL_VERSION,
        "environment": ENVIRONMENT,
        "player_count": 2,
        "configuration": environment.configuration,
        "limits": {},
    }
    lines = [protocol.encode(hello)]
    acts = 0
    for match in range(matches):
        environment.reset(match)
        lines.append(
            protocol.encode({"type": protocol.START, "match": match, "player": 0, "seed": match})
        )
        step = 0
        while not environment.is_terminal():
            [player] = environment.to_move()
            acts += 1
            request = {
                "type": protocol.ACT,
                "id": acts,
                "match": match,
                "step": step,
                "observation": environment.observation(player),
                "legal_actions": environment.legal_actions(player),
                "time_left": {"move": 1.0, "bank": 10.0},
            }
            lines.append(protocol.encode(request))
            environment.step({player: rng.choice(environment.legal_actions(player))})
            step += 1
        lines.append(
            protocol.encode(
                {
                    "type": protocol.END,
                    "match": match,
                    "result": "draw",
                    "scores": [0.5, 0.5],
                    "reason": "",
                    "observation": environment.observation(0),
                }
            )
        )
    return b"".join(lines), acts


def profile_agent(matches: int) -> None:
    stream, acts = recorded_stream(matches)

    def play() -> None:
        serve(RandomAgent(), io.BytesIO(stream), io.BytesIO())

    play()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        play()
        best = min(best, time.perf_counter() - started)
    print(
        f"agent side: SDK serve loop, in-process, {acts} acts: "
        f"{best / acts * 1e6:.1f} µs per act (best of 5; start/end included)"
    )
    profiler = cProfile.Profile()
    profiler.runcall(play)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(TOP)


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class AgentClock:
    """The agents' CPU, read from ``/proc`` at two matches' starts: they are not this
    process's children to be counted by ``getrusage`` (under bubblewrap the sandbox's
    own init reaps them, and their end takes it down with them)."""

    def __init__(self, backend: ProcessSandbox, first: int, last: int) -> None:
        from tests.support.sandboxes import record_starts

        self.first, self.last = first, last
        self.agents = record_starts(backend)
        self.readings: dict[int, float] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] == "match" and event["match"] in (self.first, self.last):
            pids = [agent.agent_pid() for agent in self.agents[-2:]]
            self.readings[event["match"]] = sum(process_cpu_seconds(pid) for pid in pids)

    def seconds(self) -> float:
        return self.readings[self.last] - self.readings[self.first]


def profile_referee(matches: int) -> None:
    if matches < 3:
        raise SystemExit("profile_referee: --matches must be 3 or more")
    backend = ProcessSandbox()
    with tempfile.TemporaryDirectory(prefix="profile-referee-") as folder:
        path = Path(folder) / "random_agent.py"
        path.write_text(RANDOM_AGENT)
        agent = AgentSource.from_path(path)
        # From the second match's start to the last's: the agents' start-up and end are
        # left out of both sides.
        clock = AgentClock(backend, 1, matches - 1)
        own = _cpu(resource.RUSAGE_SELF)
        result = run_duel(
            ENVIRONMENT,
            (agent, agent),
            backend=backend,
            matches=matches,
            seed=SEED,
            progress=clock,
        )
        own = _cpu(resource.RUSAGE_SELF) - own
        moves = sum(len(match.actions) for match in result.matches)
        measured = result.matches[1 : matches - 1]
        between = sum(len(match.actions) for match in measured)
        seconds = sum(match.duration for match in result.matches)
        print(
            f"referee side: {moves} moves in {seconds:.2f} s of matches, "
            f"{seconds / moves * 1e6:.1f} µs per move"
        )
        print(
            f"  CPU per move: referee {own / moves * 1e6:.1f} µs (its whole duel, start and "
            f"end included), both agents together {clock.seconds() / between * 1e6:.1f} µs "
            f"(matches 2 to {matches - 1}; the kernel counts in ticks of "
            f"{1e3 / os.sysconf('SC_CLK_TCK'):.0f} ms)"
        )
        profiler = cProfile.Profile()
        profiler.runcall(
            run_duel, ENVIRONMENT, (agent, agent), backend=backend, matches=matches, seed=SEED
        )
    pstats.Stats(profiler).sort_stats("tottime").print_stats(TOP)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile_referee",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("side", nargs="?", choices=("agent", "referee", "both"), default="both")
    parser.add_argument("--matches", type=int, default=500)
    arguments = parser.parse_args(argv)
    if arguments.side in ("agent", "both"):
        profile_agent(arguments.matches)
    if arguments.side in ("referee", "both"):
        profile_referee(arguments.matches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
