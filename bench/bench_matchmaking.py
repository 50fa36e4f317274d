"""What steers the ladder's matchmaking, over many seeded ladders on a simulated field.

    python -m bench.bench_matchmaking            # 8 agents, 500 ladders per cell, ~9 min
    python -m bench.bench_matchmaking --quick    # smoke run: 6 agents, 4 ladders per cell
    python -m bench.bench_matchmaking --json figures.json

``bench_ladder`` plays the ladder end to end, 10 repetitions: too few to tell a policy that
ranks the field right 83 % of the time from one that does 88 %. This one plays the same
field many times over, with matches drawn from a Bradley-Terry model instead of played:

field
    ``bench_ladder``'s eight agents, strongest first, each neighbour pair's chance of
    winning taken from their measured head-to-head record (23.5-6.5, 22-8, 23-7, 23-7,
    19-11, 22.5-7.5 and 27-3 over 30 matches, BENCHMARKS.md), a first mover's advantage
    of 0.4 (log-odds) and 3 % draws. A second field has every gap 20 % smaller: the
    measured records are only 30 matches each, and the end-to-end round robins rank
    worse than the first field predicts.
ladder
    As the tournament manager runs it, with the project's settings and rating model
    (``ladder_matchmaker``, ``hosted_duel_limit``, ``ratings._MODEL``; by default two duel
    slots, wait 600 s, a newcomer bonus for 5 duels): 2 matches per duel (each agent first
    once), a pass whenever a slot is free (the other duel still running), 30 simulated
    seconds per duel; the leaderboard read as published (the ``bradley_terry`` fit of
    every match, provisional entries, under 6 matches by default, last).
policies
    ``leaderboard``: the matchmaker given each agent's place on that leaderboard, score ±
    sd, the prior's for one with no match (what ``_ladder_idle_agents`` reads);
    ``openskill``: given the online openskill ratings, updated after every match (what it
    read before 2026-11-27); ``random``: random disjoint pairs of idle agents, the simplest
    alternative on the same budget.

Each cell reports, at a quarter and at half of the full round robin's matches (every
pair 10 times: 280 for eight agents): the share of ladders that rank the field with
Kendall's tau >= 0.9 (for eight agents: at most one pair the wrong way round), its 95 %
interval, the median tau and its range, and what that share means for ``bench_ladder``'s
check, "at least 9 of 10 repetitions": the chance that a run of 10 shows it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

# The project's settings and rating model, as the tournament manager has them (no
# database is used).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from bench.cli import run_bench  # noqa: E402
from bench.ranking import kendall_tau, tau_spread, tau_spread_text  # noqa: E402
from bench.support import simulation_figures  # noqa: E402
from tournament_manager import bradley_terry  # noqa: E402
from tournament_manager.matchmaking import LadderAgent, hosted_duel_limit  # noqa: E402
from tournament_manager.ratings import _MODEL as OPENSKILL  # noqa: E402
from tournament_manager.services.ladder import ladder_matchmaker  # noqa: E402

SEED = 20261127
TARGET_TAU = 0.9
#: The measured head-to-head records of bench_ladder's neighbours (wins of the stronger
#: of 30, a draw counting half).
NEIGHBOUR_RECORDS = (23.5, 22, 23, 23, 19, 22.5, 27)
ADVANTAGE = 0.4
DRAWS = 0.03
MATCHES_PER_DUEL = 2
FULL_MATCHES_PER_PAIR = 10
SECONDS_PER_DUEL = 30.0


@dataclasses.dataclass(frozen=True)
class Plan:
    records: tuple[float, ...]
    #: Each field's gaps are the measured ones times these.
    scales: tuple[float, ...]
    ladders: int


FULL = Plan(NEIGHBOUR_RECORDS, scales=(1.0, 0.8), ladders=500)
QUICK = Plan((23.5, 22, 23, 19, 27), scales=(1.0,), ladders=4)


def strengths(records: Sequence[float], scale: float) -> np.ndarray:
    """True strengths (log-odds), strongest first, from the neighbours' records."""
    gaps = [scale * math.log(wins / (30 - wins)) for wins in records]
    return -np.concatenate([[0.0], np.cumsum(gaps)])


