"""What should seed a Swiss tournament: openskill, the published leaderboard, or chance.

    python -m bench.bench_seeding            # 8 agents, 300 tournaments per cell
    python -m bench.bench_seeding --quick    # smoke run: 6 agents, 6 tournaments per cell
    python -m bench.bench_seeding --json figures.json

openskill is kept as a per-match estimate, and until this benchmark it seeded a Swiss
tournament's first round (``swiss_first_round``: mu - 3 sigma; now the leaderboard's
order, which measured better). This measures which seeds better, on
``bench_matchmaking``'s simulated field (the eight agents of ``bench_ladder``, their gaps
from measured head-to-head records; matches drawn from a Bradley-Terry model with a first
mover's advantage and draws):

history
    Before each tournament the field has played a ladder steered by the leaderboard (as
    the tournament manager steers it) for ``history`` matches: a young field (a sixth of a
    round robin's matches, where a newcomer's estimate is rough) and a settled one (half).
    Both estimates come from the same matches: openskill, updated after each match, and
    the leaderboard's fit of all of them.
seedings
    ``openskill``: mu - 3 sigma, as today; ``leaderboard``: the published order (ranked
    entries by score, then the provisional ones); ``random``: a shuffle, the simplest
    alternative on the same budget.
tournament
    Swiss, ``rounds`` rounds (3 for eight agents), two matches a duel (each agent first
    once), paired by ``tournament_manager.pairing`` as Arena pairs it; 2 points a duel won,
    1 a draw; standings by points, then Buchholz, then seed.

Each cell reports over the same seeded tournaments for every seeding (the field's luck is
shared, the seedings differ): the median Kendall tau of the final standings against the
true order and its range, the share of tournaments that put the strongest agent first,
and the mean difference of tau against the leaderboard's seeding, paired, with its 95 %
interval.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.bench_matchmaking import (
    NEIGHBOUR_RECORDS,
    SEED,
    Ladder,
    by_leaderboard,
    match_points,
    order_tau,
    strengths,
)
from bench.cli import run_bench
from bench.ranking import tau_spread, tau_spread_text
from bench.support import simulation_figures
from tournament_manager import pairing


@dataclasses.dataclass(frozen=True)
class Plan:
    records: tuple[float, ...]
    tournaments: int
    #: Matches of history, as shares of a round robin's (every pair 10 times).
    histories: tuple[float, ...] = (1 / 6, 1 / 2)


FULL = Plan(NEIGHBOUR_RECORDS, tournaments=300)
QUICK = Plan((23.5, 22, 23, 19, 27), tournaments=6)

SEEDINGS = ("openskill", "leaderboard", "random")


def history(truth: np.ndarray, seed: int, matches: int) -> Ladder:
    """The field after ``matches`` matches of a ladder steered by the leaderboard."""
    ladder = Ladder(truth, seed)
    while ladder.played < matches:
        idle = list(range(ladder.size))
        for one, two in by_leaderboard(ladder, idle, slots=1):
            ladder.play(one, two)
    return ladder


def seeded(ladder: Ladder, how: str, rng: np.random.Generator) -> list[int]:
    if how == "openskill":
        return sorted(
            range(ladder.size),
            key=lambda agent: -(ladder.ratings[agent].mu - 3 * ladder.ratings[agent].sigma),
        )
    if how == "leaderboard":
        return ladder.published()
    return [int(agent) for agent in rng.permutation(ladder.size)]


def duel_points(truth: np.ndarray, one: int, two: int, rng: np.random.Generator) -> tuple[int, int]:
    """Two matches, each agent first once: 2 points to the winner, 1 each for a draw."""
    score = 0.0
    for first, second, sign in ((one, two, 1), (two, one, -1)):
        points = match_points(truth, first, second, rng)
        score += points if sign == 1 else 1 - points
    if score > 1:
        return 2, 0
    if score < 1:
        return 0, 2
    return 1, 1


def swiss(truth: np.ndarray, seeds: list[int], rounds: int, rng: np.random.Generator) -> list[int]:
    """The final standings of a Swiss tournament seeded in ``seeds`` order, best first."""
    seed_of = {agent: number for number, agent in enumerate(seeds)}
    points = dict.fromkeys(seeds, 0)
    met: set[frozenset[int]] = set()
    opponents: dict[int, list[int]] = {agent: [] for agent in seeds}
    byes: dict[int, int] = dict.fromkeys(seeds, 0)
    for number in range(rounds):
        ranked = sorted(seeds, key=lambda agent: (-points[agent], seed_of[agent]))
        chosen = (
            pairing.first_round(seeds)
            if number == 0
            else pairing.next_round(ranked, points=points, met=met, byes=byes)
        )
        if chosen.bye is not None:
            points[chosen.bye] += 2
            byes[chosen.bye] += 1
        for one, two in chosen.pairs:
            first, second = duel_points(truth, one, two, rng)
            points[one] += first
            points[two] += second
            met.add(frozenset((one, two)))
            opponents[one].append(two)
            opponents[two].append(one)
    buchholz = {agent: sum(points[other] for other in opponents[agent]) for agent in seeds}
    return sorted(seeds, key=lambda agent: (-points[agent], -buchholz[agent], seed_of[agent]))


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    truth = strengths(plan.records, 1.0)
    size = len(truth)
    full = 10 * size * (size - 1) // 2
    rounds = max(1, math.ceil(math.log2(size)))
    started = time.perf_counter()
    cells = []
    for share in plan.histories:
        matches = round(share * full)
        taus: dict[str, list[float]] = {how: [] for how in SEEDINGS}
        firsts: dict[str, int] = dict.fromkeys(SEEDINGS, 0)
        for index in range(plan.tournaments):
            ladder = history(truth, SEED + index, matches)
            for how in SEEDINGS:
                # The same draws for every seeding: only the seeds differ.
                seeds = seeded(ladder, how, np.random.default_rng([SEED, index, 1]))
                order = swiss(truth, seeds, rounds, np.random.default_rng([SEED, index]))
                taus[how].append(order_tau(order))
                firsts[how] += order[0] == 0
        for how in SEEDINGS:
            differences = [
                mine - theirs for mine, theirs in zip(taus[how], taus["leaderboard"], strict=True)
            ]
            mean = statistics.fmean(differences)
            half = 1.96 * statistics.stdev(differences) / math.sqrt(len(differences))
            cells.append(
                {
                    "history_matches": matches,
                    "seeding": how,
                    **tau_spread(taus[how]),
                    "strongest_first": firsts[how] / plan.tournaments,
                    "tau_minus_leaderboard": [mean - half, mean, mean + half],
                }
            )
            report(
                f"{matches} matches of history, seeded by {how}: median tau "
                f"{statistics.median(taus[how]):.3f}, strongest first in "
                f"{firsts[how] / plan.tournaments:.0%}"
            )
    settings = {
        "agents": size,
        "rounds": rounds,
        "round_robin_matches": full,
        "tournaments_per_cell": plan.tournaments,
    }
    return simulation_figures(
        "bench_seeding", settings=settings, seed=SEED, started=started, cells=cells
    )


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['agents']} agents, Swiss of {figures['rounds']} rounds, "
        f"{figures['tournaments_per_cell']} seeded tournaments per row (the same for each "
        "seeding); tau of the final standings against the true order",
        "",
        "| history (matches) | seeding | median tau (range) | strongest first | "
        "tau minus the leaderboard's (95 %) |",
        "| ---: | --- | --- | ---: | --- |",
    ]
    for cell in figures["cells"]:
        low, mean, high = cell["tau_minus_leaderboard"]
        lines.append(
            f"| {cell['history_matches']} | {cell['seeding']} | {tau_spread_text(cell)} | "
            f"{cell['strongest_first']:.0%} | {mean:+.3f} ({low:+.3f} to {high:+.3f}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv, sys.modules[__name__], quick_help="6 agents, 6 tournaments per cell (a smoke run)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
