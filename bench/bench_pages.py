"""The public pages under concurrent readers, through gunicorn, before and after (issue 27).

    python -m bench.bench_pages                  # baseline and this checkout, 30 s each, ~4 min
    python -m bench.bench_pages --quick          # smoke run: a small history, 5 s each
    python -m bench.bench_pages --baseline REV --agents N --duels N --seconds N --readers N
                                 --workers N --json PATH

The production path: a PostgreSQL server, a Redis server (the cache, where the deploy
keeps it: ``ARENA_CACHE_URL``), and the site served by ``gunicorn core.wsgi:application``
with debug off, as ``docker-compose.yml`` runs it (``--workers``: 4 by default, the
figure the issue measured; the compose file's ``ARENA_WEB_WORKERS`` is 3), all throwaway.

The history, written in bulk into one database before anything is timed (the same for
both checkouts): one Connect Four environment with ``agents`` public competitors (a
validated revision each, ten owners), a continuous ladder of ``duels`` finished two-match
duels between random pairs (real games: each match's moves are a random player's, so its
replay plays back), two rating changes per match (the competitors' rating charts), a
finished round robin of twelve of them, and the published leaderboard, fitted by
``leaderboard_refit``.

Two checkouts: the baseline (``--baseline``: a git revision, checked out in a temporary
``git worktree``, by default the last commit; or a folder) and the
candidate (this checkout, uncommitted changes included). Each serves the same database
in turn (the baseline first), started afresh; every page is read once (a warm-up, which
also leaves out the page kinds a checkout does not have), then ``readers`` readers (32)
read pages one after another for ``seconds``, each on a new connection (gunicorn's sync
workers close it after each response), taking the pages in turn from a shuffled list:
the home page, the environment's page, its leaderboard, the ladder's and the round
robin's pages, 40 duels, their first matches' replays and 40 competitors' pages.
Printed per checkout and page: requests/s, median and 99th percentile latency (from
the connection's opening to the response's last byte), errors (any status but 200);
then the totals. The readers are anonymous visitors, the public. The machine's load
(``/proc/loadavg``) before each checkout's run is printed with it: other work on the
machine shares its cores with the server and the readers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.fields import (
    FinishedDuel,
    finished_duels,
    tallied,
    tally_store,
    validated_revisions,
)
from bench.local_site import django_setup
from bench.support import (
    REPOSITORY,
    ROLES,
    checkouts_prepare,
    machine,
    machine_summary,
    postgres_server,
    process_cpu_seconds,
    stop_process_group,
)

SEED = 20261127
#: The last commit, against this checkout's uncommitted changes. Issue 27 measured its
#: pages against c91c05a, the commit before that work; that checkout no longer serves
#: today's database (its schema is hundreds of commits older): every page answers 500.
BASELINE = "HEAD"
ENVIRONMENT = "connect_four"
#: Pages of each kind in the readers' list.
SAMPLED = 40
#: How long a reader waits for a page: one that takes longer counts as an error (a page
#: that never answers would otherwise hold the run for ever).
READ_TIMEOUT = 30.0


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: int
    duels: int
    seconds: float
    readers: int
    workers: int
    baseline: str


FULL = Plan(agents=200, duels=4000, seconds=30, readers=32, workers=4, baseline=BASELINE)
QUICK = Plan(agents=30, duels=200, seconds=5, readers=8, workers=2, baseline=BASELINE)


# --- the history ---------------------------------------------------------------------


def _random_game(seed: int) -> dict[str, Any]:
    """A Connect Four match of two random players: its moves and scores by seat."""
    from environments.registry import make_environment

    rng = random.Random(seed)
    game = make_environment(ENVIRONMENT)
    game.reset(seed)
    actions: list[list[Any]] = []
    while not game.is_terminal():
        chosen = {player: rng.choice(game.legal_actions(player)) for player in game.to_move()}
        game.step(chosen)
        actions.append([chosen.get(seat) for seat in range(game.num_players)])
    return {"actions": actions, "scores": game.scores()}


def fill(plan: Plan, rng: random.Random) -> dict[str, list[str]]:
    """Write the history; returns the pages to read, by kind."""
    from django.utils import timezone

    from core.models import (
        Competitor,
        DuelResult,
        Match,
        Participant,
        Rating,
        RatingChange,
        Tournament,
        TournamentFormat,
        TournamentStatus,
    )
    from core.services.accounts import user_create
    from core.services.environments import environments_import
    from tournament_manager.leaderboard import leaderboard_refit

    environment = next(row for row in environments_import() if row.name == ENVIRONMENT)
    owners = [
        user_create(
            email=f"owner-{number}@example.com",
            display_name=f"Owner {number}",
            password="a long bench password 2026",
        )
        for number in range(10)
    ]
    competitors = Competitor.objects.bulk_create(
        Competitor(
            owner=owners[number % len(owners)],
            environment=environment,
            name=f"agent-{number}",
            is_public=True,
        )
        for number in range(plan.agents)
    )
    revisions = validated_revisions(competitors)
    ratings = Rating.objects.bulk_create(Rating(competitor=c) for c in competitors)
    organizer = owners[0]
    now = timezone.now()
    ladder = Tournament.objects.create(
        environment=environment,
        name="Bench ladder",
        format=TournamentFormat.LADDER,
        created_by=organizer,
        matches_per_duel=2,
        is_public=True,
        status=TournamentStatus.RUNNING,
        started_at=now,
        duels_total=plan.duels,
        duels_done=plan.duels,
    )
    Participant.objects.bulk_create(
        Participant(tournament=ladder, revision=revision) for revision in revisions
    )
    entrants = revisions[:12]
    round_robin = Tournament.objects.create(
        environment=environment,
        name="Bench round robin",
        created_by=organizer,
        matches_per_duel=2,
        is_public=True,
        status=TournamentStatus.COMPLETED,
        started_at=now,
        ended_at=now,
        duels_total=66,
        duels_done=66,
    )
    Participant.objects.bulk_create(
        Participant(tournament=round_robin, revision=revision, rank=rank)
        for rank, revision in enumerate(entrants, start=1)
    )
    pairs = [tuple(rng.sample(range(plan.agents), 2)) for _ in range(plan.duels)]
    in_ladder = len(pairs)
    pairs += [
        (revisions.index(one), revisions.index(two))
        for index, one in enumerate(entrants)
        for two in entrants[index + 1 :]
    ]
    duels = finished_duels(
        environment,
        [
            FinishedDuel(
                ladder if number < in_ladder else round_robin,
                seed=number,
                seats=(revisions[one], revisions[two]),
                ended_at=now,
                started_at=now,
            )
            for number, (one, two) in enumerate(pairs)
        ],
    )
    matches = []
    for duel in duels:
        for index in range(2):
            played = _random_game(duel.seed * 2 + index)
            seats = [1, 2] if index == 0 else [2, 1]
            scores = [played["scores"][seats.index(player)] for player in (1, 2)]
            matches.append(
                Match(
                    duel=duel,
                    index=index,
                    first_player=seats[0],
                    seats=seats,
                    seed=duel.seed * 2 + index,
                    actions=played["actions"],
                    timings=[
                        [None if action is None else 0.001 for action in step]
                        for step in played["actions"]
                    ],
                    steps=len(played["actions"]),
                    scores=scores,
                    result=DuelResult.DRAW
                    if scores[0] == scores[1]
                    else DuelResult.PLAYER_1_WIN
                    if scores[0] > scores[1]
                    else DuelResult.PLAYER_2_WIN,
                    duration=0.05,
                )
            )
    matches = Match.objects.bulk_create(matches, batch_size=2000)
    mu = {rating.pk: rating.mu for rating in ratings}
    changes = []
    for number, match in enumerate(matches):
        one, two = pairs[number // 2]
        for agent, score, other in ((one, *match.scores), (two, *reversed(match.scores))):
            rating = ratings[agent]
            before = mu[rating.pk]
            mu[rating.pk] = before + (0.3 if score > other else -0.2 if score < other else 0)
            changes.append(
                RatingChange(
                    rating=rating,
                    duel_id=match.duel_id,
                    match=match,
                    mu_before=before,
                    sigma_before=8,
                    mu_after=mu[rating.pk],
                    sigma_after=7,
                )
            )
    RatingChange.objects.bulk_create(changes, batch_size=4000)
    seated = [(revisions[one], revisions[two]) for one, two in pairs]
    tally_store(tallied(matches, [seated[i // 2] for i in range(len(matches))], {}), 4000)
    for rating in ratings:
        rating.mu = mu[rating.pk]
        rating.sigma = 7
    Rating.objects.bulk_update(ratings, ["mu", "sigma"], batch_size=1000)
    leaderboard_refit(environment=environment, force=True)
    shown = rng.sample(duels, min(SAMPLED, len(duels)))
    return {
        "home": ["/"],
        "environment": [environment.get_absolute_url()],
        "leaderboard": [environment.get_absolute_url() + "leaderboard/"],
        "tournament": [ladder.get_absolute_url(), round_robin.get_absolute_url()],
        "duel": [duel.get_absolute_url() for duel in shown],
        "replay": [f"/duels/{duel.pk}/matches/0/" for duel in shown],
        "competitor": [
            competitor.get_absolute_url()
            for competitor in rng.sample(competitors, min(SAMPLED, len(competitors)))
        ],
    }


# --- the server and the readers ----------------------------------------------------------


def _server_environment(database_url: str, cache_url: str, folder: Path) -> dict[str, str]:
    """Production's settings for the site (``docker-compose.yml``'s web service)."""
    return {
        "DATABASE_URL": database_url,
        "ARENA_CACHE_URL": cache_url,
        # Redis in production; no page read here sends a task.
        "ARENA_BROKER_URL": cache_url.rsplit("/", 1)[0] + "/0",
        "ARENA_ONLINE_BUS_URL": cache_url.rsplit("/", 1)[0] + "/1",
        "ARENA_DEBUG": "0",
        "ARENA_SECRET_KEY": "bench-" + "k" * 50,
        "ARENA_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ARENA_VAR_DIR": str(folder / "var"),
        "ARENA_MEDIA_ROOT": str(folder / "media"),
    }


def _cpu_seconds(master: int) -> float:
    """CPU seconds (user and system) of gunicorn's master and its workers so far."""
    try:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return 0.0
    total = 0.0
    for pid in [master, *map(int, children)]:
        with contextlib.suppress(OSError):  # a worker that ended meanwhile
            total += process_cpu_seconds(pid)
    return total


