"""A long soak of a 50-agent ladder, with a worker killed and the broker restarted once.

    python -m bench.bench_soak                         # the embedded default, 30 minutes
    python -m bench.bench_soak --stack compose         # docker-compose.yml, 30 minutes
    python -m bench.bench_soak --minutes 10 --sample-seconds 20
    python -m bench.bench_soak --quick                 # embedded, 6 agents, 2 minutes (smoke run)
    python -m bench.bench_soak --json PATH

A fresh site (``--stack``):

embedded
    The README's first command's way of serving: ``manage.py run_gateway --manager`` on a
    throwaway ``ARENA_VAR_DIR`` (SQLite, the embedded broker in ``var/broker.sqlite3``,
    the ``process`` sandbox), which runs the watchdog and the tournament manager in its
    process and the Celery worker as its child. This process reads the same database.
compose
    ``docker-compose.yml`` of a fresh clone of this checkout's HEAD (committed code only),
    built and started as ``tests/deploy`` do (``tests.support.compose_stack``: images built
    locally, never pulled; its test settings, a 10 s duel lease among them); figures read
    by ``manage.py shell`` in the web container.

Then 50 Connect Four agents are uploaded (the random and kaggle-style example players and
the example minimax at depths 1 to 3 with blunder rates 0 to 0.75: graded strengths),
built and validated by the site's own workers, and entered in one ladder, which the
tournament manager plays for ``--minutes``. Partway through, once each:

worker killed
    At a sixth of the run, SIGKILL to the duel worker, as a crash or the OOM killer would:
    the embedded Celery worker's whole process group (its owner starts it again); on
    compose, the main process of the ``worker-duels`` container (its restart policy starts
    it again).
broker restarted
    At a third of the run. Compose: ``docker-compose restart redis``. The embedded broker
    is a SQLite file with no server of its own: what restarts it is restarting the
    processes that hold it, the gateway and its worker (SIGTERM to ``run_gateway``, which
    stops its worker in order, then the same command again), as an operator restarting
    the embedded site would.

Every ``--sample-seconds`` (30): the ladder's duels (created, finished, failed, queued or
running), jobs stuck (running with a lease expired more than ``STUCK_SLACK_SECONDS`` ago,
which the watchdog should have taken back; queued past their re-send time by as much,
which it should have sent again), the oldest waiting job, and the resident memory of the
site's processes: the gateway, the worker (its main process and its pool), the manager
and web processes on compose, and the agents alive (agents that outlive their duel
leak). At the end the ladder is stopped, its running duels finish, and:

no stuck job
    No sample saw a stuck job, and every job has finished once the ladder stopped.
every duel counted once
    The ladder's counters equal its stored duels; each finished duel has its matches and a
    rating change per match and player (``matches x players``), none for a duel that did
    not finish; each rating's changes chain (each starts where the previous ended: none
    lost, none applied twice); the standings' wins, draws and losses add up to two per duel.
memory flat
    Over the part of the run after the restart (from ``WARM_UP_SECONDS`` after it), each
    process's mean resident memory over the last third within ``FLAT_TOLERANCE`` (or
    ``FLAT_FLOOR_MB``) of the first third's; the least-squares slope is reported.

The machine's load (1-minute average) is in every sample.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import io
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.support import (
    PLAYERS,
    REPOSITORY,
    games_import,
    machine,
    machine_summary,
    wait_until,
)

ENVIRONMENT = "connect_four"
OWNER_EMAIL = "soak@example.org"
#: A job past its lease or its re-send time by this much was missed by the watchdog
#: (it runs every second).
STUCK_SLACK_SECONDS = 30.0
#: When the disruptions come, as shares of the run.
KILL_AT = 1 / 6
RESTART_AT = 1 / 3
#: Memory is judged from this long after the restart (imports, caches, pools filling).
WARM_UP_SECONDS = 120.0
FLAT_TOLERANCE = 0.10
FLAT_FLOOR_MB = 5.0
#: After the ladder stops, how long its running duels may take to finish (a lease to run
#: out, a lost message's re-send).
DRAIN_SECONDS = 420.0


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: int
    minutes: float
    sample_seconds: float
    #: Settings of the embedded site besides its defaults.
    settings: tuple[tuple[str, str], ...] = ()
    warm_up_seconds: float = WARM_UP_SECONDS
    drain_seconds: float = DRAIN_SECONDS
    #: Whether the run is long enough to say whether memory grows.
    judge_memory: bool = True


FULL = Plan(agents=50, minutes=30, sample_seconds=30)
# A short run sees the killed worker's duel taken back and a lost message sent again.
QUICK = Plan(
    agents=6,
    minutes=2,
    sample_seconds=5,
    settings=(("ARENA_DUEL_LEASE_SECONDS", "10"), ("ARENA_RESEND_AFTER_SECONDS", "20")),
    warm_up_seconds=10,
    drain_seconds=120,
    judge_memory=False,
)


# --- the agents -------------------------------------------------------------------------


def agent_names(count: int) -> list[str]:
    """Names of ``count`` agents of graded strength: random, kaggle-style, then minimax at
    depths 1 to 3 with blunder rates 0, 0.05, ... (``minimax-d2-b0.15``)."""
    names = ["random", "kaggle-style"]
    step = 0
    while len(names) < count:
        for depth in (1, 2, 3):
            names.append(f"minimax-d{depth}-b{step * 0.05:.2f}")
        step += 1
    return names[:count]


def agent_zip(name: str, players: Path = PLAYERS) -> bytes:
    """The upload of agent ``name`` (``agent_names``): a zip with ``main.py``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if name == "random":
            archive.writestr("main.py", (players / "random_player.py").read_text())
        elif name == "kaggle-style":
            archive.writestr("main.py", (players / "kaggle_style.py").read_text())
        else:
            depth, rate = name.removeprefix("minimax-d").split("-b")
            archive.writestr("minimax.py", (players / "minimax.py").read_text())
            archive.writestr(
                "main.py",
                "import os\n\n"
                f'os.environ["ARENA_MINIMAX_DEPTH"] = "{depth}"\n'
                f'os.environ["ARENA_BLUNDER_RATE"] = "{rate}"\n\n'
                "from minimax import MinimaxPlayer  # noqa: E402\n\n\n"
                "class SoakPlayer(MinimaxPlayer):\n"
                "    pass\n",
            )
    return buffer.getvalue()


