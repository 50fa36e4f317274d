"""Moves per second with agents in containers, against agents in host processes.

    python -m bench.bench_docker            # full run, about a minute
    python -m bench.bench_docker --quick    # smoke run
    python -m bench.bench_docker --json figures.json

Needs a Docker engine and the base image (``manage.py build_base_image``). Rows, each
the median of several rounds, one of each per round, each duel once the background work
of the one before (removals, the pool's next containers) is done:

referee, process sandbox
    ``run_duel`` of two random Connect Four agents (written with the SDK), each a
    long-lived host process; moves counted from the match records and timed by the
    sum of match durations, so start-up is left out.
referee, docker sandbox
    The same duel with each agent in its own container, moves over the pipes that
    ``arena_sdk.bridge`` received. Start-up (two containers) is reported apart.
200-match duel, wall time
    The whole ``run_duel`` call, start-up and shutdown included: process sandbox;
    docker sandbox starting both containers for the duel (cold); docker sandbox with a
    warm pool (``pool_size=4``), as in a worker that played this agent before: the
    containers the previous round's duel had started ahead are ready. Ratios against
    the process sandbox's duel of the same round.
ping-pong rows
    One pre-encoded ``act``-sized line out and one reply line back per move, with a
    minimal Python agent: over pipes to a host process (process sandbox), over the
    bridge's pipes to a container (docker sandbox), and over the Docker
    engine's attach streams to a container (stdin and multiplexed stdout through
    the daemon), the design the docker sandbox avoids. The first two with the bench
    and the agent on one CPU, as a duel's referee and agents play (``sandboxes.cpus``);
    the attach row's bytes pass through the engine's daemon, which nothing pins.

The targets (issue 41): the docker sandbox's referee rate at 90% or more of the process
sandbox's; the 200-match duel in the docker sandbox in at most 1.5 times the process
sandbox's time with cold containers, and at most its time (x1.0) with the warm pool.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_referee import (
    RANDOM_AGENT,
    SEED,
    TYPICAL_REPLY,
    DuelRun,
    bench_duel,
    typical_request,
)
from bench.cli import run_bench
from bench.support import machine, machine_summary, read_reply
from sandboxes import docker_engine, docker_images
from sandboxes.base import AgentSource, SandboxedAgent, SandboxLimits
from sandboxes.cpus import duel_cpu
from sandboxes.docker import DockerAgent, DockerSandbox
from sandboxes.process import ProcessSandbox

from arena_sdk import protocol  # isort: skip (bench_referee puts the SDK on the path)

TARGET_DOCKER_OVER_PROCESS = 0.9
#: The most a docker duel's wall may be of the process sandbox's: cold, warm.
TARGET_DUEL_WALL_RATIO = {"docker": 1.5, "docker_warm": 1.0}
POOL_SIZE = 4

# The least a Python agent can do per move, on the streams the SDK uses.
PING_PONG_AGENT = """\
#!/usr/bin/env python3
import os
incoming = os.fdopen(0, "rb", buffering=1 << 16)
outgoing = os.fdopen(1, "wb", buffering=0)
reply = os.environ["PING_PONG_REPLY"].encode() + b"\\n"
for line in incoming:
    outgoing.write(reply)
"""


@dataclasses.dataclass(frozen=True)
class Plan:
    rounds: int
    duel_matches: int
    ping_pong_moves: int


FULL = Plan(rounds=5, duel_matches=200, ping_pong_moves=5_000)
QUICK = Plan(rounds=1, duel_matches=10, ping_pong_moves=300)


def _exchange_pre_encoded(request_fd: int, reply_fd: int, count: int, request: bytes) -> None:
    for _ in range(count):
        os.write(request_fd, request)
        read_reply(reply_fd)


def bench_sandbox_ping_pong(
    backend: ProcessSandbox | DockerSandbox, agent: AgentSource, moves: int
) -> float:
    """Round trips per second with the ping-pong agent in ``backend``, start-up excluded,
    this thread and the agent on one CPU where one is free."""
    request = protocol.encode(typical_request())
    running: SandboxedAgent = backend.start(agent, limits=SandboxLimits(), label="ping-pong")
    try:
        # The reader below blocks: the referee's fds are non-blocking by contract.
        os.set_blocking(running.reply_fd, True)
        os.set_blocking(running.request_fd, True)
        # One answer first: the agent is running (a process agent's pid is known then).
        _exchange_pre_encoded(running.request_fd, running.reply_fd, 1, request)
        with duel_cpu() as cpu:
            if cpu is not None and isinstance(running, DockerAgent):
                # Pinned now, not by a thread in the background: nothing is timed before.
                docker_engine.container_pin(running.container, {cpu})
            elif cpu is not None and not running.pin_to({cpu}):
                raise SystemExit("bench_docker: the ping-pong agent could not be pinned")
            _exchange_pre_encoded(running.request_fd, running.reply_fd, min(500, moves), request)
            started = time.perf_counter()
            _exchange_pre_encoded(running.request_fd, running.reply_fd, moves, request)
            return moves / (time.perf_counter() - started)
    finally:
        running.close()


def _read_attached_reply(connection: Any, pending: bytearray) -> None:
    """Read stdout frames (8-byte header: stream, 3 zero bytes, length) up to a newline."""
    while not pending.endswith(b"\n"):
        header = b""
        while len(header) < 8:
            chunk = connection.recv(8 - len(header))
            if not chunk:
                raise SystemExit("bench_docker: the attached container closed its output")
            header += chunk
        (length,) = struct.unpack(">I", header[4:])
        payload = b""
        while len(payload) < length:
            payload += connection.recv(length - len(payload))
        pending += payload
    pending.clear()


def bench_attach_ping_pong(image: str, moves: int) -> float:
    """Round trips per second through the engine's attach streams, start-up excluded."""
    request = protocol.encode(typical_request())
    reply = protocol.encode(TYPICAL_REPLY).decode().rstrip("\n")
    with docker_engine.running_container(
        image=image,
        command=["python3", "-c", PING_PONG_AGENT],
        role="bench",
        environment={"PING_PONG_REPLY": reply},
        stdin_open=True,
        network_mode="none",
        nano_cpus=1_000_000_000,
    ) as container:
        connection = docker_engine.container_attach_socket(container)
        pending = bytearray()
        try:

            def exchange(count: int) -> None:
                for _ in range(count):
                    connection.sendall(request)
                    _read_attached_reply(connection, pending)

            exchange(min(500, moves))
            started = time.perf_counter()
            exchange(moves)
            return moves / (time.perf_counter() - started)
        finally:
            connection.close()


