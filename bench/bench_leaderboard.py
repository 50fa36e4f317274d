"""What a refit of the published leaderboard costs, against the online ratings it sits beside.

    python -m bench.bench_leaderboard            # 50, 200 and 500 agents; ~1 min
    python -m bench.bench_leaderboard --quick    # smoke run: 20 agents
    python -m bench.bench_leaderboard --json figures.json

For each field size, a throwaway SQLite database (the embedded default) is filled with
that many competitors of one environment, each with a validated revision, and a history of
rated two-match duels between random pairs (``matches_per_agent`` matches per agent on
average; the results drawn from hidden strengths), each match with its two rating changes
as ``tournament_manager.ratings`` writes them. Then:

refit
    ``leaderboard_refit(force=True)``: the grouped query over every match, the
    Bradley-Terry fit, the rank intervals and the rewrite of every entry; best of 3.
online
    The baseline: the openskill updates of the same matches, one after another, as
    ``ratings_update_from_duel`` computes them (``_MODEL.rate``; no database), i.e. what
    the online ratings cost to follow the same history.

The ratio refit / online says how many times the cost of rating the whole history match by
match one refit takes; the tournament manager pays it at most once per pass, and only
when something changed.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.fields import FinishedDuel, bench_field, finished_duels, rated, tallied, tally_store
from bench.local_site import django_setup, site_environment
from bench.support import machine, machine_summary

SEED = 20261123


@dataclasses.dataclass(frozen=True)
class Plan:
    fields: tuple[int, ...]
    matches_per_agent: int


FULL = Plan(fields=(50, 200, 500), matches_per_agent=200)
QUICK = Plan(fields=(20,), matches_per_agent=20)


def _history(agents: int, matches_per_agent: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """(first agent, second agent, result: 1 first won, 2 second won, 0 draw) per match,
    in two-match duels (seats swapped in the second)."""
    strengths = [rng.gauss(0, 1.5) for _ in range(agents)]
    matches = []
    for _ in range(agents * matches_per_agent // 4):
        one, two = rng.sample(range(agents), 2)
        for first, second in ((one, two), (two, one)):
            chance = 1 / (1 + math.exp(-(strengths[first] - strengths[second])))
            draw = rng.random() < 0.1
            won = rng.random() < chance
            matches.append((first, second, 0 if draw else 1 if won else 2))
    return matches


def _fill(agents: int, history: list[tuple[int, int, int]]) -> Any:
    """The environment, its competitors and the rated history, written in bulk."""
    from django.utils import timezone

    from core.models import DuelResult, Match, Tournament

    name = f"bench_{agents}"
    environment, owner, revisions, ratings = bench_field(name, agents)
    tournament = Tournament.objects.create(
        environment=environment, name=name, created_by=owner, matches_per_duel=2
    )
    now = timezone.now()
    pairs = range(0, len(history), 2)
    duels = finished_duels(
        environment,
        [
            FinishedDuel(
                tournament,
                seed=i,
                seats=(revisions[history[i][0]], revisions[history[i][1]]),
                ended_at=now,
            )
            for i in pairs
        ],
    )
    matches = []
    for i, (_, _, result) in enumerate(history):
        duel = duels[i // 2]
        # The duel's seat 1 is the first match's first mover.
        seat_1_first = i % 2 == 0
        scores = {0: (0.5, 0.5), 1: (1.0, 0.0), 2: (0.0, 1.0)}[result]
        if not seat_1_first:
            scores = (scores[1], scores[0])
        matches.append(
            Match(
                duel=duel,
                index=i % 2,
                first_player=1 if seat_1_first else 2,
                seats=[1, 2] if seat_1_first else [2, 1],
                seed=i,
                result=DuelResult.DRAW
                if result == 0
                else DuelResult.PLAYER_1_WIN
                if scores[0] > scores[1]
                else DuelResult.PLAYER_2_WIN,
                scores=list(scores),
            )
        )
    matches = Match.objects.bulk_create(matches, batch_size=2000)
    rated(
        matches,
        [(ratings[first], ratings[second]) for first, second, _ in history],
        batch_size=4000,
    )
    seated = [(revisions[history[i][0]], revisions[history[i][1]]) for i in pairs]
    tally_store(tallied(matches, [seated[i // 2] for i in range(len(matches))], {}), 4000)
    return environment


def _online_seconds(agents: int, history: list[tuple[int, int, int]]) -> float:
    from tournament_manager.ratings import _MODEL

    ratings = [_MODEL.rating() for _ in range(agents)]
    started = time.perf_counter()
    for first, second, result in history:
        ranks = {0: [1, 1], 1: [1, 2], 2: [2, 1]}[result]
        [[ratings[first]], [ratings[second]]] = _MODEL.rate(
            [[ratings[first]], [ratings[second]]], ranks=list[float](ranks)
        )
    return time.perf_counter() - started


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    django_setup(site_environment(Path(tempfile.mkdtemp(prefix="bench-leaderboard-"))))
    from core.models import LeaderboardEntry
    from tournament_manager.leaderboard import leaderboard_refit

    rows = []
    for agents in plan.fields:
        rng = random.Random(SEED + agents)
        history = _history(agents, plan.matches_per_agent, rng)
        environment = _fill(agents, history)
        refits = []
        for _ in range(3):
            started = time.perf_counter()
            leaderboard_refit(environment=environment, force=True)
            refits.append(time.perf_counter() - started)
        entries = LeaderboardEntry.objects.filter(environment=environment).count()
        online = _online_seconds(agents, history)
        row = {
            "agents": agents,
            "matches": len(history),
            "entries": entries,
            "refit_seconds": round(min(refits), 4),
            "online_seconds": round(online, 4),
            "ratio": round(min(refits) / online, 3),
        }
        rows.append(row)
        report(
            f"{agents} agents, {len(history)} matches: refit {row['refit_seconds']} s, "
            f"online {row['online_seconds']} s"
        )
    return {
        "date": datetime.date.today().isoformat(),
        "machine": f"{machine_summary(machine())}, SQLite",
        "rows": rows,
    }


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"Leaderboard refit against the online ratings — {figures['date']}, {figures['machine']}",
        "",
        f"{'agents':>7} {'matches':>9} {'refit s':>9} {'online s':>9} {'refit / online':>15}",
    ]
    for row in figures["rows"]:
        lines.append(
            f"{row['agents']:>7} {row['matches']:>9} {row['refit_seconds']:>9.3f} "
            f"{row['online_seconds']:>9.3f} {row['ratio']:>15.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="smoke run: 20 agents")


if __name__ == "__main__":
    sys.exit(main())