# --- what runs on the site (in this process, or in the compose stack's web container) -----


def site_upload(count: int) -> dict[str, Any]:
    """Import the games, make the owner, upload ``count`` agents (their builds and
    validations queued for the site's workers)."""
    from django.db import transaction

    from core.models import Environment, User
    from core.services.accounts import user_create
    from core.services.revisions import competitor_get_or_create, revision_create

    games_import()
    owner = User.objects.filter(email=OWNER_EMAIL).first() or user_create(
        email=OWNER_EMAIL, display_name="Soak", password="a long soak password 2026"
    )
    environment = Environment.objects.get(name=ENVIRONMENT)
    players = REPOSITORY / "example_players" / ENVIRONMENT
    for name in agent_names(count):
        with transaction.atomic():
            competitor = competitor_get_or_create(
                owner=owner, environment=environment, name=name, is_public=True
            )
            revision_create(
                competitor=competitor,
                uploaded_by=owner,
                filename=f"{name}.zip",
                content=agent_zip(name, players),
            )
    return {"uploaded": count}


def site_validated() -> dict[str, Any]:
    """The uploads validated so far, and those whose build or validation failed."""
    from core.models import Job, JobStatus, Revision

    revisions = Revision.objects.filter(competitor__environment__name=ENVIRONMENT)
    failed = Job.objects.filter(revision__in=revisions, status=JobStatus.FAILED)
    return {
        "validated": revisions.validated().count(),
        "failed": [f"{job.revision}: {job.kind}: {job.error[:300]}" for job in failed],
    }


def site_launch() -> dict[str, Any]:
    """The ladder of every validated agent, launched: its id."""
    from core.models import Environment, Revision, TournamentFormat
    from tournament_manager.services.tournaments import tournament_create, tournament_launch

    environment = Environment.objects.get(name=ENVIRONMENT)
    revisions = Revision.objects.validated().filter(competitor__environment=environment)
    ladder = tournament_create(
        environment=environment,
        name="Soak ladder",
        revisions=list(revisions),
        format=TournamentFormat.LADDER,
    )
    ladder = tournament_launch(tournament=ladder)
    return {"ladder": ladder.pk, "matches_per_duel": ladder.matches_per_duel}


def site_stop(ladder_id: int) -> dict[str, Any]:
    from core.models import Tournament
    from tournament_manager.services.tournaments import tournament_stop

    tournament_stop(tournament=Tournament.objects.get(pk=ladder_id))
    return {"stopped": ladder_id}


