"""How long a 16-agent Connect Four round robin takes, duel after duel and two at a time.

    python -m bench.bench_tournament            # full run, a few minutes with Docker
    python -m bench.bench_tournament --quick    # smoke run: 4 agents, 2 matches per duel
    python -m bench.bench_tournament --json figures.json

Sixteen distinct agents (the example Connect Four players, the example minimax at depths
0 to 3, and the same minimax at low depths and several blunder rates set with
``ARENA_BLUNDER_RATE``) play every pair once: 120 duels of 10 matches, each a ``run_duel``
call, so agent start-up and shutdown are in the time, as in a worker. Rows:

process, sequential
    Duel after duel with the ``process`` sandbox.
process, 2 parallel
    The same duels through a thread pool of two, one per core of the machine.
docker (warm pool), sequential / 2 parallel
    The same with the ``docker`` sandbox and a warm pool of ``POOL_SIZE`` containers (one
    per agent: each duel's start takes the containers started ahead for its two agents
    and has the next ones started while it plays), when ``sandboxes.docker_engine`` finds
    an engine and the base image exists; skipped with the reason otherwise.
docker (no pool), 2 parallel
    The baseline in the same run: both containers started when the duel asks for them.

The targets, from the issues: the round robin in under 60 s, and in the docker sandbox
in under 40 s.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.bench_ratings import (
    ENVIRONMENT,
    RANDOM,
    SEED,
    AgentSpec,
    blundering,
    minimax,
)
from bench.cli import run_bench
from bench.support import check_clean, machine, machine_summary
from referee.duel import run_duel
from sandboxes import docker_engine, docker_images
from sandboxes.base import AgentSource
from sandboxes.docker import DockerSandbox
from sandboxes.process import ProcessSandbox

TARGET_SECONDS = 60.0
TARGET_DOCKER_SECONDS = 40.0
POOL_SIZE = 16
TARGET_AGENTS = 16
TARGET_MATCHES = 10

SIXTEEN = (
    RANDOM,
    AgentSpec("kaggle style", "kaggle_style.py"),
    *(minimax(depth) for depth in range(4)),
    blundering(0, 0.2),
    blundering(0, 0.5),
    blundering(1, 0.1),
    blundering(1, 0.3),
    blundering(2, 0.1),
    blundering(2, 0.2),
    blundering(2, 0.4),
    blundering(3, 0.1),
    blundering(3, 0.3),
    blundering(3, 0.5),
)
FOUR = (RANDOM, AgentSpec("kaggle style", "kaggle_style.py"), minimax(2), blundering(3, 0.3))


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: tuple[AgentSpec, ...]
    matches: int


FULL = Plan(SIXTEEN, matches=10)
QUICK = Plan(FOUR, matches=2)


def play_round_robin(
    sources: Sequence[AgentSource], backend: Any, matches: int, workers: int
) -> dict[str, Any]:
    """Every pair once, ``workers`` duels at a time; wall time and what was played."""
    pairs = list(itertools.combinations(range(len(sources)), 2))

    def play(index: int) -> Any:
        one, two = pairs[index]
        result = run_duel(
            ENVIRONMENT,
            (sources[one], sources[two]),
            backend=backend,
            matches=matches,
            seed=SEED + index,
        )
        check_clean(result)
        return result

    started = time.perf_counter()
    if workers == 1:
        results = [play(index) for index in range(len(pairs))]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(play, range(len(pairs))))
    wall = time.perf_counter() - started
    return {
        "workers": workers,
        "duels": len(results),
        "matches": sum(len(result.matches) for result in results),
        "moves": sum(len(match.actions) for result in results for match in result.matches),
        "match_seconds": sum(match.duration for result in results for match in result.matches),
        "wall_seconds": wall,
    }


def docker_problem() -> str | None:
    """Why the docker rows cannot run, or None."""
    problem = docker_engine.engine_problem()
    if problem:
        return f"no Docker engine: {problem}"
    image = DockerSandbox().image
    if not docker_images.image_exists(image):
        return f"no image {image}; run `python manage.py build_base_image`"
    return None


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    backends: dict[str, tuple[Any, tuple[int, ...]]] = {"process": (ProcessSandbox(), (1, 2))}
    skipped = docker_problem()
    if skipped is None:
        backends["docker (warm pool)"] = (DockerSandbox(pool_size=POOL_SIZE), (1, 2))
        backends["docker (no pool)"] = (DockerSandbox(), (2,))
    rows: list[dict[str, Any]] = []
    sources = [agent.source() for agent in plan.agents]
    assert len(set(sources)) == len(sources), "the agents must be distinct"
    for name, (backend, concurrency) in backends.items():
        # Warm the sandbox once (the SDK copy, the image in the page cache).
        play_round_robin(sources[:2], backend, matches=1, workers=1)
        for workers in concurrency:
            load = os.getloadavg()[0]
            row = {
                "backend": name,
                **play_round_robin(sources, backend, plan.matches, workers),
                "load_before": load,
                "load_after": os.getloadavg()[0],
            }
            pool = getattr(backend, "pool", None)
            if pool is not None:
                row["pool"] = dict(pool.stats)
                pool.stats.clear()
                # Each row starts with an empty pool, as a worker that played none of them.
                backend.close()
                backend = DockerSandbox(pool_size=POOL_SIZE)
                play_round_robin(sources[:2], backend, matches=1, workers=1)
            rows.append(row)
            report(
                f"{name}, {workers} at a time: {row['duels']} duels, "
                f"{row['matches']} matches in {row['wall_seconds']:.1f} s "
                f"(load {row['load_before']:.2f} before, {row['load_after']:.2f} after)"
            )
        if hasattr(backend, "close"):
            backend.close()
    judged = plan is FULL
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "agents": [agent.name for agent in plan.agents],
        "matches_per_duel": plan.matches,
        "rows": rows,
        "docker_skipped": skipped,
        "target_seconds": TARGET_SECONDS,
        "target_docker_seconds": TARGET_DOCKER_SECONDS,
        # Only the full plan is the round robin; a quick run cannot tell.
        "target_met": {
            f"{row['backend']}, {row['workers']} at a time": row["wall_seconds"]
            < (TARGET_DOCKER_SECONDS if row["backend"].startswith("docker") else TARGET_SECONDS)
            if judged
            else None
            for row in rows
        },
    }


def table(figures: dict[str, Any]) -> str:
    agents = figures["agents"]
    lines = [
        f"Connect Four round robin — {figures['date']}: {len(agents)} agents, "
        f"{figures['matches_per_duel']} matches per duel",
        f"machine: {machine_summary(figures['machine'])}",
        "agents: " + ", ".join(agents),
        "",
        f"{'sandbox':<34} {'duels':>6} {'matches':>8} {'moves':>8} {'wall s':>8} "
        f"{'s/duel':>7} {'load':>10}  target < {figures['target_seconds']:g} s "
        f"(docker < {figures['target_docker_seconds']:g} s)",
    ]
    for row, met in zip(figures["rows"], figures["target_met"].values(), strict=True):
        verdict = {True: "met", False: "NOT met", None: "not judged (quick run)"}[met]
        lines.append(
            f"{row['backend'] + ', ' + str(row['workers']) + ' at a time':<34} "
            f"{row['duels']:>6} {row['matches']:>8} {row['moves']:>8} "
            f"{row['wall_seconds']:>8.1f} {row['wall_seconds'] / row['duels']:>7.3f} "
            f"{row['load_before']:>4.1f}-{row['load_after']:<4.1f}  {verdict}"
            + (f"  pool {row['pool']}" if "pool" in row else "")
        )
    if figures["docker_skipped"]:
        lines.append(f"docker: skipped, {figures['docker_skipped']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="a smoke run (4 agents, 2 matches)")


if __name__ == "__main__":
    sys.exit(main())
