"""What watching a duel live costs the referee: moves per second with and without its
events published for spectators.

    python -m bench.bench_live            # full run, about a minute
    python -m bench.bench_live --quick    # smoke run (a test runs it)
    python -m bench.bench_live --json figures.json

The duel of ``bench_referee`` (Connect Four, two random SDK agents in the ``process``
sandbox), played three ways, interleaved round by round:

off
    ``run_duel`` as the platform ran it before live watching: no ``progress``.
feed, no sink
    ``progress=LiveFeed(...).publish`` with a sink that does nothing: the referee's own
    cost per move (an event dictionary and an append under a lock) and the feed
    thread's wake-ups.
feed, SQLite
    The same feed writing each batch as a row of a SQLite table in write-ahead-logging
    mode, as the embedded default's worker does (``LiveEvent``, every 0.2 s): the whole
    cost in the worker, including the writes that share its CPU.

publish
    The referee's side alone, without agents: microseconds per ``LiveFeed.publish`` of a
    step's event, the median of the rounds' timings of 100,000 calls.

Moves are counted from the match records and timed by the sum of the match durations
(agent start-up left out), as in ``bench_referee``; each figure is the median of the
rounds.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_referee import ENVIRONMENT, RANDOM_AGENT, SEED
from bench.cli import run_bench
from bench.support import check_clean, machine
from referee.duel import Progress, run_duel
from referee.live import LiveFeed
from sandboxes.base import AgentSource
from sandboxes.process import ProcessSandbox

#: The worker's default (``ARENA_LIVE_FLUSH_SECONDS``).
FLUSH_SECONDS = 0.2


@dataclasses.dataclass(frozen=True)
class Plan:
    rounds: int
    matches: int


FULL = Plan(rounds=7, matches=200)
QUICK = Plan(rounds=1, matches=10)

VARIANTS = ("off", "feed, no sink", "feed, SQLite")


def _sqlite_sink(path: Path) -> tuple[Callable[[list[dict[str, Any]]], None], Callable[[], int]]:
    """A sink writing each batch as one row, and a count of the events written."""
    setup = sqlite3.connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE IF NOT EXISTS live (id INTEGER PRIMARY KEY, duel INT, lines TEXT)")
    setup.commit()
    setup.close()
    written = [0]

    def store(batch: list[dict[str, Any]]) -> None:
        # A connection per call: the feed's thread is not the one that made the sink.
        database = sqlite3.connect(path)
        try:
            lines = "\n".join(json.dumps(event, separators=(",", ":")) for event in batch)
            database.execute("INSERT INTO live (duel, lines) VALUES (1, ?)", (lines,))
            database.commit()
        finally:
            database.close()
        written[0] += len(batch)

    return store, lambda: written[0]


def _play(
    agent: AgentSource, backend: ProcessSandbox, matches: int, progress: Progress | None
) -> tuple[int, float, int]:
    result = run_duel(
        ENVIRONMENT, (agent, agent), backend=backend, matches=matches, seed=SEED, progress=progress
    )
    check_clean(result)
    moves = sum(len(match.actions) for match in result.matches)
    return moves, sum(match.duration for match in result.matches), len(result.matches)


def _publish_microseconds(calls: int = 100_000) -> float:
    feed = LiveFeed(lambda batch: None, interval=FLUSH_SECONDS, max_pending=10 * calls)
    started = time.perf_counter()
    for step in range(calls):
        feed.publish({"type": "step", "match": 0, "step": step, "actions": [3, None]})
    elapsed = time.perf_counter() - started
    feed.close()
    return 1e6 * elapsed / calls


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    backend = ProcessSandbox()
    rates: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    publish: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-live-") as folder:
        agent_path = Path(folder) / "random_agent.py"
        agent_path.write_text(RANDOM_AGENT)
        agent = AgentSource.from_path(agent_path)
        for round_number in range(plan.rounds):
            for variant in VARIANTS:
                if variant == "off":
                    moves, seconds, _ = _play(agent, backend, plan.matches, None)
                else:
                    if variant == "feed, SQLite":
                        sink, count = _sqlite_sink(Path(folder) / "live.sqlite3")
                    else:
                        sink, count = (lambda batch: None), (lambda: -1)
                    feed = LiveFeed(sink, interval=FLUSH_SECONDS, name="bench")
                    moves, seconds, matches = _play(agent, backend, plan.matches, feed.publish)
                    feed.close()
                    # Every step, plus a start and an end per match, reached the sink.
                    if count() not in (-1, moves + 2 * matches) or feed.failed:
                        raise SystemExit(f"bench_live: the feed lost events ({count()})")
                rates[variant].append(moves / seconds)
            publish.append(_publish_microseconds())
            report(
                f"round {round_number + 1}/{plan.rounds}: "
                + ", ".join(f"{variant} {rates[variant][-1]:,.0f}" for variant in VARIANTS)
            )
    medians = {variant: statistics.median(values) for variant, values in rates.items()}
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "plan": dataclasses.asdict(plan),
        "moves_per_second": medians,
        "rounds": rates,
        "publish_microseconds": statistics.median(publish),
        "overhead_percent": {
            variant: 100 * (1 - medians[variant] / medians["off"]) for variant in VARIANTS[1:]
        },
    }


def table(figures: dict[str, Any]) -> str:
    medians = figures["moves_per_second"]
    lines = [
        "| variant | moves/s | µs per move | overhead |",
        "| --- | ---: | ---: | ---: |",
    ]
    for variant in VARIANTS:
        rate = medians[variant]
        overhead = figures["overhead_percent"].get(variant)
        shown = "—" if overhead is None else f"{overhead:+.1f} %"
        lines.append(f"| {variant} | {rate:,.0f} | {1e6 / rate:.1f} | {shown} |")
    lines.append("")
    lines.append(f"LiveFeed.publish alone: {figures['publish_microseconds']:.2f} µs per event")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv, sys.modules[__name__], quick_help="a fast smoke run (one round, ten matches)"
    )


if __name__ == "__main__":
    sys.exit(main())
