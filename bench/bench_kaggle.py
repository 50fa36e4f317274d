"""Arena's sandboxed Connect Four duels against kaggle-environments' in-process ConnectX.

    make bench-kaggle                        # sets up .venv-kaggle, then a full run (~1 min)
    python -m bench.bench_kaggle --quick     # smoke run
    python -m bench.bench_kaggle --docker    # also the docker sandbox, cold and warm
    python -m bench.bench_kaggle --kaggle-python PATH --json figures.json

Matches per second of random against random, both sides measured in the same run, one of
each per round, so that a slow patch of the machine hits both alike:

kaggle-environments
    ``env.run(["random", "random"])`` on one ``make("connectx")`` environment, in a
    child process running the interpreter of a virtualenv that holds kaggle-environments
    (``bench/kaggle-requirements.txt``; by default ``.venv-kaggle``, made from this
    interpreter by ``make bench-kaggle``). Agents are plain functions in that process:
    no sandbox, no pipes. The child is started once; its import is not timed.
Arena, N-match duel
    ``run_duel`` of the random example player
    (``example_players/connect_four/random_player.py``) against itself in the ``process``
    sandbox, timed end to end: both agents started, the handshakes, every match, the
    farewells and the clean-up. Matches per second = N / wall time.
Arena, the environment's own duel length
    The same with duels as long as ``info.yml``'s ``matches_per_duel``, back to back, as a
    worker plays them: start-up weighs more.
Arena, warm pool
    Both of the above in a process sandbox with a warm pool, as workers keep it
    (``ARENA_SANDBOX_POOL_SIZE``): each duel starts the agents' next copies in the
    background, and takes the copies the previous duel started. The target is judged on
    this row, the 200-match duel's.
Arena, unconfined
    The N-match duel and the short duels in a process sandbox with its confinement
    turned off (no bubblewrap: as before issue 37), in the same rounds: what confinement
    costs a duel (its agents' start-up), side by side.
floors
    The pipe ping-pong and the JSON ping-pong of ``bench_referee`` (one line each way per
    move between this process and a child on the agents' interpreter; the second with the
    protocol's JSON work on both sides), as matches per second: their round trips per
    second over the moves of an average Arena match. What any sandboxed agent speaking
    JSON lines over pipes could reach with no referee, no game, no start-up.

Each Arena row starts once what the rows before it left running in the background (a
sandbox's removals and sweeps, a pool's next starts) is done, and is timed with its own
background work only. The ratio of a round is Arena's rate over kaggle's rate in that
round; the table gives its median and range. The issue's target is 30 times.
``--docker`` adds the same N-match duel and the short duels in the docker sandbox, with
both containers started for the duel (cold), with a warm pool of agents forked by fork
servers in containers kept between duels (as a worker that played the agent before), and
with a warm pool of a container per duel (``fork=False``, as before the fork servers),
against the process sandbox's.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_referee import (
    ENVIRONMENT,
    SEED,
    bench_duel,
    bench_json_ping_pong,
    bench_ping_pong,
)
from bench.cli import run_bench
from bench.support import RANDOM_PLAYER, REPOSITORY, machine, machine_summary
from environments.registry import load_info
from sandboxes.base import AgentSource, SandboxBackend
from sandboxes.process import ProcessSandbox

DEFAULT_KAGGLE_PYTHON = REPOSITORY / ".venv-kaggle" / "bin" / "python"
TARGET_RATIO = 30.0
POOL_SIZE = 4

# Runs in the kaggle virtualenv: on each line N from stdin, N matches, then one line of JSON.
KAGGLE_CHILD = """\
import contextlib, io, json, sys, time
# It reports every game whose own dependencies are not installed (not needed for ConnectX).
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import kaggle_environments
env = kaggle_environments.make("connectx")
env.run(["random", "random"])
print(json.dumps({"version": kaggle_environments.__version__}), flush=True)
for line in sys.stdin:
    moves = 0
    started = time.perf_counter()
    for _ in range(int(line)):
        steps = env.run(["random", "random"])
        if any(agent["status"] != "DONE" for agent in steps[-1]):
            raise SystemExit(f"a kaggle match did not end cleanly: {steps[-1]}")
        moves += len(steps) - 1
    print(json.dumps({"seconds": time.perf_counter() - started, "moves": moves}), flush=True)
