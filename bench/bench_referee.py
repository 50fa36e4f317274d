"""How fast the referee plays Connect Four between two random agents, against baselines.

    python -m bench.bench_referee            # full run, about 20 s
    python -m bench.bench_referee --quick    # smoke run, a few seconds
    python -m bench.bench_referee --json figures.json

Four rates of moves per second, each the median of several repetitions:

in-process
    ``ConnectFour.step`` with random legal actions in this process: no agents, no
    pipes. The ceiling the game logic allows.
pipe ping-pong
    This process and one child Python process exchanging one line each way per
    move over pipes, the request a pre-encoded line as long as a real ``act``
    request. The latency floor of one move between two Python processes.
JSON ping-pong
    The same, but each side does the protocol's JSON work: this process encodes a
    real ``act`` request and decodes the reply, the child decodes the request and
    encodes an ``action`` reply. The floor of any referee and agent that speak
    the protocol with CPython's ``json``; what lies above it is the referee's and
    the SDK's own work (not part of the issue's targets: shown to tell the two apart).
referee
    ``run_duel`` with the ``process`` sandbox and two random agents written with the
    SDK. Moves are counted from the match records and timed by the sum of the
    match durations, so agent start-up is left out; the wall time of the whole duel,
    start-up included, is reported on its own.
referee, unconfined
    The same in the process sandbox with its confinement turned off (no bubblewrap: the
    agents see the host's files, as before issue 37), in the same rounds: what the
    confinement costs a move (nothing is expected: it acts at start-up only).

And the start-up of one agent (from ``start`` until its answer to the handshake) in the
process sandbox confined, unconfined, and confined with the warm pool (the copy started
ahead for the next duel), each the median of several starts.

Repetitions are interleaved (one of each per round) so that a slow patch of the
machine hits every measurement alike. No CPU is pinned: the referee and its agents
share the machine's cores as they do in production, and so do the ping-pong pairs,
whose children run the agents' interpreter (``ProcessSandbox.python``).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.support import check_clean, machine, machine_summary, read_reply

SDK_PATH = Path(__file__).resolve().parent.parent / "sdk"
if str(SDK_PATH) not in sys.path:  # running from a checkout without installing the SDK
    sys.path.insert(0, str(SDK_PATH))

from arena_sdk import protocol  # noqa: E402

from environments.registry import make_environment  # noqa: E402
from referee.channel import Channel  # noqa: E402
from referee.duel import run_duel  # noqa: E402
from sandboxes.base import AgentSource, SandboxLimits  # noqa: E402
from sandboxes.process import ProcessSandbox  # noqa: E402

ENVIRONMENT = "connect_four"
SEED = 20261122

RANDOM_AGENT = '''\
"""Connect Four: a uniformly random legal column."""

from arena_sdk import Agent


class RandomAgent(Agent):
    def act(self, turn):
        return turn.random.choice(turn.legal_actions)
'''

# The child of the ping-pong baseline: the least a Python agent can do per move,
# on the same streams the SDK uses (buffered reads, unbuffered writes).
PING_PONG_CHILD = """\
import os, sys
incoming = os.fdopen(0, "rb", buffering=1 << 16)
outgoing = os.fdopen(1, "wb", buffering=0)
reply = sys.argv[1].encode() + b"\\n"
for line in incoming:
    outgoing.write(reply)
"""

# The child of the JSON ping-pong: an agent reduced to the protocol's JSON work
# (the SDK's encoder settings), choosing the first legal action.
JSON_PING_PONG_CHILD = """\
import json, os
incoming = os.fdopen(0, "rb", buffering=1 << 16)
outgoing = os.fdopen(1, "wb", buffering=0)
encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
for line in incoming:
    request = json.loads(line)
    reply = {"type": "action", "id": request["id"], "action": request["legal_actions"][0]}
    outgoing.write(encoder.encode(reply).encode() + b"\\n")
