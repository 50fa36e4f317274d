"""The continuous ladder against the round robin, end to end, over seeded repetitions.

    python -m bench.bench_ladder            # full run: 8 agents, 10 repetitions, ~10 min
    python -m bench.bench_ladder --quick    # smoke run: 3 agents, 2 repetitions
    python -m bench.bench_ladder --json figures.json

Agents of known strength (the example Connect Four minimax at depth 3 playing a random
column with probability 0, .1, .2, .3, .45, .6 and .8, then the random player: the true
order by construction) are uploaded through the platform's upload service, each a zip of
``minimax.py`` and a ``main.py`` that sets its blunder rate, then built and validated by
self-play, on the embedded default (a throwaway SQLite database, the ``process`` sandbox)
with tasks run in process (``ARENA_BROKER_URL=eager``). Then, in each repetition (seeded:
the duels' seeds come from a generator seeded per repetition):

ladder
    Ratings reset, one continuous ladder launched and driven by the tournament manager's
    ``run_once()`` exactly as ``manage.py run_tournament_manager`` drives it, until it has
    played as many matches as the full round robin. Kendall's tau between the published
    leaderboard (``tournament_manager.leaderboard``: a Bradley-Terry fit of every rated
    match, provisional entries last) and the true order is read when its matches reach
    each budget.
round robin
    Every pair once, with ``k`` matches per duel for each budget (the largest ``k`` whose
    round robin fits in it), also driven by ``run_once()``; tau of its standings (points,
    then wins, then score).

Budgets are shares of the full round robin (every pair, ``info.yml``'s 10 matches per duel):
25 %, 50 % and 100 %. Each repetition also counts its distinct matches (a match identical
to an earlier one of its duel, same seats and same moves, is no new evidence), in the
ladder and in the full round robin. The issue's goal: the ladder reaches tau >= 0.9 in at
least 9 of 10 repetitions with at most 50 % of the matches, and beats the equal-budget
round robin on the median at 25 %.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import random
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench.cli import run_bench
from bench.local_site import django_setup, site_environment
from bench.ranking import kendall_tau
from bench.support import PLAYERS, RANDOM_PLAYER, games_import, machine, machine_summary

MINIMAX = PLAYERS / "minimax.py"
SEED = 20261123
SHARES = (0.25, 0.5, 1.0)
TARGET_TAU = 0.9


@dataclasses.dataclass(frozen=True)
class Plan:
    #: Blunder rates of the minimax agents, strongest first; the random player comes last.
    blunder_rates: tuple[float, ...]
    repetitions: int
    #: Matches per duel of the full round robin (the budget's 100 %).
    full_matches: int


FULL = Plan((0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8), repetitions=10, full_matches=10)
QUICK = Plan((0, 0.45), repetitions=2, full_matches=4)


def _agent_zip(blunder_rate: float | None) -> bytes:
    """An upload: the example minimax with its blunder rate, or the random player."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if blunder_rate is None:
            archive.writestr("main.py", RANDOM_PLAYER.read_text())
        else:
            archive.writestr("minimax.py", MINIMAX.read_text())
            archive.writestr(
                "main.py",
                "import os\n\n"
                'os.environ["ARENA_MINIMAX_DEPTH"] = "3"\n'
                f'os.environ["ARENA_BLUNDER_RATE"] = "{blunder_rate}"\n\n'
                "from minimax import MinimaxPlayer  # noqa: E402\n\n\n"
                "class BenchPlayer(MinimaxPlayer):\n"
                "    pass\n",
            )
    return buffer.getvalue()


def _setup(folder: Path) -> None:
    """Django on a throwaway SQLite database in ``folder``, migrated, games imported."""
    sandboxes = Path(tempfile.mkdtemp(prefix="bench-ladder-sandboxes-"))
    django_setup(
        {
            **site_environment(folder),
            "ARENA_SANDBOX_ROOT": str(sandboxes),
            "ARENA_SANDBOX": "process",
        }
    )
    games_import()