"""


@dataclasses.dataclass(frozen=True)
class Plan:
    rounds: int
    kaggle_matches: int
    duel_matches: int
    #: Matches played in duels of ``info.yml``'s length each round.
    short_duel_matches: int
    ping_pong_moves: int


FULL = Plan(
    rounds=7, kaggle_matches=100, duel_matches=200, short_duel_matches=100, ping_pong_moves=5000
)
QUICK = Plan(
    rounds=1, kaggle_matches=5, duel_matches=20, short_duel_matches=20, ping_pong_moves=200
)


@dataclasses.dataclass(frozen=True)
class Run:
    matches: int
    moves: int
    seconds: float

    @property
    def matches_per_second(self) -> float:
        return self.matches / self.seconds


class Kaggle:
    """The kaggle-environments child process: started once, asked for matches each round."""

    def __init__(self, python: Path) -> None:
        if not python.exists():
            raise SystemExit(
                f"bench_kaggle: no interpreter at {python}; run `make bench-kaggle` (it makes "
                "the virtualenv from bench/kaggle-requirements.txt) or give --kaggle-python"
            )
        self.python = python
        self.process = subprocess.Popen(
            [str(python), "-c", KAGGLE_CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.version = self._answer()["version"]
        assert self.process.stdin is not None
        self.stdin = self.process.stdin

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"bench_kaggle: the kaggle child ({self.python}) stopped")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def play(self, matches: int) -> Run:
        self.stdin.write(f"{matches}\n")
        self.stdin.flush()
        answer = self._answer()
        return Run(matches, answer["moves"], answer["seconds"])

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=10)


def arena_duel(agent: AgentSource, backend: SandboxBackend, matches: int, seed: int) -> Run:
    """One duel, timed end to end (start-up and clean-up included)."""
    duel = bench_duel(agent, backend, matches, seed)  # type: ignore[arg-type]
    return Run(matches, duel.moves, duel.wall_seconds)


def arena_short_duels(
    agent: AgentSource, backend: SandboxBackend, matches: int, per_duel: int, seed: int
) -> Run:
    """``matches`` matches in back-to-back duels of ``per_duel`` matches."""
    played = moves = 0
    seconds = 0.0
    while played < matches:
        duel = arena_duel(agent, backend, min(per_duel, matches - played), seed + played)
        played += duel.matches
        moves += duel.moves
        seconds += duel.seconds
    return Run(played, moves, seconds)


def _docker_backends() -> dict[str, SandboxBackend]:
    from sandboxes import docker_engine, docker_images
    from sandboxes.docker import DockerSandbox

    problem = docker_engine.engine_problem()
    if problem:
        raise SystemExit(f"bench_kaggle: {problem}")
    cold = DockerSandbox()
    if not docker_images.image_exists(cold.image):
        raise SystemExit(
            f"bench_kaggle: no image {cold.image}; run `python manage.py build_base_image`"
        )
    return {
        "docker": cold,
        "docker_warm": DockerSandbox(pool_size=POOL_SIZE),
        "docker_containers": DockerSandbox(pool_size=POOL_SIZE, fork=False),
    }


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "low": min(values), "high": max(values)}


def measure(
    plan: Plan,
    *,
    report: Callable[[str], None],
    kaggle_python: Path = DEFAULT_KAGGLE_PYTHON,
    docker: bool = False,
) -> dict[str, Any]:
    load_before = os.getloadavg()
    kaggle = Kaggle(kaggle_python)
    agent = AgentSource.from_path(RANDOM_PLAYER)
    process = ProcessSandbox()
    # As before issue 37, for the cost of confinement.
    unconfined = ProcessSandbox(confine=False)
    # As a worker runs duels: the agents' next copies start with each duel (warm pool).
    warm = ProcessSandbox(pool_size=POOL_SIZE)
    per_duel = load_info(ENVIRONMENT).matches_per_duel
    extra = _docker_backends() if docker else {}
    runs: dict[str, list[Run]] = {
        "kaggle": [],
        "arena": [],
        "arena_warm": [],
        "arena_short": [],
        "arena_short_warm": [],
        "arena_unconfined": [],
        "arena_short_unconfined": [],
    }
    runs.update({name: [] for name in extra})
    runs.update({f"{name}_short": [] for name in extra})
    floors: dict[str, list[float]] = {"pipe": [], "json": []}
    try:
        # Not timed: the SDK copy for the sandbox, the image's pages, the first pool.
        backends = (process, unconfined, warm, *extra.values())
        for backend in backends:
            arena_duel(agent, backend, 2, SEED)

        def quiet() -> None:
            """Not timed: what the last row left running in the background (removals,
            sweeps, a pool's next starts) is done before the next row, which is timed
            with its own background work only."""
            for backend in backends:
                backend.flush(60)  # type: ignore[attr-defined]
                pool = getattr(backend, "pool", None)
                if pool is not None:
                    pool.wait_until_ready(60)

        # Each row: its backend, and whether it plays short duels.
        timed: list[tuple[str, SandboxBackend, bool]] = [
            ("arena", process, False),
            ("arena_warm", warm, False),
            ("arena_short", process, True),
            ("arena_short_warm", warm, True),
            ("arena_unconfined", unconfined, False),
            ("arena_short_unconfined", unconfined, True),
        ]
        for name, backend in extra.items():
            timed += [(name, backend, False), (f"{name}_short", backend, True)]
        for round_index in range(plan.rounds):
            seed = SEED + 1000 * round_index
            runs["kaggle"].append(kaggle.play(plan.kaggle_matches))
            for name, backend, short in timed:
                quiet()
                runs[name].append(
                    arena_short_duels(agent, backend, plan.short_duel_matches, per_duel, seed)
                    if short
                    else arena_duel(agent, backend, plan.duel_matches, seed)
                )
            floors["pipe"].append(bench_ping_pong(process.python, plan.ping_pong_moves))
            floors["json"].append(bench_json_ping_pong(process.python, plan.ping_pong_moves))
            kaggle_rate = runs["kaggle"][-1].matches_per_second
            report(
                f"round {round_index + 1}/{plan.rounds}: kaggle {kaggle_rate:.1f}, "
                + ", ".join(
                    f"{name} {values[-1].matches_per_second:,.0f} "
                    f"(x{values[-1].matches_per_second / kaggle_rate:.1f})"
                    for name, values in runs.items()
                    if name != "kaggle"
                )
                + f" matches/s (load {os.getloadavg()[0]:.2f})"
            )
    finally:
        kaggle.close()
        warm.close()
        process.close()
        unconfined.close()
        for backend in extra.values():
            backend.close()  # type: ignore[attr-defined]

    kaggle_rates = [run.matches_per_second for run in runs["kaggle"]]
    rows: dict[str, dict[str, Any]] = {
        name: {
            "matches_per_second": _spread([run.matches_per_second for run in values]),
            "over_kaggle": _spread(
                [
                    run.matches_per_second / kaggle_rate
                    for run, kaggle_rate in zip(values, kaggle_rates, strict=True)
                ]
            ),
            "moves_per_match": sum(run.moves for run in values)
            / sum(run.matches for run in values),
        }
        for name, values in runs.items()
    }
    moves_per_match = rows["arena"]["moves_per_match"]
    for name, round_trips in floors.items():
        rates = [rate / moves_per_match for rate in round_trips]
        rows[f"{name}_floor"] = {
            "matches_per_second": _spread(rates),
            "over_kaggle": _spread(
                [rate / kaggle_rate for rate, kaggle_rate in zip(rates, kaggle_rates, strict=True)]
            ),
            "moves_per_match": moves_per_match,
        }
    # Judged as a worker plays them: with the warm pool.
    ratio = rows["arena_warm"]["over_kaggle"]["median"]
    return {
        "date": datetime.date.today().isoformat(),
        "machine": {
            **machine(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "kaggle": {"version": kaggle.version, "python": str(kaggle_python)},
        "sandbox": {
            "confined": process.confined,
            "isolate_users": process.isolate_users,
            "agent_python": process.python,
        },
        "plan": dataclasses.asdict(plan),
        "matches_per_duel": per_duel,
        "rows": rows,
        "target_over_kaggle": TARGET_RATIO,
        "target_met": ratio >= TARGET_RATIO,
        "samples": {
            name: [dataclasses.asdict(run) for run in values] for name, values in runs.items()
        },
        "ping_pong_round_trips_per_second": floors,
    }


def _row_names(figures: dict[str, Any]) -> dict[str, str]:
    matches = figures["plan"]["duel_matches"]
    return {
        "kaggle": "kaggle-environments, in-process",
        "arena": f"Arena, process sandbox, {matches}-match duel",
        "arena_warm": f"Arena, process, warm pool, {matches}-match duel",
        "arena_short": f"Arena, process sandbox, {figures['matches_per_duel']}-match duels",
        "arena_short_warm": f"Arena, process, warm pool, {figures['matches_per_duel']}-match duels",
        "arena_unconfined": f"Arena, process, unconfined, {matches}-match duel",
        "arena_short_unconfined": (
            f"Arena, process, unconfined, {figures['matches_per_duel']}-match duels"
        ),
        "docker": f"Arena, docker cold, {matches}-match duel",
        "docker_warm": f"Arena, docker warm pool, {matches}-match duel",
        "docker_containers": f"Arena, docker warm, a container a duel, {matches}-match duel",
        "docker_short": f"Arena, docker cold, {figures['matches_per_duel']}-match duels",
        "docker_warm_short": (
            f"Arena, docker warm pool, {figures['matches_per_duel']}-match duels"
        ),
        "docker_containers_short": (
            f"Arena, docker warm, a container a duel, {figures['matches_per_duel']}-match duels"
        ),
        "pipe_floor": "floor: pipe ping-pong, per match",
        "json_floor": "floor: JSON ping-pong, per match",
    }


def table(figures: dict[str, Any]) -> str:
    described = figures["machine"]
    names = _row_names(figures)
    lines = [
        f"Connect Four random vs random, matches/s — {figures['date']}, "
        f"{figures['plan']['rounds']} round(s), medians (range)",
        f"machine: {machine_summary(described)}; "
        "load average (1, 5, 15 min) before "
        + ", ".join(f"{value:.2f}" for value in described["load_average_before"])
        + ", after "
        + ", ".join(f"{value:.2f}" for value in described["load_average_after"]),
        f"kaggle-environments {figures['kaggle']['version']} on {figures['kaggle']['python']}; "
        f"Arena's agents on {figures['sandbox']['agent_python']}, confined (bubblewrap): "
        f"{figures['sandbox'].get('confined')}",
        "",
        f"{'row':<46} {'matches/s (range)':>26} {'x kaggle (range)':>24} {'moves/match':>12}",
    ]
    for name, row in figures["rows"].items():
        rate, ratio = row["matches_per_second"], row["over_kaggle"]
        rates = f"{rate['median']:,.1f} ({rate['low']:,.1f}-{rate['high']:,.1f})"
        ratios = f"{ratio['median']:,.1f} ({ratio['low']:,.1f}-{ratio['high']:,.1f})"
        lines.append(f"{names[name]:<46} {rates:>26} {ratios:>24} {row['moves_per_match']:>12.1f}")
    verdict = "met" if figures["target_met"] else "NOT met"
    lines += ["", f"target: Arena >= {figures['target_over_kaggle']:.0f}x kaggle: {verdict}"]
    return "\n".join(lines)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kaggle-python",
        type=Path,
        default=DEFAULT_KAGGLE_PYTHON,
        help="an interpreter with kaggle-environments (default: .venv-kaggle/bin/python)",
    )
    parser.add_argument(
        "--docker", action="store_true", help="also the docker sandbox, cold and warm"
    )


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="a fast smoke run (one round, short duels)",
        add_options=_options,
    )


if __name__ == "__main__":
    sys.exit(main())