"""


#: The issue's targets: the referee at 80% or more of the bare pipe ping-pong rate,
#: and a 100-match duel of two random players in under a second.
TARGET_REFEREE_OVER_PING_PONG = 0.8
TARGET_DUEL_SECONDS = 1.0
TARGET_DUEL_MATCHES = 100


@dataclasses.dataclass(frozen=True)
class Plan:
    rounds: int
    in_process_moves: int
    ping_pong_moves: int
    duel_matches: int
    #: Agent starts timed per round, in each way of starting one.
    starts: int


FULL = Plan(rounds=7, in_process_moves=200_000, ping_pong_moves=20_000, duel_matches=100, starts=5)
QUICK = Plan(rounds=1, in_process_moves=5_000, ping_pong_moves=500, duel_matches=10, starts=2)


@dataclasses.dataclass
class DuelRun:
    moves: int
    match_seconds: float
    wall_seconds: float

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.match_seconds


def bench_in_process(moves: int, seed: int) -> float:
    """Moves per second of the bare game: random legal actions, validated by ``step``."""
    environment = make_environment(ENVIRONMENT)
    rng = random.Random(seed)
    played = 0
    match_seed = seed
    started = time.perf_counter()
    while played < moves:
        environment.reset(match_seed)
        match_seed += 1
        while not environment.is_terminal():
            [player] = environment.to_move()
            environment.step({player: rng.choice(environment.legal_actions(player))})
            played += 1
    return played / (time.perf_counter() - started)


def typical_request() -> dict[str, Any]:
    """A mid-game ``act`` request, as the referee builds it."""
    environment = make_environment(ENVIRONMENT)
    environment.reset(SEED)
    rng = random.Random(SEED)
    # A random Connect Four match lasts about 21 moves: take the state at move 10.
    for _ in range(10):
        [player] = environment.to_move()
        environment.step({player: rng.choice(environment.legal_actions(player))})
    [player] = environment.to_move()
    return {
        "type": protocol.ACT,
        "id": 1234,
        "match": 42,
        "step": 10,
        "observation": environment.observation(player),
        "legal_actions": environment.legal_actions(player),
        "time_left": {"move": 1.0, "bank": 10.0},
    }


TYPICAL_REPLY = {"type": protocol.ACTION, "id": 1234, "action": 3}


#: Plays ``count`` round trips on (request fd, reply fd).
Exchange = Callable[[int, int, int], None]


def _ping_pong(python: str, child_source: str, moves: int, exchange: Exchange) -> float:
    """Round trips per second with a child running ``child_source``, start-up excluded."""
    reply = protocol.encode(TYPICAL_REPLY).decode().rstrip("\n")
    child = subprocess.Popen(
        [python, "-s", "-B", "-c", child_source, reply],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    request_fd, reply_fd = child.stdin.fileno(), child.stdout.fileno()
    try:
        exchange(request_fd, reply_fd, min(500, moves))  # the child's start-up, warm caches
        started = time.perf_counter()
        exchange(request_fd, reply_fd, moves)
        return moves / (time.perf_counter() - started)
    finally:
        child.stdin.close()
        child.wait(timeout=5)
        child.stdout.close()


def bench_ping_pong(python: str, moves: int) -> float:
    """One pre-encoded request line out, one reply line back, per move."""
    request = protocol.encode(typical_request())

    def exchange(request_fd: int, reply_fd: int, count: int) -> None:
        for _ in range(count):
            os.write(request_fd, request)
            read_reply(reply_fd)

    return _ping_pong(python, PING_PONG_CHILD, moves, exchange)


def bench_json_ping_pong(python: str, moves: int) -> float:
    """The ping-pong with the protocol's JSON encoding and decoding on both sides."""
    request = typical_request()

    def exchange(request_fd: int, reply_fd: int, count: int) -> None:
        for _ in range(count):
            request["id"] += 1
            os.write(request_fd, protocol.encode(request))
            protocol.decode(read_reply(reply_fd))

    return _ping_pong(python, JSON_PING_PONG_CHILD, moves, exchange)


def bench_duel(agent: AgentSource, backend: ProcessSandbox, matches: int, seed: int) -> DuelRun:
    started = time.perf_counter()
    result = run_duel(ENVIRONMENT, (agent, agent), backend=backend, matches=matches, seed=seed)
    wall = time.perf_counter() - started
    check_clean(result)
    return DuelRun(
        moves=sum(len(match.actions) for match in result.matches),
        match_seconds=sum(match.duration for match in result.matches),
        wall_seconds=wall,
    )