def _upload_agents(plan: Plan, report: Callable[[str], None]) -> list[tuple[str, int]]:
    """(name, revision id) of each agent, strongest first; each built and validated."""
    from django.db import transaction

    from core.models import Environment, Revision
    from core.services.accounts import user_create
    from core.services.revisions import competitor_get_or_create, revision_create

    owner = user_create(
        email="bench@example.com", display_name="Bench", password="a long bench password 2026"
    )
    environment = Environment.objects.get(name="connect_four")
    agents = []
    for index, rate in enumerate([*plan.blunder_rates, None]):
        name = "random" if rate is None else f"minimax-d3-blunder-{rate:g}"
        with transaction.atomic():
            competitor = competitor_get_or_create(owner=owner, environment=environment, name=name)
            revision = revision_create(
                competitor=competitor,
                uploaded_by=owner,
                filename=f"agent{index}.zip",
                content=_agent_zip(rate),
            )
        revision = Revision.objects.get(pk=revision.pk)
        if not revision.is_valid:
            validation = revision.job("validation")
            assert validation is not None  # an upload queues it
            raise SystemExit(f"bench_ladder: {name} was not validated: {validation.error}")
        report(f"uploaded, built and validated {name}")
        agents.append((name, revision.pk))
    return agents


def _drive(tournament_id: int, *, until_matches: int | None, checkpoints: list[int]) -> dict:
    """Run the tournament manager's passes until the tournament is over (or, for a ladder,
    has played ``until_matches``); the leaderboard's order at each checkpoint."""
    from core.models import LeaderboardEntry, Match, Tournament, TournamentStatus
    from tournament_manager.daemon import run_once
    from tournament_manager.leaderboard import leaderboard_refit
    from tournament_manager.services.tournaments import tournament_stop

    seen: dict[int, list[int]] = {}
    pending = sorted(checkpoints)
    while True:
        did_work = run_once()
        tournament = Tournament.objects.get(pk=tournament_id)
        played = Match.objects.filter(duel__tournament=tournament).count()
        while pending and played >= pending[0]:
            entered = list(
                tournament.participants.values_list("revision__competitor_id", flat=True)
            )
            # The published leaderboard, as a visitor would see it now (ranked entries,
            # then provisional ones); an agent not on it yet comes last.
            leaderboard_refit(environment=tournament.environment, force=True)
            published = list(
                LeaderboardEntry.objects.published()
                .filter(environment=tournament.environment)
                .values_list("competitor_id", flat=True)
            )
            order = sorted(
                entered,
                key=lambda c: published.index(c) if c in published else len(published),
            )
            seen[pending.pop(0)] = order
        if until_matches is not None and played >= until_matches:
            tournament_stop(tournament=tournament)
            return {"matches": played, "orders": seen}
        if tournament.status != TournamentStatus.RUNNING:
            return {"matches": played, "orders": seen}
        if not did_work:
            time.sleep(0.01)


def _distinct_matches(tournament_id: int) -> int:
    """The tournament's matches, each identical to an earlier one of its duel (the same
    seats, actions and scores) left out: read from the rows, whatever the referee and the
    ratings do about repeats."""
    from core.models import Match

    return len(
        {
            (duel, json.dumps([seats, actions, scores]))
            for duel, seats, actions, scores in Match.objects.filter(
                duel__tournament_id=tournament_id
            ).values_list("duel_id", "seats", "actions", "scores")
        }
    )