def site_probe(ladder_id: int, *, final: bool = False) -> dict[str, Any]:
    """The ladder's duels and the jobs as they stand; with ``final``, the checks that
    every duel was counted once."""
    from django.db.models import Count, Min
    from django.utils import timezone

    from core.models import Duel, DuelStatus, Job, JobStatus, Tournament

    now = timezone.now()
    slack = datetime.timedelta(seconds=STUCK_SLACK_SECONDS)
    ladder = Tournament.objects.get(pk=ladder_id)
    duels = Duel.objects.filter(tournament=ladder)
    by_status = dict(duels.order_by().values_list("status").annotate(count=Count("pk")))
    waiting = Job.objects.exclude(status__in=(JobStatus.SUCCEEDED, JobStatus.FAILED, "cancelled"))
    stuck_running = waiting.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now - slack)
    stuck_queued = waiting.filter(status=JobStatus.QUEUED, resend_at__lt=now - slack)
    oldest = waiting.aggregate(queued=Min("created_at"))["queued"]
    figures: dict[str, Any] = {
        "duels": sum(by_status.values()),
        "succeeded": by_status.get(DuelStatus.SUCCEEDED, 0),
        "failed": by_status.get(DuelStatus.FAILED, 0),
        "cancelled": by_status.get(DuelStatus.CANCELLED, 0),
        "active": by_status.get(DuelStatus.QUEUED, 0) + by_status.get(DuelStatus.RUNNING, 0),
        "running": by_status.get(DuelStatus.RUNNING, 0),
        "jobs_waiting": waiting.count(),
        "oldest_waiting_seconds": round((now - oldest).total_seconds(), 1) if oldest else 0.0,
        "stuck": [
            f"{job} ({job.status}, lease to {job.lease_expires_at}, re-send at {job.resend_at})"
            for job in [*stuck_running, *stuck_queued]
        ],
        "retried": duels.filter(job__attempts__gt=1).count(),
        "resent": duels.filter(job__resends__gt=0).count(),
        "ladder_status": ladder.status,
        # Its standings count every duel that ended (the manager's pass after the last).
        "ranked": ladder.ranked_duels == ladder.duels_done,
    }
    if final:
        figures["checks"] = _counted_once(ladder)
    return figures


def _counted_once(ladder: Any) -> dict[str, Any]:
    """What must hold of a ladder whose duels all ended, each a list of what broke it."""
    from django.db.models import Count, Q, Sum

    from core.models import Duel, DuelStatus, Participant, RatingChange

    duels = Duel.objects.filter(tournament=ladder).annotate(
        stored_matches=Count("matches", distinct=True),
        seat_count=Count("seats", distinct=True),
        rating_changes=Count("ratingchange", distinct=True),
    )
    succeeded = duels.filter(status=DuelStatus.SUCCEEDED)
    problems: dict[str, list[str]] = {
        "counters": [],
        "matches": [],
        "rating_changes": [],
        "unfinished_counted": [],
        "rating_chains": [],
        "standings": [],
        "waiting_jobs": [],
    }
    ladder.refresh_from_db()
    counts = {
        "duels_total": duels.count(),
        "duels_done": succeeded.count(),
        "duels_failed": duels.filter(status=DuelStatus.FAILED).count(),
    }
    for field, stored in counts.items():
        if getattr(ladder, field) != stored:
            problems["counters"].append(f"{field} = {getattr(ladder, field)}, stored {stored}")
    for duel in succeeded:
        if duel.stored_matches != duel.num_matches:
            problems["matches"].append(
                f"duel {duel.pk}: {duel.stored_matches} matches of {duel.num_matches}"
            )
        if duel.rating_changes != duel.stored_matches * duel.seat_count:
            problems["rating_changes"].append(
                f"duel {duel.pk}: {duel.rating_changes} rating changes for "
                f"{duel.stored_matches} matches x {duel.seat_count} players"
            )
    for duel in duels.exclude(status=DuelStatus.SUCCEEDED).filter(
        Q(stored_matches__gt=0) | Q(rating_changes__gt=0)
    ):
        problems["unfinished_counted"].append(
            f"duel {duel.pk} ({duel.status}): {duel.stored_matches} matches, "
            f"{duel.rating_changes} rating changes"
        )
    # Each rating's history: every change starts where the previous one ended.
    previous: dict[int, float] = {}
    for change in RatingChange.objects.order_by("rating_id", "pk").only(
        "rating_id", "mu_before", "mu_after"
    ):
        if change.rating_id in previous and previous[change.rating_id] != change.mu_before:
            problems["rating_chains"].append(
                f"rating {change.rating_id}: change {change.pk} starts at {change.mu_before}, "
                f"the previous ended at {previous[change.rating_id]}"
            )
        previous[change.rating_id] = change.mu_after
    record = Participant.objects.filter(tournament=ladder).aggregate(
        games=Sum("wins") + Sum("draws") + Sum("losses")
    )["games"]
    seats = sum(duel.seat_count for duel in succeeded)
    if (record or 0) != seats:
        problems["standings"].append(
            f"wins + draws + losses = {record}, for {seats} seats of finished duels"
        )
    from core.models import Job, JobStatus

    for job in Job.objects.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)):
        problems["waiting_jobs"].append(f"{job} is still {job.status}")
    return {
        "duels": counts["duels_total"],
        "succeeded": counts["duels_done"],
        "matches": sum(duel.stored_matches for duel in succeeded),
        "rating_changes": sum(duel.rating_changes for duel in succeeded),
        "problems": problems,
    }