def bench_startups(agent: AgentSource, backend: ProcessSandbox, starts: int) -> list[float]:
    """Seconds from ``start`` until the agent has answered the handshake, for each of
    ``starts`` agents (with a warm pool: each the copy started ahead, once ready)."""
    seconds = []
    for _ in range(starts):
        if backend.pool is not None:
            backend.pool.wait_until_ready(60)
        started = time.perf_counter()
        running = backend.start(agent, limits=SandboxLimits(), label="bench-start")
        try:
            channel = Channel(running, max_message_bytes=1 << 16)
            deadline = time.monotonic() + 60
            channel.send({"type": "hello", "protocol": protocol.PROTOCOL_VERSION}, deadline)
            if channel.receive(deadline).get("type") != "ready":
                raise SystemExit("bench_referee: the agent did not answer the handshake")
            seconds.append(time.perf_counter() - started)
        finally:
            running.close()
    return seconds


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    backend = ProcessSandbox()
    # The same sandbox as before issue 37, in the same rounds: what confinement costs.
    unconfined = ProcessSandbox(confine=False)
    warm = ProcessSandbox(pool_size=1)
    in_process: list[float] = []
    ping_pong: list[float] = []
    json_ping_pong: list[float] = []
    duels: list[DuelRun] = []
    unconfined_duels: list[DuelRun] = []
    startups: dict[str, list[float]] = {"confined": [], "unconfined": [], "confined_warm": []}
    with tempfile.TemporaryDirectory(prefix="bench-referee-") as folder:
        agent_path = Path(folder) / "random_agent.py"
        agent_path.write_text(RANDOM_AGENT)
        agent = AgentSource.from_path(agent_path)
        try:
            # The first duel ever run also copies the SDK for the sandbox: not measured.
            for sandbox in (backend, unconfined):
                bench_duel(agent, sandbox, matches=2, seed=SEED)
            # The warm pool holds one agent: the one the next timed start takes.
            bench_startups(agent, warm, 1)
            for round_index in range(plan.rounds):
                seed = SEED + round_index
                in_process.append(bench_in_process(plan.in_process_moves, seed))
                # The children run the agents' interpreter, so both sides compare alike.
                ping_pong.append(bench_ping_pong(backend.python, plan.ping_pong_moves))
                json_ping_pong.append(bench_json_ping_pong(backend.python, plan.ping_pong_moves))
                duels.append(bench_duel(agent, backend, plan.duel_matches, seed))
                unconfined_duels.append(bench_duel(agent, unconfined, plan.duel_matches, seed))
                for name, sandbox in (
                    ("confined", backend),
                    ("unconfined", unconfined),
                    ("confined_warm", warm),
                ):
                    startups[name] += bench_startups(agent, sandbox, plan.starts)
                report(
                    f"round {round_index + 1}/{plan.rounds}: in-process {in_process[-1]:,.0f}, "
                    f"ping-pong {ping_pong[-1]:,.0f}, JSON ping-pong {json_ping_pong[-1]:,.0f}, "
                    f"referee {duels[-1].moves_per_second:,.0f} "
                    f"(unconfined {unconfined_duels[-1].moves_per_second:,.0f}) moves/s; "
                    f"duel {duels[-1].wall_seconds:.3f} s; start-up "
                    + ", ".join(
                        f"{name} {statistics.median(values[-plan.starts :]) * 1000:.1f} ms"
                        for name, values in startups.items()
                    )
                )
        finally:
            for sandbox in (backend, unconfined, warm):
                sandbox.close()

    referee = [duel.moves_per_second for duel in duels]
    referee_unconfined = [duel.moves_per_second for duel in unconfined_duels]
    in_process_rate = statistics.median(in_process)
    ping_pong_rate = statistics.median(ping_pong)
    json_ping_pong_rate = statistics.median(json_ping_pong)
    referee_rate = statistics.median(referee)
    duel_wall = statistics.median(duel.wall_seconds for duel in duels)
    return {
        "date": datetime.date.today().isoformat(),
        "machine": {**machine(), "usable_cores": len(os.sched_getaffinity(0))},
        "sandbox": {
            "backend": backend.name,
            "confined": backend.confined,
            "isolate_users": backend.isolate_users,
            "agent_python": backend.python,
        },
        "plan": dataclasses.asdict(plan),
        "request_bytes": len(protocol.encode(typical_request())),
        "reply_bytes": len(protocol.encode(TYPICAL_REPLY)),
        "in_process_moves_per_second": in_process_rate,
        "ping_pong_moves_per_second": ping_pong_rate,
        "json_ping_pong_moves_per_second": json_ping_pong_rate,
        "referee_moves_per_second": referee_rate,
        "referee_over_ping_pong": referee_rate / ping_pong_rate,
        "referee_over_json_ping_pong": referee_rate / json_ping_pong_rate,
        "referee_over_in_process": referee_rate / in_process_rate,
        "referee_unconfined_moves_per_second": statistics.median(referee_unconfined),
        "confined_over_unconfined": statistics.median(
            [a / b for a, b in zip(referee, referee_unconfined, strict=True)]
        ),
        "startup_seconds": {
            name: {"median": statistics.median(values), "low": min(values), "high": max(values)}
            for name, values in startups.items()
        },
        "duel_matches": plan.duel_matches,
        "duel_moves": statistics.median(duel.moves for duel in duels),
        "duel_wall_seconds": duel_wall,
        "duel_startup_seconds": statistics.median(
            duel.wall_seconds - duel.match_seconds for duel in duels
        ),
        "targets": {
            "referee_over_ping_pong": TARGET_REFEREE_OVER_PING_PONG,
            "referee_over_ping_pong_met": referee_rate / ping_pong_rate
            >= TARGET_REFEREE_OVER_PING_PONG,
            "duel_100_seconds": TARGET_DUEL_SECONDS,
            # Only a full run plays 100-match duels; a quick run cannot tell.
            "duel_100_seconds_met": duel_wall < TARGET_DUEL_SECONDS
            if plan.duel_matches == TARGET_DUEL_MATCHES
            else None,
        },
        "samples": {
            "in_process": in_process,
            "ping_pong": ping_pong,
            "json_ping_pong": json_ping_pong,
            "referee": referee,
            "referee_unconfined": referee_unconfined,
            "duel_wall_seconds": [duel.wall_seconds for duel in duels],
            "startup_seconds": startups,
        },
    }