@contextlib.contextmanager
def _gunicorn(
    checkout: Path, environment: dict[str, str], workers: int
) -> Iterator[tuple[int, int]]:
    """``gunicorn core.wsgi:application`` run from ``checkout``, as the deploy runs it;
    yields its port and its master's pid once it answers."""
    from tests.support.redis import free_port

    port = free_port()
    command = [sys.executable, "-P", "-m", "gunicorn", "core.wsgi:application"]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--timeout", "60"]
    server = subprocess.Popen(
        command,
        cwd=checkout,
        env={**os.environ, **environment, "PYTHONPATH": str(checkout)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while asyncio.run(_read(port, "/healthz"))[0] != 200:
            if server.poll() is not None or time.monotonic() > deadline:
                problem = server.stderr.read().decode(errors="replace") if server.stderr else ""
                raise SystemExit(f"bench_pages: gunicorn did not start\n{problem[-3000:]}")
            time.sleep(0.2)
        yield port, server.pid
    finally:
        stop_process_group(server, timeout=30)


async def _read(port: int, path: str) -> tuple[int, float]:
    """GET ``path`` on a new connection: (status, seconds); status 0 when it failed or took
    more than ``READ_TIMEOUT``."""
    started = time.perf_counter()
    try:
        response = await asyncio.wait_for(_get(port, path), READ_TIMEOUT)
        status = int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError, TimeoutError):
        status = 0
    return status, time.perf_counter() - started


async def _get(port: int, path: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


@dataclasses.dataclass
class Tally:
    seconds: list[float] = dataclasses.field(default_factory=list)
    errors: int = 0


async def _readers(
    port: int, pages: list[tuple[str, str]], readers: int, seconds: float
) -> dict[str, Tally]:
    """``readers`` readers reading ``pages`` in turn (each from its own place in the list)
    for ``seconds``."""
    tallies = {kind: Tally() for kind, _ in pages}
    stop = time.perf_counter() + seconds

    async def reader(start: int) -> None:
        index = start
        while time.perf_counter() < stop:
            kind, path = pages[index % len(pages)]
            index += 1
            status, elapsed = await _read(port, path)
            tally = tallies[kind]
            tally.seconds.append(elapsed)
            if status != 200:
                tally.errors += 1

    await asyncio.gather(*(reader(number * len(pages) // readers) for number in range(readers)))
    return tallies


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def serve_and_read(
    checkout: Path,
    environment: dict[str, str],
    pages_by_kind: dict[str, list[str]],
    plan: Plan,
    rng: random.Random,
) -> dict[str, Any]:
    """One checkout's run: the server started afresh, a warm-up, then the readers."""
    load = _load()
    with _gunicorn(checkout, environment, plan.workers) as (port, master):
        missing = []
        for kind, paths in pages_by_kind.items():
            for path in paths:
                # A kind is left out at its first page that fails: a checkout whose pages
                # time out would otherwise spend READ_TIMEOUT on each of them.
                status, _seconds = asyncio.run(_read(port, path))
                if status != 200:
                    print(
                        f"bench_pages: {checkout.name}: {path} answered "
                        f"{status or 'nothing in time'}: its kind ({kind}) is left out",
                        file=sys.stderr,
                    )
                    missing.append(kind)
                    break
        pages = [(k, p) for k, paths in pages_by_kind.items() if k not in missing for p in paths]
        if not pages:
            raise SystemExit(
                f"bench_pages: {checkout} served none of the pages (above): it cannot serve "
                "this database (a checkout much older than its schema?); pick another "
                "--baseline"
            )
        # Each kind as often as the others: the lists of duels and replays are longer.
        weights = {kind: len(paths) for kind, paths in pages_by_kind.items()}
        pages = [page for page in pages for _ in range(SAMPLED // weights[page[0]] or 1)]
        rng.shuffle(pages)
        started, server_cpu, readers_cpu = (
            time.perf_counter(),
            _cpu_seconds(master),
            time.process_time(),
        )
        tallies = asyncio.run(_readers(port, pages, plan.readers, plan.seconds))
        wall = time.perf_counter() - started
        server_cpu = _cpu_seconds(master) - server_cpu
        readers_cpu = time.process_time() - readers_cpu
    rows = {}
    for kind, tally in tallies.items():
        rows[kind] = {
            "requests": len(tally.seconds),
            "per_second": len(tally.seconds) / wall,
            "p50_ms": 1000 * statistics.median(tally.seconds) if tally.seconds else None,
            "p99_ms": 1000 * _percentile(tally.seconds, 0.99) if tally.seconds else None,
            "errors": tally.errors,
        }
    everything = [elapsed for tally in tallies.values() for elapsed in tally.seconds]
    rows["all"] = {
        "requests": len(everything),
        "per_second": len(everything) / wall,
        "p50_ms": 1000 * statistics.median(everything),
        "p99_ms": 1000 * _percentile(everything, 0.99),
        "errors": sum(tally.errors for tally in tallies.values()),
    }
    served = max(len(everything), 1)
    return {
        "load_before": load,
        "load_after": _load(),
        "missing": missing,
        "pages": rows,
        "server_cpu_ms_per_request": 1000 * server_cpu / served,
        "readers_cpu_ms_per_request": 1000 * readers_cpu / served,
    }


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    from tests.support.redis import redis_server

    rng = random.Random(SEED)
    with contextlib.ExitStack() as stack:
        folder = Path(tempfile.mkdtemp(prefix="arena-bench-pages-"))
        stack.callback(subprocess.run, ["rm", "-rf", str(folder)], check=False)
        checkouts = checkouts_prepare(plan.baseline, str(REPOSITORY), folder, stack)
        database_url = stack.enter_context(postgres_server())
        cache_url = stack.enter_context(redis_server()).rsplit("/", 1)[0] + "/2"
        report(f"bench_pages: {plan.agents} agents, {plan.duels} ladder duels: writing them")
        started = time.perf_counter()
        environment = _server_environment(database_url, cache_url, folder)
        django_setup(environment)
        pages_by_kind = fill(plan, rng)
        report(f"bench_pages: history written in {time.perf_counter() - started:.0f} s")
        runs = {}
        for role in ROLES:
            checkout = checkouts[role]
            report(f"bench_pages: {role} ({checkout.commit}), {plan.seconds:.0f} s of readers")
            runs[role] = serve_and_read(
                checkout.path, environment, pages_by_kind, plan, random.Random(SEED)
            )
        return {
            "plan": dataclasses.asdict(plan),
            "machine": machine_summary(machine()),
            "checkouts": {role: checkout.figures() for role, checkout in checkouts.items()},
            "runs": runs,
        }


def table(figures: dict[str, Any]) -> str:
    plan = figures["plan"]
    lines = [
        f"{plan['readers']} readers, gunicorn {plan['workers']} workers, {plan['seconds']:.0f} s "
        f"each; {plan['agents']} agents, {plan['duels']} ladder duels; {figures['machine']}",
    ]
    for role, run in figures["runs"].items():
        checkout = figures["checkouts"][role]
        lines.append("")
        lines.append(
            f"{role} {checkout['commit']}: load before {run['load_before']}, after "
            f"{run['load_after']}"
            + (f"; not in it: {', '.join(run['missing'])}" if run["missing"] else "")
        )
        lines.append(
            f"CPU per request: gunicorn {run['server_cpu_ms_per_request']:.2f} ms, the readers "
            f"{run['readers_cpu_ms_per_request']:.2f} ms"
        )
        lines.append(f"{'page':<12} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
        for kind, row in run["pages"].items():
            if not row["requests"]:
                continue
            lines.append(
                f"{kind:<12} {row['per_second']:>8.1f} {row['p50_ms']:>8.1f} "
                f"{row['p99_ms']:>8.1f} {row['errors']:>7}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="a small history, 5 s a checkout",
        plan_options={
            "baseline": f"a git revision or folder ({BASELINE})",
            "agents": "competitors (200)",
            "duels": "the ladder's duels (4000)",
            "seconds": "how long each checkout's pages are read (30)",
            "readers": "readers at once (32)",
            "workers": "the site's gunicorn workers (4)",
        },
    )


if __name__ == "__main__":
    sys.exit(main())