COMMANDS: dict[str, Callable[..., dict[str, Any]]] = {
    "upload": site_upload,
    "validated": site_validated,
    "launch": site_launch,
    "stop": site_stop,
    "probe": site_probe,
}


def site_command(command: str, arguments: dict[str, Any]) -> None:
    """Run one of ``COMMANDS`` and print its answer as one line of JSON (``manage.py
    shell`` in the compose stack's web container runs this)."""
    print(json.dumps(COMMANDS[command](**arguments), default=str))


# --- memory -------------------------------------------------------------------------------

#: Figures of ``memory()`` that count processes rather than megabytes.
COUNTS = ("worker_processes", "agents")


@dataclasses.dataclass(frozen=True)
class Process:
    pid: int
    parent: int
    rss_mb: float
    command: str
    folder: str


def processes() -> dict[int, Process]:
    """Every process of the machine that can be read: its parent, resident memory,
    command line and working folder."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                folder = os.readlink(entry / "cwd")
            except OSError:
                folder = ""
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss = int(fields.get("VmRSS", "0 kB").split()[0]) / 1024
        found[int(entry.name)] = Process(
            int(entry.name), int(fields["PPid"]), rss, command.strip(), folder
        )
    return found


def descendants(table: dict[int, Process], root: int) -> list[Process]:
    children: dict[int, list[int]] = {}
    for process in table.values():
        children.setdefault(process.parent, []).append(process.pid)
    found, pending = [], list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(table[pid])
        pending.extend(children.get(pid, []))
    return found


def _trend(points: list[tuple[float, float]]) -> dict[str, Any]:
    """Medians of the first and last thirds (a pool process being replaced doubles the
    pool for a moment), their change, and the least-squares slope."""
    if len(points) < 6:
        return {"samples": len(points)}
    third = len(points) // 3
    first = statistics.median(value for _, value in points[:third])
    last = statistics.median(value for _, value in points[-third:])
    times = [moment for moment, _ in points]
    values = [value for _, value in points]
    slope = statistics.linear_regression(times, values).slope if len(set(times)) > 1 else 0.0
    growth = last - first
    return {
        "samples": len(points),
        "first_third_mb": round(first, 1),
        "last_third_mb": round(last, 1),
        "growth_mb": round(growth, 1),
        "slope_mb_per_hour": round(slope * 3600, 1),
        "flat": growth <= max(FLAT_TOLERANCE * first, FLAT_FLOOR_MB),
    }


# --- the two stacks ---------------------------------------------------------------------------


class EmbeddedSite:
    """``manage.py run_gateway --manager`` of the checkout ``root`` on a throwaway var
    folder, with ``settings`` besides the defaults."""

    name = "embedded"
    #: Processes whose memory is judged flat.
    judged = ("gateway", "worker")

    def __init__(
        self, settings: dict[str, str], report: Callable[[str], None], *, root: Path = REPOSITORY
    ) -> None:
        from tests.support.redis import free_port

        self.report = report
        self.root = root
        self.folder = Path(tempfile.mkdtemp(prefix="arena-soak-"))
        # Not under the private folder: the agents' own users must reach their folders.
        self.sandboxes = Path(tempfile.mkdtemp(prefix="arena-soak-sandboxes-"))
        self.port = free_port()
        self.settings = {
            "ARENA_VAR_DIR": str(self.folder / "var"),
            "ARENA_SANDBOX": "process",
            "ARENA_SANDBOX_ROOT": str(self.sandboxes),
            **settings,
        }
        self.gateway: subprocess.Popen[bytes] | None = None
        self.log = self.folder / "gateway.log"

    def environment(self) -> dict[str, str]:
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ARENA_", "DJANGO_", "PG")) and key != "DATABASE_URL"
        }
        return {**inherited, **self.settings, "DJANGO_SETTINGS_MODULE": "core.settings"}

    def api(self, path: str) -> Any:
        """A public API read (``/api/v1...``), as JSON."""
        with urllib.request.urlopen(
            f"http://127.0.0.1:{self.port}/api/v1{path}", timeout=60
        ) as answer:
            return json.loads(answer.read())

    def start(self, *, join: bool = True) -> None:
        """Migrate and serve; with ``join``, this process reads and writes the same
        database through Django (``command``), which needs ``root`` to be this checkout."""
        if join:
            os.environ.update(self.environment())
            for name in ("DATABASE_URL", "ARENA_BROKER_URL"):
                os.environ.pop(name, None)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=self.root,
            env=self.environment(),
            check=True,
        )
        if join:
            import django

            django.setup()
        self._start_gateway()

    def shell(self, code: str) -> Any:
        """Python run by the checkout's ``manage.py shell``; the last line it printed, read
        as JSON (as ``ComposeStack.django`` runs it in the web container)."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
            cwd=self.root,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"bench: manage.py shell failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def _start_gateway(self) -> None:
        with open(self.log, "ab") as log:
            self.gateway = subprocess.Popen(
                [sys.executable, "manage.py", "run_gateway", "--manager", "--port", str(self.port)],
                cwd=self.root,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while self.worker_pid() is None or not self._answers():
            if self.gateway.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"bench_soak: the gateway did not start:\n{self._log_tail()}")
            time.sleep(0.5)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5):
                return True
        except OSError:
            return False

    def _log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def worker_pid(self) -> int | None:
        if self.gateway is None:
            return None
        for process in descendants(processes(), self.gateway.pid):
            if "core.embedded_worker" in process.command and process.parent == self.gateway.pid:
                return process.pid
        return None

    def command(self, command: str, **arguments: Any) -> dict[str, Any]:
        return COMMANDS[command](**arguments)

    def memory(self) -> dict[str, float]:
        table = processes()
        gateway = table.get(self.gateway.pid) if self.gateway else None
        worker = self.worker_pid()
        pool = [
            process
            for process in (descendants(table, worker) if worker else [])
            if "core.embedded_worker" in process.command
        ]
        agents = self._agents(table)
        return {
            "gateway": round(gateway.rss_mb, 1) if gateway else 0.0,
            "worker": round(sum(p.rss_mb for p in pool) + table[worker].rss_mb, 1)
            if worker in table
            else 0.0,
            "worker_processes": len(pool) + (worker in table),
            "agents": len(agents),
            "agents_mb": round(sum(p.rss_mb for p in agents), 1),
        }

    def _agents(self, table: dict[int, Process]) -> list[Process]:
        return [p for p in table.values() if p.folder.startswith(str(self.sandboxes))]

    def kill_worker(self) -> str:
        pid = self.worker_pid()
        if pid is None:
            raise SystemExit("bench_soak: no worker to kill")
        os.killpg(pid, signal.SIGKILL)
        return f"SIGKILL to the Celery worker's process group {pid}"

    def restart_broker(self) -> str:
        assert self.gateway is not None
        began = time.monotonic()
        self.gateway.send_signal(signal.SIGTERM)
        try:
            self.gateway.wait(timeout=90)
            how = "stopped"
        except subprocess.TimeoutExpired:
            self.gateway.kill()
            self.gateway.wait()
            how = "did not stop within 90 s: killed"
        stopped = time.monotonic() - began
        self._start_gateway()
        return (
            f"SIGTERM to run_gateway (it and its worker {how} in {stopped:.1f} s), started "
            f"again in {time.monotonic() - began - stopped:.1f} s"
        )

    def stop(self) -> None:
        if self.gateway is not None and self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.sandboxes, ignore_errors=True)

    def leftovers(self) -> list[str]:
        """Agents still running once the site stopped (their worker stops them)."""
        return [f"{p.pid} {p.command}" for p in self._agents(processes())]