def match_points(truth: np.ndarray, first: int, second: int, rng: np.random.Generator) -> float:
    """One match drawn from the model: the first mover's points (1, 0.5 or 0)."""
    if rng.random() < DRAWS:
        return 0.5
    chance = 1 / (1 + math.exp(-(truth[first] - truth[second] + ADVANTAGE)))
    return float(rng.random() < chance)


def order_tau(order: Sequence[int]) -> float:
    """Kendall's tau of a ranking of the field, best first, against the true order (agent 0
    strongest)."""
    measured = [0.0] * len(order)
    for place, agent in enumerate(order):
        measured[agent] = -place
    return kendall_tau([-agent for agent in range(len(order))], measured)


class Ladder:
    """One simulated ladder: its matches, the online ratings and the duels played."""

    def __init__(self, truth: np.ndarray, seed: int) -> None:
        self.truth = truth
        self.size = len(truth)
        self.rng = np.random.default_rng(seed)
        self.ratings = [OPENSKILL.rating() for _ in range(self.size)]
        self.duels = [0] * self.size
        self.matches = [0] * self.size
        self.last_duel = [0.0] * self.size
        self.clock = 0.0
        #: (first, second) -> [matches, first's points]
        self.games: dict[tuple[int, int], list[float]] = {}
        self.played = 0

    def play(self, one: int, two: int) -> None:
        """A duel: each agent first once; the ratings moved after every match."""
        for first, second in ((one, two), (two, one)):
            points = match_points(self.truth, first, second, self.rng)
            record = self.games.setdefault((first, second), [0, 0.0])
            record[0] += 1
            record[1] += points
            ranks = [1.0, 1.0] if points == 0.5 else ([1.0, 2.0] if points else [2.0, 1.0])
            [[self.ratings[first]], [self.ratings[second]]] = OPENSKILL.rate(
                [[self.ratings[first]], [self.ratings[second]]], ranks=ranks
            )
        self.clock += SECONDS_PER_DUEL
        for agent in (one, two):
            self.duels[agent] += 1
            self.matches[agent] += MATCHES_PER_DUEL
            self.last_duel[agent] = self.clock
        self.played += MATCHES_PER_DUEL

    def fit(self) -> dict[int, tuple[float, float]]:
        """The leaderboard's fit: every agent with a match, its score and sd (Elo)."""
        entered = [agent for agent in range(self.size) if self.matches[agent]]
        if not entered:
            return {}
        games = [
            bradley_terry.Games(first, second, int(count), points)
            for (first, second), (count, points) in self.games.items()
        ]
        result = bradley_terry.fit(entered, games)
        return {agent: (result.elo(agent), result.elo_sd(agent)) for agent in entered}

    def published(self) -> list[int]:
        """The leaderboard's order: ranked entries by score, then provisional ones."""
        places = self.fit()
        return sorted(
            range(self.size),
            key=lambda agent: (
                agent not in places,
                self.matches[agent] < settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES,
                -places.get(agent, (0.0, 0.0))[0],
            ),
        )

    def tau(self) -> float:
        return order_tau(self.published())


Policy = Callable[[Ladder, list[int], int], list[tuple[int, int]]]
MATCHMAKER = ladder_matchmaker()


def _matchmaker_pairs(
    ladder: Ladder, idle: list[int], slots: int, places: dict[int, tuple[float, float]]
) -> list[tuple[int, int]]:
    agents = [
        LadderAgent(
            key=agent,
            competitor=agent,
            mu=places[agent][0],
            sigma=places[agent][1],
            duels=ladder.duels[agent],
            waiting=ladder.clock - ladder.last_duel[agent],
        )
        for agent in idle
    ]
    return [(one.key, two.key) for one, two in MATCHMAKER.pairings(agents, slots=slots)]


def by_leaderboard(ladder: Ladder, idle: list[int], slots: int) -> list[tuple[int, int]]:
    fitted = ladder.fit()
    unfitted = (bradley_terry.UNFITTED_SCORE, bradley_terry.UNFITTED_SCORE_SD)
    places = {agent: fitted.get(agent, unfitted) for agent in idle}
    return _matchmaker_pairs(ladder, idle, slots, places)


def by_openskill(ladder: Ladder, idle: list[int], slots: int) -> list[tuple[int, int]]:
    places = {agent: (ladder.ratings[agent].mu, ladder.ratings[agent].sigma) for agent in idle}
    return _matchmaker_pairs(ladder, idle, slots, places)