def _agents(folder: Path) -> tuple[AgentSource, AgentSource]:
    random_agent = folder / "random_agent.py"
    random_agent.write_text(RANDOM_AGENT)
    ping_pong = folder / "ping_pong"
    ping_pong.mkdir()
    (ping_pong / "agent").write_text(PING_PONG_AGENT)
    (ping_pong / "agent").chmod(0o755)
    reply = protocol.encode(TYPICAL_REPLY).decode().rstrip("\n")
    return (
        AgentSource.from_path(random_agent),
        AgentSource.from_path(ping_pong, {"PING_PONG_REPLY": reply}),
    )


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    problem = docker_engine.engine_problem()
    if problem:
        raise SystemExit(f"bench_docker: {problem}")
    process = ProcessSandbox()
    docker = DockerSandbox()
    pooled = DockerSandbox(pool_size=POOL_SIZE)
    if not docker_images.image_exists(docker.image):
        raise SystemExit(
            f"bench_docker: no image {docker.image}; run `python manage.py build_base_image`"
        )
    rows: dict[str, list[float]] = {
        "process_referee": [],
        "docker_referee": [],
        "pipe_ping_pong": [],
        "socket_ping_pong": [],
        "attach_ping_pong": [],
    }
    walls: dict[str, list[float]] = {"process": [], "docker": [], "docker_warm": []}
    process_duels: list[DuelRun] = []
    docker_duels: list[DuelRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-docker-") as folder:
        random_agent, ping_pong = _agents(Path(folder))
        # Warm both sandboxes once (the SDK copy, the image's pages in the cache).
        bench_duel(random_agent, process, matches=2, seed=SEED)
        bench_duel(random_agent, docker, matches=2, seed=SEED)  # type: ignore[arg-type]
        bench_duel(random_agent, pooled, matches=2, seed=SEED)  # type: ignore[arg-type]
        sandboxes = (process, docker, pooled)

        def settled() -> None:
            """What an earlier duel left to the background (removals, the pool's next
            containers) is done, so that each duel is timed alone."""
            for sandbox in sandboxes:
                sandbox.flush()
            assert pooled.pool is not None
            pooled.pool.wait_until_ready(60)

        for round_index in range(plan.rounds):
            seed = SEED + round_index
            settled()
            process_duels.append(bench_duel(random_agent, process, plan.duel_matches, seed))
            settled()
            docker_duels.append(
                bench_duel(random_agent, docker, plan.duel_matches, seed)  # type: ignore[arg-type]
            )
            settled()
            warm = bench_duel(random_agent, pooled, plan.duel_matches, seed)  # type: ignore[arg-type]
            settled()
            walls["process"].append(process_duels[-1].wall_seconds)
            walls["docker"].append(docker_duels[-1].wall_seconds)
            walls["docker_warm"].append(warm.wall_seconds)
            rows["process_referee"].append(process_duels[-1].moves_per_second)
            rows["docker_referee"].append(docker_duels[-1].moves_per_second)
            moves = plan.ping_pong_moves
            rows["pipe_ping_pong"].append(bench_sandbox_ping_pong(process, ping_pong, moves))
            rows["socket_ping_pong"].append(bench_sandbox_ping_pong(docker, ping_pong, moves))
            rows["attach_ping_pong"].append(bench_attach_ping_pong(docker.image, moves))
            report(
                f"round {round_index + 1}/{plan.rounds}: "
                + ", ".join(f"{name} {values[-1]:,.0f}" for name, values in rows.items())
                + " moves/s; duel "
                + ", ".join(f"{name} {values[-1]:.3f} s" for name, values in walls.items())
                + f" (load {os.getloadavg()[0]:.2f})"
            )
        pool_stats = dict(pooled.pool.stats) if pooled.pool is not None else {}
    pooled.close()
    docker.close()

    medians = {name: statistics.median(values) for name, values in rows.items()}
    ratios = {
        name: [wall / process for wall, process in zip(walls[name], walls["process"], strict=True)]
        for name in ("docker", "docker_warm")
    }
    docker_over_process = medians["docker_referee"] / medians["process_referee"]
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "image": docker.image,
        "plan": dataclasses.asdict(plan),
        **{f"{name}_moves_per_second": rate for name, rate in medians.items()},
        "docker_over_process": docker_over_process,
        "socket_over_pipe": medians["socket_ping_pong"] / medians["pipe_ping_pong"],
        "attach_over_pipe": medians["attach_ping_pong"] / medians["pipe_ping_pong"],
        "socket_over_attach": medians["socket_ping_pong"] / medians["attach_ping_pong"],
        "process_duel_startup_seconds": statistics.median(
            duel.wall_seconds - duel.match_seconds for duel in process_duels
        ),
        "docker_duel_startup_seconds": statistics.median(
            duel.wall_seconds - duel.match_seconds for duel in docker_duels
        ),
        "duel_wall_seconds": {name: statistics.median(v) for name, v in walls.items()},
        "duel_wall_ratio": {name: statistics.median(v) for name, v in ratios.items()},
        "duel_wall_ratio_range": {name: (min(v), max(v)) for name, v in ratios.items()},
        "pool_stats": pool_stats,
        "load_average": os.getloadavg(),
        "target_docker_over_process": TARGET_DOCKER_OVER_PROCESS,
        "target_met": docker_over_process >= TARGET_DOCKER_OVER_PROCESS,
        "target_duel_wall_ratio": TARGET_DUEL_WALL_RATIO,
        "duel_target_met": {
            name: statistics.median(ratios[name]) <= target
            for name, target in TARGET_DUEL_WALL_RATIO.items()
        },
        "samples": rows,
        "duel_wall_samples": walls,
    }


