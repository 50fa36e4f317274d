"""How well the ratings rank Connect Four agents of known strength, and after how many matches.

    python -m bench.bench_ratings            # full run, about a minute
    python -m bench.bench_ratings --quick    # smoke run: 4 agents, 2 matches per duel
    python -m bench.bench_ratings --json figures.json

The agents are one search at several blunder rates: the example minimax player at depth 3,
then the same player with ``ARENA_BLUNDER_RATE`` set playing a random legal column on a
share of its moves, then the random player. More random moves make a weaker player, so
the true order is known by construction. Minimax depths alone do not give an
order: depth 3 beats depth 4, and depth 2 beats depth 4 as well, in this search.

Everything is played for real (``run_duel``, ``process`` sandbox) without the database.
Ratings are updated per match as ``tournament_manager.ratings`` does it, with its own
model and rank rule (``_MODEL``, and a match's ranks by score, ``MatchRecord.ranks``).

round robin
    Every pair plays one duel; the ranking is compared with the true order by Kendall's
    tau, once by the conservative rating mu - 3 sigma, once by points.
ladder
    Pairs are chosen by ``tournament_manager.matchmaking.Matchmaker`` (the ladder's own
    pure function, with the project's settings: waiting time, newcomer bonus, duel slots),
    given the openskill ratings, as the ladder was until 2026-11-27 (it is now given the
    published leaderboard's fit: ``bench_ladder`` and ``bench_matchmaking`` measure that);
    every round fills the slots, plays the short duels (two at a time), rates them, and
    advances a simulated clock by ``round_seconds``. It runs up to half the round robin's
    matches; tau is recorded after every duel, and the point where the ranking first
    stayed unchanged for ``stable_duels`` duels is reported as the stopping point.
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

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench.cli import run_bench  # noqa: E402
from bench.ranking import kendall_tau  # noqa: E402
from bench.support import PLAYERS, check_clean, machine  # noqa: E402
from referee.duel import run_duel  # noqa: E402
from referee.results import DuelResult  # noqa: E402
from sandboxes.base import AgentSource  # noqa: E402
from sandboxes.process import ProcessSandbox  # noqa: E402
from tournament_manager.matchmaking import LadderAgent, Matchmaker  # noqa: E402
from tournament_manager.ratings import _MODEL  # noqa: E402

ENVIRONMENT = "connect_four"
SEED = 20261122

#: From the issue: the ladder ranks at tau >= 0.9 within half the round robin's matches.
TARGET_TAU = 0.9
TARGET_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """One agent: a player file of example_players/connect_four and its environment."""

    name: str
    player: str
    environment: dict[str, str] = dataclasses.field(default_factory=dict)

    def source(self) -> AgentSource:
        return AgentSource.from_path(PLAYERS / self.player, environment=self.environment)


def minimax(depth: int) -> AgentSpec:
    return AgentSpec(f"minimax d{depth}", "minimax.py", {"ARENA_MINIMAX_DEPTH": str(depth)})


def blundering(depth: int, rate: float) -> AgentSpec:
    return AgentSpec(
        f"minimax d{depth} blunder {rate:g}",
        "minimax.py",
        {"ARENA_MINIMAX_DEPTH": str(depth), "ARENA_BLUNDER_RATE": str(rate)},
    )


RANDOM = AgentSpec("random", "random_player.py")

#: Strongest first: the true order, by construction.
EIGHT = (
    minimax(3),
    *(blundering(3, rate) for rate in (0.1, 0.2, 0.3, 0.45, 0.6, 0.8)),
    RANDOM,
)
FOUR = (minimax(3), blundering(3, 0.3), blundering(3, 0.6), RANDOM)


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: tuple[AgentSpec, ...]
    round_robin_matches: int
    ladder_matches: int
    #: Simulated seconds per round of ladder duels (the waiting bonus grows with it).
    round_seconds: float
    #: The ranking counts as stable once unchanged for this many ladder duels.
    stable_duels: int


FULL = Plan(EIGHT, round_robin_matches=10, ladder_matches=2, round_seconds=60, stable_duels=10)
QUICK = Plan(FOUR, round_robin_matches=2, ladder_matches=2, round_seconds=60, stable_duels=2)


class Table:
    """Ratings and points of the agents, updated per match as the tournament manager does."""

    def __init__(self, count: int) -> None:
        self.ratings = [_MODEL.rating() for _ in range(count)]
        self.points = [0.0] * count
        self.matches = 0

    def rate(self, one: int, two: int, result: DuelResult) -> None:
        for match in result.matches:
            [[self.ratings[one]], [self.ratings[two]]] = _MODEL.rate(
                [[self.ratings[one]], [self.ratings[two]]], ranks=list[float](match.ranks)
            )
            first, second = match.ranks
            self.points[one] += 1.0 if first < second else 0.5 if first == second else 0.0
            self.points[two] += 1.0 if second < first else 0.5 if first == second else 0.0
            self.matches += 1

    def conservative(self) -> list[float]:
        return [rating.mu - 3 * rating.sigma for rating in self.ratings]

    def ranking(self, names: Sequence[str]) -> list[str]:
        scores = self.conservative()
        return [names[i] for i in sorted(range(len(names)), key=lambda i: -scores[i])]


class Player:
    def __init__(self, sources: Sequence[AgentSource], backend: ProcessSandbox) -> None:
        self.sources = sources
        self.backend = backend
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.duels = 0

    def play(self, pairs: Sequence[tuple[int, int]], matches: int) -> list[DuelResult]:
        """The duels of ``pairs``, two at a time, in order."""
        seeds = range(SEED + self.duels, SEED + self.duels + len(pairs))
        self.duels += len(pairs)
        results = list(
            self.pool.map(
                lambda pair, seed: run_duel(
                    ENVIRONMENT,
                    (self.sources[pair[0]], self.sources[pair[1]]),
                    backend=self.backend,
                    matches=matches,
                    seed=seed,
                ),
                pairs,
                seeds,
            )
        )
        for result in results:
            check_clean(result)
        return results


def round_robin(plan: Plan, player: Player) -> dict[str, Any]:
    names = [agent.name for agent in plan.agents]
    truth = [-index for index in range(len(names))]
    table = Table(len(names))
    pairs = list(itertools.combinations(range(len(names)), 2))
    started = time.perf_counter()
    for (one, two), result in zip(pairs, player.play(pairs, plan.round_robin_matches), strict=True):
        table.rate(one, two, result)
    return {
        "duels": len(pairs),
        "matches": table.matches,
        "wall_seconds": time.perf_counter() - started,
        "tau_conservative": kendall_tau(truth, table.conservative()),
        "tau_points": kendall_tau(truth, table.points),
        "ranking": table.ranking(names),
        "points": dict(zip(names, table.points, strict=True)),
        "ratings": {
            name: {"mu": rating.mu, "sigma": rating.sigma}
            for name, rating in zip(names, table.ratings, strict=True)
        },
    }


def ladder(plan: Plan, player: Player, budget: int) -> dict[str, Any]:
    names = [agent.name for agent in plan.agents]
    truth = [-index for index in range(len(names))]
    table = Table(len(names))
    matchmaker = Matchmaker(
        wait_seconds=settings.ARENA_LADDER_WAIT_SECONDS,
        newcomer_duels=settings.ARENA_LADDER_NEWCOMER_DUELS,
    )
    slots = settings.ARENA_LADDER_CONCURRENT_DUELS
    duels = [0] * len(names)
    last_played = [0.0] * len(names)
    clock = 0.0
    curve: list[dict[str, Any]] = []
    pair_counts: dict[str, int] = {}
    rankings: list[list[str]] = []
    stable_at: dict[str, Any] | None = None
    started = time.perf_counter()
    while table.matches + plan.ladder_matches <= budget:
        agents = [
            LadderAgent(
                key=i,
                competitor=i,
                mu=table.ratings[i].mu,
                sigma=table.ratings[i].sigma,
                duels=duels[i],
                waiting=clock - last_played[i],
            )
            for i in range(len(names))
        ]
        room = (budget - table.matches) // plan.ladder_matches
        chosen = matchmaker.pairings(agents, slots=min(slots, room))
        pairs = [(one.key, two.key) for one, two in chosen]
        results = player.play(pairs, plan.ladder_matches)
        clock += plan.round_seconds
        for (one, two), result in zip(pairs, results, strict=True):
            table.rate(one, two, result)
            for side in (one, two):
                duels[side] += 1
                last_played[side] = clock
            key = f"{names[one]} / {names[two]}"
            pair_counts[key] = pair_counts.get(key, 0) + 1
            rankings.append(table.ranking(names))
            curve.append(
                {
                    "matches": table.matches,
                    "tau_conservative": kendall_tau(truth, table.conservative()),
                    "tau_points": kendall_tau(truth, table.points),
                }
            )
            recent = rankings[-(plan.stable_duels + 1) :]
            if (
                stable_at is None
                and len(recent) == plan.stable_duels + 1
                and all(ranking == recent[0] for ranking in recent)
            ):
                stable_at = curve[-1]
    reached = next((point for point in curve if point["tau_conservative"] >= TARGET_TAU), None)
    return {
        "duels": len(curve),
        "matches": table.matches,
        "budget": budget,
        "wall_seconds": time.perf_counter() - started,
        "matches_per_duel": plan.ladder_matches,
        "slots": slots,
        "round_seconds": plan.round_seconds,
        "wait_seconds": matchmaker.wait_seconds,
        "newcomer_duels": matchmaker.newcomer_duels,
        "tau_conservative": curve[-1]["tau_conservative"] if curve else 0.0,
        "tau_points": curve[-1]["tau_points"] if curve else 0.0,
        "stable_at": stable_at,
        "first_tau_at_target": reached,
        "ranking": table.ranking(names),
        "duels_per_agent": dict(zip(names, duels, strict=True)),
        "pairs": dict(sorted(pair_counts.items(), key=lambda item: -item[1])),
        "curve": curve,
    }


def at_share(curve: Sequence[dict[str, Any]], matches: int) -> dict[str, Any] | None:
    """The last point of ``curve`` with at most ``matches`` matches played."""
    points = [point for point in curve if point["matches"] <= matches]
    return points[-1] if points else None


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    backend = ProcessSandbox()
    player = Player([agent.source() for agent in plan.agents], backend)
    try:
        robin = round_robin(plan, player)
        report(
            f"round robin: {robin['matches']} matches in {robin['wall_seconds']:.1f} s, "
            f"tau {robin['tau_conservative']:.3f} (mu - 3 sigma), "
            f"{robin['tau_points']:.3f} (points)"
        )
        climb = ladder(plan, player, budget=int(robin["matches"] * TARGET_SHARE))
        report(
            f"ladder: {climb['matches']} matches in {climb['wall_seconds']:.1f} s, "
            f"tau {climb['tau_conservative']:.3f} (mu - 3 sigma)"
        )
    finally:
        player.pool.shutdown()
    checkpoints = {
        f"{share:.0%}": at_share(climb["curve"], int(robin["matches"] * share))
        for share in (0.25, 0.5)
    }
    half = checkpoints["50%"]
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "plan": {
            "agents": [dataclasses.asdict(agent) for agent in plan.agents],
            "round_robin_matches": plan.round_robin_matches,
            "ladder_matches": plan.ladder_matches,
            "round_seconds": plan.round_seconds,
            "stable_duels": plan.stable_duels,
        },
        "true_order": [agent.name for agent in plan.agents],
        "round_robin": robin,
        "ladder": climb,
        "ladder_checkpoints": checkpoints,
        "targets": {
            "tau": TARGET_TAU,
            "share_of_round_robin": TARGET_SHARE,
            # Only the full plan is the setting; a quick run cannot tell.
            "met": bool(half and half["tau_conservative"] >= TARGET_TAU) if plan is FULL else None,
        },
    }


def _point(point: dict[str, Any] | None) -> str:
    if point is None:
        return "—"
    return (
        f"{point['matches']} matches: tau {point['tau_conservative']:.3f} (mu - 3 sigma), "
        f"{point['tau_points']:.3f} (points)"
    )


def table(figures: dict[str, Any]) -> str:
    robin, climb = figures["round_robin"], figures["ladder"]
    lines = [
        f"Connect Four rating quality — {figures['date']}, {len(figures['true_order'])} agents",
        "true order: " + ", ".join(figures["true_order"]),
        "",
        f"round robin, {figures['plan']['round_robin_matches']} matches per pair: "
        f"{robin['duels']} duels, {robin['matches']} matches, {robin['wall_seconds']:.1f} s",
        f"  tau by mu - 3 sigma {robin['tau_conservative']:.3f}, "
        f"by points {robin['tau_points']:.3f}",
        "  ranking: " + ", ".join(robin["ranking"]),
        "",
        f"ladder, {climb['matches_per_duel']} matches per duel, {climb['slots']} slots, "
        f"budget {climb['budget']} matches: {climb['duels']} duels, {climb['wall_seconds']:.1f} s",
    ]
    for share, point in figures["ladder_checkpoints"].items():
        lines.append(f"  at {share} of the round robin: {_point(point)}")
    lines += [
        f"  ranking first stable ({figures['plan']['stable_duels']} duels): "
        f"{_point(climb['stable_at'])}",
        f"  first tau >= {TARGET_TAU}: {_point(climb['first_tau_at_target'])}",
        "  ranking: " + ", ".join(climb["ranking"]),
        "  duels per agent: "
        + ", ".join(f"{name} {count}" for name, count in climb["duels_per_agent"].items()),
        "",
        f"target: tau >= {TARGET_TAU} within {TARGET_SHARE:.0%} of the round robin's matches: "
        + {True: "met", False: "NOT met", None: "not judged (quick run)"}[
            figures["targets"]["met"]
        ],
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="a smoke run (4 agents, 2 matches)")


if __name__ == "__main__":
    sys.exit(main())