#: Commands of the containers' healthchecks (docker-compose.yml), which come and go (a
#: worker's ``celery inspect ping`` is a whole Celery client): not the service's memory.
HEALTHCHECKS = ("core.healthcheck", "inspect ping", "pg_isready", "redis-cli")


class ComposeSite:
    """``docker-compose.yml`` of a fresh clone of the checkout ``root``'s HEAD
    (``tests.support.compose_stack``); ``settings`` are its test settings'."""

    name = "compose"
    judged = ("gateway", "worker-duels", "web", "manager")
    services = ("gateway", "worker-duels", "web", "manager", "watchdog", "redis", "postgres")

    def __init__(
        self, settings: dict[str, str], report: Callable[[str], None], *, root: Path = REPOSITORY
    ) -> None:
        self.report = report
        self.root = root
        self.folder = Path(tempfile.mkdtemp(prefix="arena-soak-compose-"))
        self.stack: Any = None

    def start(self) -> None:
        import secrets

        from tests.support.compose_stack import ComposeStack, git

        clone = self.folder / "arena"
        subprocess.run(
            ["git", "clone", "--quiet", "--no-checkout", str(REPOSITORY), str(clone)], check=True
        )
        git(clone, "checkout", "--quiet", "--detach", git(self.root, "rev-parse", "HEAD"))
        host_data = Path(tempfile.mkdtemp(prefix="arena-compose-"))
        host_data.chmod(0o755)
        self.stack = ComposeStack(
            clone, project=f"arena-soak-{secrets.token_hex(4)}", host_data=host_data
        )
        self.stack.configure()
        self.report("building the images (scripts/build_images.sh)")
        self.stack.build()
        self.report("starting the stack")
        self.stack.up()

    def api(self, path: str) -> Any:
        """A public API read (``/api/v1...``) through nginx, as JSON."""
        return self.stack.get(path)

    def shell(self, code: str) -> Any:
        return self.stack.django(code)

    def command(self, command: str, **arguments: Any) -> dict[str, Any]:
        code = (
            "import json; from bench.bench_soak import site_command; "
            f"site_command({command!r}, json.loads({json.dumps(arguments)!r}))"
        )
        return dict(self.shell(code))

    def memory(self) -> dict[str, float]:
        from tests.support.compose_stack import agents_of

        table = processes()
        containers = self.stack.containers()
        figures: dict[str, float] = {}
        for service in self.services:
            container = containers.get(service)
            if container is None or not container["State"]["Running"]:
                figures[service] = 0.0
                continue
            top = subprocess.run(
                ["docker", "top", container["Id"], "-eo", "pid,args"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            ).stdout.splitlines()[1:]
            pids = [
                int(pid)
                for pid, _, command in (line.strip().partition(" ") for line in top)
                if pid.isdigit() and not any(check in command for check in HEALTHCHECKS)
            ]
            figures[service] = round(sum(table[pid].rss_mb for pid in pids if pid in table), 1)
        workers = {containers[s]["Id"] for s in ("worker-duels",) if s in containers}
        figures["agents"] = len(agents_of(workers))
        return figures

    def kill_worker(self) -> str:
        from tests.support.compose_stack import kill_container

        pid = self.stack.state("worker-duels")["Pid"]
        kill_container(self.stack, "worker-duels")
        return f"SIGKILL to worker-duels' main process {pid}"

    def restart_broker(self) -> str:
        began = time.monotonic()
        self.stack.compose("restart", "redis", timeout=180)
        return f"docker-compose restart redis ({time.monotonic() - began:.1f} s)"

    def close(self) -> None:
        if self.stack is not None:
            with contextlib.suppress(Exception):
                self.stack.down()
            self.stack.forget_images()
            shutil.rmtree(self.stack.host_data, ignore_errors=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def stop(self) -> None:
        """Nothing until ``close``: the agents are the workers' containers, which
        ``memory`` counts while the stack runs."""

    def leftovers(self) -> list[str]:
        return []


# --- the run ------------------------------------------------------------------------------


def _load() -> float:
    return round(os.getloadavg()[0], 2)


@contextlib.contextmanager
def _site(stack: str, plan: Plan, report: Callable[[str], None]) -> Iterator[Any]:
    site = (EmbeddedSite if stack == "embedded" else ComposeSite)(dict(plan.settings), report)
    try:
        yield site
    finally:
        site.close()


def measure(plan: Plan, *, stack: str, report: Callable[[str], None]) -> dict[str, Any]:
    with _site(stack, plan, report) as site:
        site.start()
        set_up = time.monotonic()
        site.command("upload", count=plan.agents)

        def all_validated() -> bool:
            state = site.command("validated")
            if state["failed"]:
                raise SystemExit("bench_soak: uploads failed:\n" + "\n".join(state["failed"]))
            return bool(state["validated"] >= plan.agents)

        wait_until(f"{plan.agents} agents to be built and validated", all_validated, timeout=1800)
        report(f"{plan.agents} agents built and validated in {time.monotonic() - set_up:.0f} s")
        launched = site.command("launch")
        ladder = launched["ladder"]
        figures = _soak(site, plan, ladder, report)
        figures.update(stack=stack, matches_per_duel=launched["matches_per_duel"])
        site.stop()
        figures["leftover_agents"] = site.leftovers()
    return figures


def _soak(site: Any, plan: Plan, ladder: int, report: Callable[[str], None]) -> dict[str, Any]:
    duration = plan.minutes * 60
    began = time.monotonic()
    events: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    disruptions = [
        (KILL_AT * duration, "worker killed", site.kill_worker),
        (RESTART_AT * duration, "broker restarted", site.restart_broker),
    ]

    def sample(phase: str) -> dict[str, Any]:
        moment = time.monotonic() - began
        taken = {
            "seconds": round(moment, 1),
            "phase": phase,
            "load": _load(),
            **site.command("probe", ladder_id=ladder),
            "memory": site.memory(),
        }
        samples.append(taken)
        report(
            f"{moment / 60:5.1f} min  duels {taken['duels']} (done {taken['succeeded']}, "
            f"failed {taken['failed']}, active {taken['active']})  stuck {len(taken['stuck'])}  "
            f"memory {taken['memory']}  load {taken['load']}"
        )
        return taken

    next_sample = 0.0
    while (elapsed := time.monotonic() - began) < duration:
        if disruptions and elapsed >= disruptions[0][0]:
            _, what, act = disruptions[0]
            # The worker is killed in the middle of a duel (it may take a few seconds).
            if what == "worker killed" and not site.command("probe", ladder_id=ladder)["running"]:
                time.sleep(0.2)
                continue
            disruptions.pop(0)
            done = act()
            events.append({"seconds": round(elapsed, 1), "event": what, "how": done})
            report(f"{elapsed / 60:5.1f} min  {what}: {done}")
            continue
        if elapsed >= next_sample:
            sample("ladder")
            next_sample += plan.sample_seconds
        time.sleep(0.5)
    site.command("stop", ladder_id=ladder)
    stopped = time.monotonic()
    report("ladder stopped; waiting for its running duels to finish")
    while True:
        taken = sample("draining")
        if not taken["jobs_waiting"] or time.monotonic() - stopped > plan.drain_seconds:
            break
        time.sleep(plan.sample_seconds)
    drained = round(time.monotonic() - stopped, 1)
    # The tournament manager ranks the ladder again once its last duel is stored.
    while (
        not site.command("probe", ladder_id=ladder)["ranked"]
        and time.monotonic() - stopped < plan.drain_seconds
    ):
        time.sleep(0.5)
    final = site.command("probe", ladder_id=ladder, final=True)
    happened = {event["event"]: event["seconds"] for event in events}
    judged_from = happened.get("broker restarted", 0.0) + plan.warm_up_seconds
    memory = {
        process: _trend(
            [
                (s["seconds"], s["memory"][process])
                for s in samples
                if s["phase"] == "ladder" and s["seconds"] >= judged_from
            ]
        )
        for process in site.judged
    }
    stuck_seen = sorted({job for s in samples for job in s["stuck"]})
    checks = final["checks"]
    return {
        "plan": dataclasses.asdict(plan),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()}, {machine_summary(machine())}",
        "load": {
            "min": min(s["load"] for s in samples),
            "median": statistics.median(s["load"] for s in samples),
            "max": max(s["load"] for s in samples),
        },
        "events": events,
        "samples": samples,
        "drain_seconds": drained,
        "final": {key: value for key, value in final.items() if key != "checks"},
        "counted": checks,
        "memory_judged_from_seconds": judged_from,
        "memory": memory,
        "stuck_seen": stuck_seen,
        "verdict": {
            "no_stuck_job": not stuck_seen and not checks["problems"]["waiting_jobs"],
            "every_duel_counted_once": not any(
                problems for name, problems in checks["problems"].items() if name != "waiting_jobs"
            ),
            "worker_killed_and_broker_restarted": len(happened) == 2,
            # None: the run was too short to tell.
            "memory_flat": all(trend.get("flat", True) for trend in memory.values())
            if plan.judge_memory
            else None,
        },
    }


# --- the report ---------------------------------------------------------------------------


def table(figures: dict[str, Any]) -> str:
    """Markdown: the samples every five minutes (every 30 s in a run under ten minutes) and
    the last, the events, the checks."""
    every_seconds = 300 if figures["plan"]["minutes"] >= 10 else 30
    memory_columns = list(figures["samples"][0]["memory"])
    lines = [
        f"Soak of a {figures['plan']['agents']}-agent ladder on the {figures['stack']} stack, "
        f"{figures['plan']['minutes']:g} min ({figures['date']}; {figures['machine']}; load "
        f"{figures['load']['min']}-{figures['load']['max']}, median {figures['load']['median']})",
        "",
        "| min | duels | done | failed | active | stuck | oldest job (s) | "
        + " | ".join(column if column in COUNTS else f"{column} (MB)" for column in memory_columns)
        + " | load |",
        "| ---: " * (8 + len(memory_columns)) + "|",
    ]
    shown, next_shown = [], 0.0
    for sample in figures["samples"]:
        if sample["seconds"] >= next_shown or sample is figures["samples"][-1]:
            shown.append(sample)
            next_shown = sample["seconds"] - sample["seconds"] % every_seconds + every_seconds
    for sample in shown:
        lines.append(
            f"| {sample['seconds'] / 60:.1f}{'*' if sample['phase'] == 'draining' else ''} "
            f"| {sample['duels']} | {sample['succeeded']} | {sample['failed']} "
            f"| {sample['active']} | {len(sample['stuck'])} | {sample['oldest_waiting_seconds']:g} "
            + "".join(f"| {sample['memory'][column]:g} " for column in memory_columns)
            + f"| {sample['load']} |"
        )
    lines.append("")
    lines.append("(* after the ladder stopped, its running duels finishing)")
    lines.append("")
    for event in figures["events"]:
        lines.append(f"- {event['seconds'] / 60:.1f} min, {event['event']}: {event['how']}")
    counted = figures["counted"]
    lines.append(
        f"- {counted['duels']} duels, {counted['succeeded']} finished, {counted['matches']} "
        f"matches, {counted['rating_changes']} rating changes; "
        f"{figures['final']['retried']} duels played again after losing their worker, "
        f"{figures['final']['resent']} with their message sent again; drained in "
        f"{figures['drain_seconds']:g} s"
    )
    for process, trend in figures["memory"].items():
        if "flat" in trend:
            lines.append(
                f"- {process}: {trend['first_third_mb']} MB -> {trend['last_third_mb']} MB "
                f"(first and last thirds from {figures['memory_judged_from_seconds'] / 60:.1f} "
                f"min), slope {trend['slope_mb_per_hour']} MB/h: "
                f"{'flat' if trend['flat'] else 'GROWING'}"
            )
    for name, problems in counted["problems"].items():
        for problem in problems[:10]:
            lines.append(f"- PROBLEM ({name}): {problem}")
    for job in figures["stuck_seen"][:10]:
        lines.append(f"- STUCK: {job}")
    for agent in figures["leftover_agents"][:10]:
        lines.append(f"- LEFT RUNNING: {agent}")
    verdict = figures["verdict"]
    lines.append(
        "- verdict: "
        + ", ".join(f"{name.replace('_', ' ')}: {VERDICTS[ok]}" for name, ok in verdict.items())
    )
    return "\n".join(lines)


VERDICTS = {True: "yes", False: "NO", None: "not judged (too short)"}


def stack_option(parser: argparse.ArgumentParser) -> None:
    """``--stack``: the site measured, the embedded default or the compose stack."""
    parser.add_argument("--stack", choices=("embedded", "compose"), default="embedded")


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="6 agents, 2 minutes",
        plan_options={
            "minutes": "how long the ladder plays (30)",
            "agents": "agents in the ladder (50)",
            "sample_seconds": "seconds between samples (30)",
        },
        plan_refusal=lambda plan: "a ladder needs at least two agents" if plan.agents < 2 else None,
        add_options=stack_option,
        status=lambda figures: 1 if False in figures["verdict"].values() else 0,
    )


if __name__ == "__main__":
    raise SystemExit(main())