def at_random(ladder: Ladder, idle: list[int], slots: int) -> list[tuple[int, int]]:
    shuffled = [int(agent) for agent in ladder.rng.permutation(idle)]
    return [(shuffled[2 * k], shuffled[2 * k + 1]) for k in range(min(slots, len(idle) // 2))]


POLICIES: dict[str, Policy] = {
    "leaderboard": by_leaderboard,
    "openskill": by_openskill,
    "random": at_random,
}


def run_ladder(truth: np.ndarray, policy: Policy, seed: int, budgets: Sequence[int]) -> list[float]:
    """Tau of the published leaderboard once the ladder has played each budget."""
    ladder = Ladder(truth, seed)
    running: list[tuple[int, int]] = []
    taus: list[float] = []
    pending = sorted(budgets)
    while pending:
        busy = {agent for pair in running for agent in pair}
        idle = [agent for agent in range(ladder.size) if agent not in busy]
        slots = hosted_duel_limit(ladder.size, size=2, slots=settings.ARENA_LADDER_CONCURRENT_DUELS)
        if len(running) < slots:
            running.extend(policy(ladder, idle, slots - len(running)))
        one, two = running.pop(0)  # the duel started first ends first
        ladder.play(one, two)
        while pending and ladder.played >= pending[0]:
            taus.append(ladder.tau())
            pending.pop(0)
    return taus


def at_least_9_of_10(share: float) -> float:
    """The chance that 10 independent repetitions show tau >= 0.9 in 9 or 10 of them."""
    return share**10 + 10 * share**9 * (1 - share)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """The 95 % Wilson interval of a share."""
    z = 1.96
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    return max(0.0, centre - half / (1 + z * z / trials)), min(
        1.0, centre + half / (1 + z * z / trials)
    )


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    size = len(plan.records) + 1
    full = FULL_MATCHES_PER_PAIR * size * (size - 1) // 2
    budgets = {"25 %": full // 4, "50 %": full // 2}
    cells = []
    started = time.perf_counter()
    for scale in plan.scales:
        truth = strengths(plan.records, scale)
        for name, policy in POLICIES.items():
            # The same seeds for every policy: the field's luck is shared, the choices differ.
            runs = [
                run_ladder(truth, policy, SEED + index, list(budgets.values()))
                for index in range(plan.ladders)
            ]
            cell: dict[str, Any] = {"scale": scale, "policy": name, "ladders": plan.ladders}
            for column, (label, matches) in enumerate(budgets.items()):
                taus = [run[column] for run in runs]
                hits = sum(tau >= TARGET_TAU for tau in taus)
                low, high = wilson(hits, len(taus))
                cell[label] = {
                    "matches": matches,
                    "share_at_target": hits / len(taus),
                    "share_interval": [low, high],
                    **tau_spread(taus),
                    "chance_9_of_10": at_least_9_of_10(hits / len(taus)),
                }
            cells.append(cell)
            report(
                f"gaps x{scale:g}, {name}: tau >= {TARGET_TAU} at 25 % in "
                f"{cell['25 %']['share_at_target']:.1%} of {plan.ladders} ladders"
            )
    settings = {"agents": size, "round_robin_matches": full, "ladders_per_cell": plan.ladders}
    return simulation_figures(
        "bench_matchmaking", settings=settings, seed=SEED, started=started, cells=cells
    )


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['agents']} agents, {figures['ladders_per_cell']} seeded ladders per row; "
        f"tau >= {TARGET_TAU} share (95 % interval), median tau (range), "
        "chance that 10 repetitions show 9 or 10",
        "",
        "| gaps | policy | budget | share tau >= 0.9 | median tau (range) | 9 of 10 |",
        "| ---: | --- | --- | --- | --- | ---: |",
    ]
    for cell in figures["cells"]:
        for label in ("25 %", "50 %"):
            point = cell[label]
            low, high = point["share_interval"]
            lines.append(
                f"| x{cell['scale']:g} | {cell['policy']} | {label} ({point['matches']}) | "
                f"{point['share_at_target']:.1%} ({low:.1%} to {high:.1%}) | "
                f"{tau_spread_text(point)} | {point['chance_9_of_10']:.0%} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv, sys.modules[__name__], quick_help="6 agents, 4 ladders per cell (a smoke run)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
