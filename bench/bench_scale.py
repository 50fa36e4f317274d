"""How Arena's cost grows with the size of one competition: 100 to 10,000 agents.

    python -m bench.bench_scale --postgres URL     # 100, 1,000 and 10,000 agents; ~15 min
    python -m bench.bench_scale                    # the same on SQLite (the embedded default)
    python -m bench.bench_scale --quick            # smoke run: 30 and 60 agents
    python -m bench.bench_scale --sizes 100,1000   # chosen sizes

For each size, one environment gets that many competitors, each with a validated revision
entered in one running ladder, and a synthetic history of rated two-match duels in that
ladder (``MATCHES_PER_AGENT`` matches per agent on average: 1,000,000 at 10,000 agents),
shaped as a ladder's is: nine duels in ten against one of the 10 agents nearest in
strength, the tenth against anyone; results drawn from hidden strengths. Then, each the
best of three, with the SQL statements it sent:

idle agents
    ``_ladder_idle_agents``: what a matchmaking pass reads (every entry's duels played,
    whether one is busy, when its last duel ended, its place on the leaderboard), after
    the refit below, as the tournament manager reads it.
pairing pass
    ``Matchmaker.groupings`` on those agents, every one idle, filling
    ``ARENA_LADDER_CONCURRENT_DUELS`` and ``ARENA_ONLINE_CONCURRENT_DUELS`` slots: the
    tournament manager runs one a second.
duel's end
    What a ladder's duel's end costs besides its ratings: the entries' counters and the
    ladder's counts (``tournament_settle(rank_ladder=False)``).
ladder standings
    ``tournament_settle(rerank=True)``: the ladder's standings, a fit of all its matches,
    which the tournament manager computes at most every ``ARENA_LADDER_STANDINGS_SECONDS``.
refit
    ``leaderboard_refit(force=True)``: the published leaderboard's whole fit.
leaderboard page, competitor page
    The environment's page and a competitor's page, as an anonymous visitor gets them
    (Django's test client: the view, its queries and its template; no web server).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.fields import (
    FinishedDuel,
    Tally,
    bench_field,
    finished_duels,
    rated,
    tallied,
    tally_store,
)
from bench.local_site import django_setup, site_environment
from bench.support import machine, machine_summary, throwaway_database

SEED = 20261126
MATCHES_PER_AGENT = 200
#: Of every ten duels, this many against one of the nearest in strength.
NEAR_SHARE = 0.9
NEAREST = 10
#: Duels written to the database at once.
CHUNK = 20_000


@dataclasses.dataclass(frozen=True)
class Plan:
    #: Agents in each field measured.
    sizes: tuple[int, ...]
    matches_per_agent: int


FULL = Plan(sizes=(100, 1_000, 10_000), matches_per_agent=MATCHES_PER_AGENT)
QUICK = Plan(sizes=(30, 60), matches_per_agent=20)


def _duels(agents: int, matches_per_agent: int, rng: random.Random) -> Iterator[tuple[int, int]]:
    """The history's duels as (player 1, player 2), agents numbered by strength."""
    for _ in range(agents * matches_per_agent // 4):
        one = rng.randrange(agents)
        if rng.random() < NEAR_SHARE:
            two = one + rng.choice([-1, 1]) * rng.randint(1, NEAREST)
            if not 0 <= two < agents:
                two = one - (two - one)
        else:
            two = rng.randrange(agents - 1)
            two += two >= one
        yield one, two


def _fill(agents: int, matches_per_agent: int, rng: random.Random) -> tuple[Any, Any, int]:
    """The environment, its ladder and the rated history, written in chunks; returns
    them and the number of matches."""
    from django.db import transaction
    from django.utils import timezone

    from core.models import (
        DuelResult,
        Match,
        Participant,
        Rating,
        Tournament,
        TournamentFormat,
        TournamentStatus,
    )

    name = f"scale_{agents}"
    environment, owner, revisions, ratings = bench_field(name, agents, is_public=True)
    ladder = Tournament.objects.create(
        environment=environment,
        name=f"{name} ladder",
        created_by=owner,
        format=TournamentFormat.LADDER,
        status=TournamentStatus.RUNNING,
        matches_per_duel=2,
        is_public=True,
    )
    Participant.objects.bulk_create(
        Participant(tournament=ladder, revision=revision) for revision in revisions
    )
    strengths = sorted((rng.gauss(0, 1.5) for _ in range(agents)), reverse=True)
    now = timezone.now()
    matches_total = 0
    pending = list(_duels(agents, matches_per_agent, rng))
    tally: Tally = {}
    for start in range(0, len(pending), CHUNK):
        chunk = pending[start : start + CHUNK]
        with transaction.atomic():
            duels = finished_duels(
                environment,
                [
                    FinishedDuel(
                        ladder,
                        seed=start + i,
                        seats=(revisions[one], revisions[two]),
                        ended_at=now - datetime.timedelta(seconds=len(pending) - start - i),
                    )
                    for i, (one, two) in enumerate(chunk)
                ],
            )
            matches = []
            for duel, (one, two) in zip(duels, chunk, strict=True):
                for index in range(2):
                    first, second = (one, two) if index == 0 else (two, one)
                    chance = 1 / (1 + math.exp(-(strengths[first] - strengths[second] + 0.1)))
                    first_won = rng.random() < chance
                    # Scores by seat (seat 1 is ``one``); the first mover alternates.
                    one_won = first_won if index == 0 else not first_won
                    matches.append(
                        Match(
                            duel=duel,
                            index=index,
                            first_player=1 + index,
                            seats=[1, 2] if index == 0 else [2, 1],
                            seed=index,
                            result=DuelResult.PLAYER_1_WIN if one_won else DuelResult.PLAYER_2_WIN,
                            scores=[1.0, 0.0] if one_won else [0.0, 1.0],
                        )
                    )
            matches = Match.objects.bulk_create(matches, batch_size=5_000)
            rated(
                matches,
                [(ratings[one], ratings[two]) for one, two in chunk for _ in range(2)],
                batch_size=10_000,
            )
            tallied(
                matches,
                [(revisions[one], revisions[two]) for one, two in chunk for _ in range(2)],
                tally,
            )
        matches_total += len(matches)
    tally_store(tally, batch_size=10_000)
    # Ratings as the online updates would have left them: by hidden strength.
    for rating, strength in zip(ratings, strengths, strict=True):
        rating.mu, rating.sigma, rating.games = 25 + 3 * strength, 1.5, matches_per_agent
    Rating.objects.bulk_update(ratings, ["mu", "sigma", "games"], batch_size=5_000)
    return environment, ladder, matches_total


def _timed(action: Callable[[], Any], repeats: int = 3) -> tuple[float, int, Any]:
    """The best of ``repeats`` runs' seconds, the SQL statements the first run sent, and
    its result."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    best = math.inf
    statements = 0
    result = None
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            result = action()
            best = min(best, time.perf_counter() - started)
        # The first run's: later reads of a page may come from the pages' cache.
        statements = statements or len(captured.captured_queries)
    return best, statements, result


def measure(plan: Plan, *, report: Callable[[str], None], postgres: str | None = None) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    # A database of its own, dropped afterwards (a SQLite file without a server).
    with throwaway_database(postgres, folder, f"bench_scale_{os.getpid()}") as database_url:
        django_setup({**site_environment(folder), "DATABASE_URL": database_url})
        return _measure(plan, report=report, database=_describe(postgres))


def _describe(server: str | None) -> str:
    if server is None:
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}"
    import psycopg

    with psycopg.connect(server, autocommit=True) as connection:
        [version] = connection.execute("SHOW server_version").fetchone() or ["?"]
    return f"PostgreSQL {version.split()[0]}"


def _field_figures(environment: Any, ladder: Any) -> dict[str, Any]:
    """One field's measurements (see the module's notes)."""
    from django.conf import settings
    from django.test import Client
    from django.utils import timezone

    from tournament_manager.leaderboard import leaderboard_refit
    from tournament_manager.services.ladder import _ladder_idle_agents, ladder_matchmaker
    from tournament_manager.services.settlement import tournament_settle

    agents = environment.competitors.count()
    once = 1 if agents > 1_000 else 3
    end_s, end_q, _ = _timed(lambda: tournament_settle(tournament=ladder, rank_ladder=False))
    settle_s, settle_q, _ = _timed(
        lambda: tournament_settle(tournament=ladder, rerank=True), repeats=once
    )
    refit_s, refit_q, _ = _timed(
        lambda: leaderboard_refit(environment=environment, force=True), repeats=once
    )
    # As in the tournament manager, whose refit step runs before its ladders' passes: the
    # pass reads each entry's place on the leaderboard just fitted.
    now = timezone.now()
    idle_s, idle_q, idle = _timed(lambda: _ladder_idle_agents(ladder, now))
    matchmaker = ladder_matchmaker()
    pass_s, _, pairs = _timed(
        lambda: matchmaker.groupings(
            idle,
            size=2,
            slots=settings.ARENA_LADDER_CONCURRENT_DUELS,
            online_slots=settings.ARENA_ONLINE_CONCURRENT_DUELS,
        )
    )
    client = Client(HTTP_HOST="localhost")
    competitor = environment.competitors.order_by("pk")[agents // 2]
    board_s, board_q, board = _timed(lambda: client.get(environment.get_absolute_url()))
    page_s, page_q, page = _timed(lambda: client.get(competitor.get_absolute_url()))
    assert board.status_code == 200, board.status_code
    assert page.status_code == 200, page.status_code
    return {
        "idle_agents_ms": round(idle_s * 1000, 1),
        "idle_agents_queries": idle_q,
        "pairing_pass_ms": round(pass_s * 1000, 1),
        "pairs": len(pairs),
        "duel_end_ms": round(end_s * 1000, 1),
        "duel_end_queries": end_q,
        "ladder_standings_s": round(settle_s, 3),
        "ladder_standings_queries": settle_q,
        "refit_s": round(refit_s, 3),
        "refit_queries": refit_q,
        "leaderboard_entries": environment.leaderboard_entries.count(),
        "leaderboard_page_ms": round(board_s * 1000, 1),
        "leaderboard_page_queries": board_q,
        "leaderboard_page_kb": round(len(board.content) / 1024, 1),
        "competitor_page_ms": round(page_s * 1000, 1),
        "competitor_page_queries": page_q,
    }


def _measure(plan: Plan, *, report: Callable[[str], None], database: str) -> dict:
    rows = []
    for agents in plan.sizes:
        started = time.perf_counter()
        environment, ladder, matches = _fill(
            agents, plan.matches_per_agent, random.Random(SEED + agents)
        )
        report(
            f"{agents} agents: {matches} matches written in {time.perf_counter() - started:.0f} s"
        )
        row = {"agents": agents, "matches": matches, **_field_figures(environment, ladder)}
        rows.append(row)
        report(", ".join(f"{key} {value}" for key, value in row.items()))
    load = os.getloadavg()
    return {
        "date": datetime.date.today().isoformat(),
        "machine": (
            f"{machine_summary(machine())}, {database}, "
            f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
        ),
        "rows": rows,
    }


COLUMNS = (
    ("agents", "agents"),
    ("matches", "matches"),
    ("idle agents ms (queries)", ("idle_agents_ms", "idle_agents_queries")),
    ("pairing pass ms", "pairing_pass_ms"),
    ("duel's end ms (queries)", ("duel_end_ms", "duel_end_queries")),
    ("ladder standings s (queries)", ("ladder_standings_s", "ladder_standings_queries")),
    ("refit s (queries)", ("refit_s", "refit_queries")),
    ("leaderboard page ms (queries)", ("leaderboard_page_ms", "leaderboard_page_queries")),
    ("competitor page ms (queries)", ("competitor_page_ms", "competitor_page_queries")),
)


def table(figures: dict[str, Any]) -> str:
    lines = [f"One environment, growing — {figures['date']}, {figures['machine']}", ""]
    lines.append("| " + " | ".join(title for title, _ in COLUMNS) + " |")
    lines.append("|" + "---:|" * len(COLUMNS))
    for row in figures["rows"]:
        cells = []
        for _, key in COLUMNS:
            if isinstance(key, tuple):
                cells.append(f"{row[key[0]]} ({row[key[1]]})")
            else:
                cells.append(f"{row[key]:,}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server (default: SQLite)")


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="smoke run: 30 and 60 agents, 20 matches each",
        plan_options={"sizes": "the fields' sizes, e.g. 100,1000 (100, 1,000 and 10,000)"},
        add_options=_options,
    )


if __name__ == "__main__":
    sys.exit(main())