def _verdict(met: bool | None) -> str:
    return {True: "met", False: "NOT met", None: "not measured (quick run)"}[met]


def table(figures: dict[str, Any]) -> str:
    described = figures["machine"]
    sandbox = figures["sandbox"]
    targets = figures["targets"]
    rounds = figures["plan"]["rounds"]
    rows = [
        ("in-process (game logic only)", figures["in_process_moves_per_second"]),
        ("pipe ping-pong (2 Python processes)", figures["ping_pong_moves_per_second"]),
        ("JSON ping-pong (protocol floor)", figures["json_ping_pong_moves_per_second"]),
        ("referee, process sandbox", figures["referee_moves_per_second"]),
        ("referee, process, unconfined", figures["referee_unconfined_moves_per_second"]),
    ]
    lines = [
        f"Connect Four, random vs random — {figures['date']}, median of {rounds} round(s)",
        f"machine: {machine_summary(described)} ({described['usable_cores']} cores usable)",
        f"sandbox: {sandbox['backend']}, confined (bubblewrap): {sandbox['confined']}, "
        f"agents under their own uid: {sandbox['isolate_users']}, "
        f"agent Python {sandbox['agent_python']}; act request {figures['request_bytes']} B, "
        f"reply {figures['reply_bytes']} B",
        "",
        f"{'measurement':<38} {'moves/s':>10} {'µs/move':>9}",
    ]
    lines += [f"{name:<38} {rate:>10,.0f} {1e6 / rate:>9.1f}" for name, rate in rows]
    lines += [
        "",
        f"referee / ping-pong        {figures['referee_over_ping_pong']:7.1%}   "
        f"target >= {targets['referee_over_ping_pong']:.0%}: "
        f"{_verdict(targets['referee_over_ping_pong_met'])}",
        f"referee / JSON ping-pong   {figures['referee_over_json_ping_pong']:7.1%}",
        f"referee / in-process       {figures['referee_over_in_process']:7.2%}",
        f"{figures['duel_matches']}-match duel, wall time with start-up: "
        f"{figures['duel_wall_seconds']:.3f} s "
        f"(start-up and shutdown {figures['duel_startup_seconds']:.3f} s, "
        f"{figures['duel_moves']:.0f} moves)",
        f"  target {TARGET_DUEL_MATCHES} matches < {targets['duel_100_seconds']:g} s: "
        f"{_verdict(targets['duel_100_seconds_met'])}",
        f"referee confined / unconfined {figures['confined_over_unconfined']:7.1%}",
        "",
        f"{'agent start-up, until its handshake':<38} {'ms':>10} {'range':>17}",
    ]
    names = {
        "confined": "confined (bubblewrap)",
        "unconfined": "unconfined (as before)",
        "confined_warm": "confined, warm pool",
    }
    for name, spread in figures["startup_seconds"].items():
        lines.append(
            f"{names[name]:<38} {spread['median'] * 1000:>10.1f} "
            f"{spread['low'] * 1000:>8.1f}-{spread['high'] * 1000:.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="a fast smoke run (one round)")


if __name__ == "__main__":
    sys.exit(main())