def _duels_per_pair(tournament_id: int, name_of: dict[int, str]) -> dict[str, int]:
    """How many of the ladder's duels each pair played ("a / b", in the agents' order)."""
    from core.models import DuelSeat

    seats = DuelSeat.objects.filter(duel__tournament_id=tournament_id).values_list(
        "duel_id", "revision__competitor_id"
    )
    by_duel: dict[int, list[int]] = {}
    for duel, competitor in seats:
        by_duel.setdefault(duel, []).append(competitor)
    order = list(name_of)
    counted: dict[str, int] = {}
    for players in by_duel.values():
        one, two = sorted(players, key=order.index)
        key = f"{name_of[one]} / {name_of[two]}"
        counted[key] = counted.get(key, 0) + 1
    return dict(sorted(counted.items(), key=lambda item: -item[1]))


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="bench-ladder-"))
    _setup(folder)
    from core.models import Environment, Revision, TournamentFormat
    from tournament_manager.ratings import ratings_reset
    from tournament_manager.services import scheduling
    from tournament_manager.services.standings import standings_update
    from tournament_manager.services.tournaments import tournament_create, tournament_launch

    started = time.perf_counter()
    agents = _upload_agents(plan, report)
    revisions = [Revision.objects.get(pk=pk) for _, pk in agents]
    competitor_strength = {
        revision.competitor_id: -index for index, revision in enumerate(revisions)
    }
    truth = [competitor_strength[revision.competitor_id] for revision in revisions]
    environment = Environment.objects.get(name="connect_four")
    pairs = len(agents) * (len(agents) - 1) // 2
    full = pairs * plan.full_matches
    budgets = [round(share * full) for share in SHARES]

    def tau_of(order: list[int]) -> float:
        position = {competitor: -rank for rank, competitor in enumerate(order)}
        return kendall_tau(truth, [position[r.competitor_id] for r in revisions])

    name_of = {
        revision.competitor_id: name for (name, _), revision in zip(agents, revisions, strict=True)
    }

    def misordered(order: list[int]) -> list[list[str]]:
        """The pairs the order puts the wrong way round, stronger first."""
        rank = {competitor: place for place, competitor in enumerate(order)}
        return [
            [name_of[one.competitor_id], name_of[two.competitor_id]]
            for i, one in enumerate(revisions)
            for two in revisions[i + 1 :]
            if rank[one.competitor_id] > rank[two.competitor_id]
        ]

    def tau_of_standings(table: list[Any]) -> float:
        # Tied participants share a rank, and count as tied.
        rank = {participant.revision.competitor_id: -participant.rank for participant in table}
        return kendall_tau(truth, [rank[r.competitor_id] for r in revisions])

    repetitions = []
    for repetition in range(plan.repetitions):
        # The duels' seeds (and so every match's) come from this repetition's generator.
        generator = random.Random(SEED + repetition)
        # Patched for good (as an assignment would): the next repetition patches it again.
        mock.patch.object(
            scheduling.random, "SystemRandom", lambda generator=generator: generator
        ).start()
        ratings_reset(environment_id=environment.pk)
        ladder = tournament_create(
            environment=environment,
            name=f"ladder {repetition}",
            revisions=[],
            format=TournamentFormat.LADDER,
        )
        tournament_launch(tournament=ladder)
        run = _drive(ladder.pk, until_matches=full, checkpoints=budgets)
        row: dict[str, Any] = {
            "repetition": repetition,
            "ladder": {str(b): round(tau_of(run["orders"][b]), 4) for b in budgets},
            "misordered": {str(b): misordered(run["orders"][b]) for b in budgets},
            "duels_per_pair": _duels_per_pair(ladder.pk, name_of),
            "ladder_matches": run["matches"],
            "ladder_distinct": _distinct_matches(ladder.pk),
        }
        round_robins = {}
        # For each budget, the largest round robin that fits in it and, when that leaves
        # matches over, also the smallest that exceeds it ("<budget>+"): the ladder is
        # compared with a round robin given fewer matches and with one given more.
        variants = [(str(b), max(1, b // pairs)) for b in budgets]
        variants += [(f"{b}+", b // pairs + 1) for b in budgets if b % pairs]
        for key, per_pair in variants:
            tournament = tournament_create(
                environment=environment,
                name=f"round robin {repetition} x{per_pair}",
                revisions=revisions,
                matches_per_duel=per_pair,
            )
            tournament_launch(tournament=tournament)
            _drive(tournament.pk, until_matches=None, checkpoints=[])
            table = standings_update(tournament=tournament)
            round_robins[key] = {
                "matches_per_duel": per_pair,
                "matches": per_pair * pairs,
                "distinct": _distinct_matches(tournament.pk),
                "tau": round(tau_of_standings(table), 4),
            }
        row["round_robin"] = round_robins
        repetitions.append(row)
        report(
            f"repetition {repetition + 1}/{plan.repetitions}: ladder "
            + ", ".join(f"{row['ladder'][str(b)]:.3f}" for b in budgets)
            + "; round robin "
            + ", ".join(f"{round_robins[str(b)]['tau']:.3f}" for b in budgets)
        )
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine_summary(machine()),
        "agents": [name for name, _ in agents],
        "full_matches": full,
        "budgets": budgets,
        "shares": list(SHARES),
        "repetitions": repetitions,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} (range {min(values):.3f} to {max(values):.3f})"


def _counts(distinct: list[int], played: list[int]) -> str:
    return (
        f"median {statistics.median(distinct):g} of {statistics.median(played):g} "
        f"(range {min(distinct)} to {max(distinct)})"
    )


def table(figures: dict[str, Any]) -> str:
    rows = figures["repetitions"]
    lines = [
        f"Ladder against round robin, end to end — {figures['date']}, {figures['machine']}",
        f"agents (true order): {', '.join(figures['agents'])}",
        f"{len(rows)} seeded repetitions; the full round robin is {figures['full_matches']} "
        f"matches; {figures['seconds']} s",
        "",
        f"{'budget':>16}  {'ladder tau':>40}  {'round robin tau':>40}",
    ]
    ladder_at_half = []
    for share, budget in zip(figures["shares"], figures["budgets"], strict=True):
        ladder = [row["ladder"][str(budget)] for row in rows]
        robin = [row["round_robin"][str(budget)]["tau"] for row in rows]
        per_pair = rows[0]["round_robin"][str(budget)]["matches_per_duel"]
        label = f"{share:.0%} ({budget})"
        lines.append(
            f"{label:>16}  {_summary(ladder):>40}  {_summary(robin):>40}"
            f"  (round robin: {per_pair} per pair)"
        )
        over = f"{budget}+"
        if over in rows[0]["round_robin"]:
            above = [row["round_robin"][over]["tau"] for row in rows]
            entry = rows[0]["round_robin"][over]
            lines.append(
                f"{'':>16}  {'':>40}  {_summary(above):>40}"
                f"  (round robin over budget: {entry['matches_per_duel']} per pair, "
                f"{entry['matches']} matches)"
            )
        if share == 0.5:
            ladder_at_half = ladder
    quarter = figures["budgets"][0]
    ladder_quarter = statistics.median(row["ladder"][str(quarter)] for row in rows)
    reached = sum(1 for tau in ladder_at_half if tau >= TARGET_TAU)
    reached_quarter = sum(1 for row in rows if row["ladder"][str(quarter)] >= TARGET_TAU)
    lines += [
        "",
        f"ladder tau >= {TARGET_TAU} at 50 %: {reached} of {len(rows)} repetitions "
        f"(goal: at least 9 of 10): {'met' if reached >= 0.9 * len(rows) else 'NOT met'}",
        f"ladder tau >= {TARGET_TAU} at 25 %: {reached_quarter} of {len(rows)} repetitions "
        f"(goal: at least 9 of 10): {'met' if reached_quarter >= 0.9 * len(rows) else 'NOT met'}",
    ]
    for row in rows:
        wrong = row["misordered"][str(quarter)]
        if wrong:
            lines.append(
                f"  repetition {row['repetition'] + 1} at 25 %: "
                + "; ".join(f"{one} below {two}" for one, two in wrong)
            )
    full = str(figures["budgets"][-1])
    lines.append(
        "distinct matches (identical ones in a duel counted once): ladder "
        + _counts([row["ladder_distinct"] for row in rows], [row["ladder_matches"] for row in rows])
        + "; full round robin "
        + _counts(
            [row["round_robin"][full]["distinct"] for row in rows],
            [row["round_robin"][full]["matches"] for row in rows],
        )
    )
    for key, what in ((str(quarter), "within"), (f"{quarter}+", "over")):
        if key not in rows[0]["round_robin"]:
            continue
        robin_quarter = statistics.median(row["round_robin"][key]["tau"] for row in rows)
        lines.append(
            f"median at 25 %: ladder {ladder_quarter:.3f}, round robin {what} budget "
            f"{robin_quarter:.3f} (goal: the ladder ahead): "
            f"{'met' if ladder_quarter > robin_quarter else 'NOT met'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, sys.modules[__name__], quick_help="smoke run: 3 agents, 2 repetitions")


if __name__ == "__main__":
    sys.exit(main())