ROW_NAMES = {
    "process_referee": "referee, process sandbox (pipes)",
    "docker_referee": "referee, docker sandbox (pipes, bridge)",
    "pipe_ping_pong": "ping-pong, host process over pipes",
    "socket_ping_pong": "ping-pong, container over the bridge",
    "attach_ping_pong": "ping-pong, container over attach streams",
}


def table(figures: dict[str, Any]) -> str:
    rounds = figures["plan"]["rounds"]
    lines = [
        f"Connect Four, random vs random — {figures['date']}, median of {rounds} round(s)",
        f"machine: {machine_summary(figures['machine'])}; image {figures['image']}",
        "",
        f"{'measurement':<44} {'moves/s':>10} {'µs/move':>9}",
    ]
    for key, name in ROW_NAMES.items():
        rate = figures[f"{key}_moves_per_second"]
        lines.append(f"{name:<44} {rate:>10,.0f} {1e6 / rate:>9.1f}")
    verdict = "met" if figures["target_met"] else "NOT met"
    lines += [
        "",
        f"docker / process referee     {figures['docker_over_process']:7.1%}   "
        f"target >= {figures['target_docker_over_process']:.0%}: {verdict}",
        f"bridge / pipe ping-pong      {figures['socket_over_pipe']:7.1%}",
        f"attach / pipe ping-pong      {figures['attach_over_pipe']:7.1%}",
        f"bridge / attach ping-pong    {figures['socket_over_attach']:7.2f}x",
        f"duel start-up and shutdown: process {figures['process_duel_startup_seconds']:.3f} s, "
        f"docker {figures['docker_duel_startup_seconds']:.3f} s (two agents each)",
        "",
        f"{figures['plan']['duel_matches']}-match duel, wall time (median; ratio to the "
        "process sandbox's duel of the same round, median and range)",
    ]
    wall = figures["duel_wall_seconds"]
    lines.append(f"  process sandbox                {wall['process']:7.3f} s")
    for key, name in (("docker", "docker, cold containers"), ("docker_warm", "docker, warm pool")):
        low, high = figures["duel_wall_ratio_range"][key]
        verdict = "met" if figures["duel_target_met"][key] else "NOT met"
        lines.append(
            f"  {name:<30} {wall[key]:7.3f} s   x{figures['duel_wall_ratio'][key]:.2f} "
            f"(x{low:.2f} to x{high:.2f})   target <= x"
            f"{figures['target_duel_wall_ratio'][key]:.1f}: {verdict}"
        )
    lines += [
        f"  pool {figures['pool_stats']}",
        "load average at the end (1, 5, 15 min): "
        + ", ".join(f"{value:.2f}" for value in figures["load_average"]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="a fast smoke run (one round)")


if __name__ == "__main__":
    sys.exit(main())
