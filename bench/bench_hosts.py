"""Duel throughput with one worker host and with two, measured in one run.

    python -m bench.bench_hosts                  # 3 rounds of each, about 6 minutes
    python -m bench.bench_hosts --quick          # 1 round of a short tournament (smoke test)
    python -m bench.bench_hosts --shared-cores   # both hosts on every core of the machine
    python -m bench.bench_hosts --json PATH

The production path end to end: a Redis broker, a PostgreSQL server, Celery duel workers
(two prefork processes per host, docker-compose's ``ARENA_DUEL_WORKERS``) running agents
in the docker sandbox through each host's engine proxy. Each host has its own Docker
engine, a ``dockerd`` on this machine with its own images, folders and engine proxy, its
workers in their own UTS namespace (``tests.support.second_engine``, as in
``tests/duel_runner/test_second_host.py``).

The two hosts are on one machine, so by default each gets one core of it, as two
one-core machines would: its workers and its engine's daemons run under ``taskset`` on
that CPU, its containers in a cpuset cgroup of that CPU. PostgreSQL, Redis, the engine
proxies and this process (the control machine) run on either. With ``--shared-cores``
(or where cpusets are not available) host 1 is the machine's own engine and both hosts
share every core: then the figure shows the cost of a second host, not its gain.

The revisions (Connect Four example players under several names) are uploaded, built and
validated on host 1. A warm-up tournament on each host alone follows: host 2 builds its
own copy of every image there (reported: what a host's first duels of a revision cost,
once). Then each round plays the same round robin twice, with host 1's workers alone and
with both hosts' (the order alternates between rounds), timed from the launch to the
tournament's completion: duels per minute, and the ratio. Each tournament gets workers
started afresh (after they are ready), so each starts with empty warm pools, as after a
deploy.

Needs root (the engines, cpusets), Docker with the base image (``manage.py
build_base_image``), PostgreSQL's server binaries and ``redis-server``; everything runs on
throwaway servers and folders, and what it made on the machine's engine is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.local_site import django_setup
from bench.support import (
    PLAYERS,
    REPOSITORY,
    games_import,
    machine,
    machine_summary,
    postgres_server,
    stop_process_group,
)

ENVIRONMENT = "connect_four"
DUEL_PROCESSES = 2


@dataclasses.dataclass(frozen=True)
class Plan:
    #: (name, example player file) of each revision of the round robin.
    agents: tuple[tuple[str, str], ...]
    matches: int
    rounds: int
    #: Both hosts on every core of the machine, rather than one core each.
    shared_cores: bool = False


FULL = Plan(
    agents=(
        ("random-a", "random_player.py"),
        ("random-b", "random_player.py"),
        ("random-c", "random_player.py"),
        ("kaggle-a", "kaggle_style.py"),
        ("kaggle-b", "kaggle_style.py"),
        ("minimax", "minimax.py"),
    ),
    matches=10,
    rounds=3,
)
QUICK = Plan(
    agents=(
        ("random-a", "random_player.py"),
        ("kaggle-a", "kaggle_style.py"),
        ("random-b", "random_player.py"),
    ),
    matches=4,
    rounds=1,
)


@dataclasses.dataclass
class Host:
    name: str
    folder: Path
    docker_host: str
    base_image: str
    #: The CPUs its workers and its engine (daemons and containers) may use; '' for all.
    cpus: str = ""

    def environment(self) -> dict[str, str]:
        return {
            "ARENA_SANDBOX": "docker",
            "ARENA_DOCKER_IMAGE": self.base_image,
            "DOCKER_HOST": self.docker_host,
            "ARENA_BUILD_ROOT": str(self.folder / "builds"),
            "ARENA_SANDBOX_ROOT": str(self.folder / "sandboxes"),
            "ARENA_WHEEL_CACHE": str(self.folder / "wheels"),
            "ARENA_MEDIA_ROOT": str(self.folder / "media"),
        }


class Worker:
    """A Celery worker of one host: ``celery worker`` in a UTS namespace of its own."""

    def __init__(self, host: Host, name: str, queues: str, environment: dict[str, str]) -> None:
        self.log_path = host.folder / f"{name}.log"
        command = ["taskset", "-c", host.cpus] if host.cpus else []
        command += ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host.name]
        command += [sys.executable, "-m", "celery", "-A", "core", "worker", "-Q", queues]
        command += ["-c", str(DUEL_PROCESSES), "--loglevel", "INFO", "-n", f"{name}@%h"]
        command += ["--without-gossip", "--without-mingle"]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=REPOSITORY,
                env={**os.environ, **environment, **host.environment()},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while " ready." not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"bench_hosts: worker {name} did not start:\n{self.log()[-2000:]}")
            time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        stop_process_group(self.process, timeout=60)


def _configure(database_url: str, broker_url: str, host: Host) -> None:
    django_setup(
        {
            "DATABASE_URL": database_url,
            "ARENA_BROKER_URL": broker_url,
            # Its images are its own: nothing else on the engines is touched.
            "ARENA_INSTANCE": f"bench-hosts-{os.getpid()}",
            **host.environment(),
        }
    )


def _tournament(revisions: list[Any], name: str, matches: int) -> float:
    """Play a round robin of ``revisions`` on the running workers; returns its seconds."""
    from django.db import transaction

    from core.models import Environment, Tournament, TournamentStatus
    from tournament_manager.services.tournaments import tournament_create, tournament_launch

    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name=ENVIRONMENT),
            name=name,
            revisions=revisions,
            matches_per_duel=matches,
        )
    started = time.perf_counter()
    with transaction.atomic():
        tournament_launch(tournament=tournament)
    finished = {TournamentStatus.COMPLETED, TournamentStatus.FAILED}
    deadline = time.monotonic() + 1200
    while not Tournament.objects.filter(pk=tournament.pk, status__in=finished).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_hosts: {name} did not finish within 20 minutes")
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    tournament.refresh_from_db()
    if tournament.status != TournamentStatus.COMPLETED:
        errors = {d.error for d in tournament.duels.exclude(error="")}
        raise SystemExit(f"bench_hosts: {name} failed: {errors}")
    return seconds


def _duel_seconds(name: str) -> list[float]:
    """How long each duel of the tournament took, from its claim to its record."""
    from core.models import Tournament

    times = Tournament.objects.get(name=name).duels.values_list("job__started_at", "job__ended_at")
    seconds = []
    for started, ended in times:
        assert started is not None and ended is not None  # every duel of it ran
        seconds.append((ended - started).total_seconds())
    return seconds


def _shares(name: str) -> dict[str, int]:
    from core.models import Tournament

    duels = Tournament.objects.get(name=name).duels.values_list("played_by", flat=True)
    shares: dict[str, int] = {}
    for played_by in duels:
        host = played_by.split(":")[0]
        shares[host] = shares.get(host, 0) + 1
    return shares


def _upload(revisions: list[Any], plan: Plan, report: Callable[[str], None]) -> None:
    from django.db import transaction

    from core.models import Environment, User
    from core.services.revisions import competitor_get_or_create, revision_create

    owner = User.objects.create_user("bench@example.org", "a long enough password")
    environment = Environment.objects.get(name=ENVIRONMENT)
    for name, player in plan.agents:
        with transaction.atomic():
            competitor = competitor_get_or_create(owner=owner, environment=environment, name=name)
            revision = revision_create(
                competitor=competitor,
                uploaded_by=owner,
                filename="main.py",
                content=(PLAYERS / player).read_bytes(),
            )
        revisions.append(revision)
    deadline = time.monotonic() + 600
    while True:
        for revision in revisions:
            revision.refresh_from_db()
        if all(r.is_valid for r in revisions):
            break
        broken = [r for r in revisions if "failed" in (r.build_status, r.validation_status)]
        if broken or time.monotonic() > deadline:
            raise SystemExit(f"bench_hosts: not validated: {[str(r) for r in broken]}")
        time.sleep(0.2)
    report(f"{len(revisions)} revisions built and validated on host 1")


def _pinning(shared_cores: bool) -> tuple[str, str] | str:
    """The CPU of each host, or why the hosts share the machine's cores."""
    from tests.support.second_engine import cpu_pinning_problem

    if shared_cores:
        return "asked for (--shared-cores)"
    if (os.cpu_count() or 1) < 2:
        return "this machine has one core"
    return cpu_pinning_problem() or ("0", "1")


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    from sandboxes import docker_engine, docker_images
    from sandboxes.base_image import base_image_tag
    from tests.support.engine_proxy import REAL_ENGINE, engine_proxy_running
    from tests.support.redis import redis_server
    from tests.support.second_engine import second_engine_problem, second_engine_running

    problem = docker_engine.engine_problem() or second_engine_problem()
    if problem:
        raise SystemExit(f"bench_hosts: {problem}")
    base = base_image_tag()
    if not docker_images.image_exists(base):
        raise SystemExit(f"bench_hosts: no base image {base} (manage.py build_base_image)")
    pinning = _pinning(plan.shared_cores)
    cpus = pinning if isinstance(pinning, tuple) else ("", "")
    report(
        f"each host pinned to CPU {cpus[0]} and CPU {cpus[1]}"
        if isinstance(pinning, tuple)
        else f"the hosts share every core: {pinning}"
    )
    load_before = os.getloadavg()[0]
    folder = Path(tempfile.mkdtemp(prefix="arena-bench-hosts-"))
    folder.chmod(0o755)
    workers: list[Worker] = []
    try:
        with contextlib.ExitStack() as stack:
            folders = []
            for name in ("host-1", "host-2"):
                (folder / name / "sandboxes").mkdir(parents=True)
                folders.append(folder / name)
            engine_2 = stack.enter_context(second_engine_running(base, cpus[1]))
            # Pinned, host 1 needs an engine of its own too: the machine's uses every core.
            engine_1 = (
                stack.enter_context(second_engine_running(base, cpus[0])).socket
                if cpus[0]
                else REAL_ENGINE
            )
            proxy_1 = stack.enter_context(
                engine_proxy_running([folders[0] / "sandboxes"], engine=engine_1)
            )
            proxy_2 = stack.enter_context(
                engine_proxy_running([folders[1] / "sandboxes"], engine=engine_2.socket)
            )
            host_1 = Host("arena-host-1", folders[0], proxy_1.docker_host, base, cpus[0])
            host_2 = Host("arena-host-2", folders[1], proxy_2.docker_host, base, cpus[1])
            database_url = stack.enter_context(postgres_server())
            broker_url = stack.enter_context(redis_server())
            _configure(database_url, broker_url, host_1)
            stack.callback(_remove_images)

            # First on the way out: workers stop before the servers and engines they use.
            def stop_workers() -> None:
                for worker in workers:
                    worker.stop()

            stack.callback(stop_workers)
            games_import()
            shared = {"DATABASE_URL": database_url, "ARENA_BROKER_URL": broker_url}
            builder = Worker(host_1, "host-1-build", "build,duels", shared)
            workers.append(builder)
            revisions: list[Any] = []
            _upload(revisions, plan, report)
            builder.stop()

            one = Worker(host_1, "host-1-duels", "duels", shared)
            workers.append(one)
            _tournament(revisions, "warm-up, host 1", plan.matches)
            one.stop()
            two = Worker(host_2, "host-2-duels", "duels", shared)
            workers.append(two)
            warm_up_2 = _tournament(revisions, "warm-up, host 2", plan.matches)
            builds = [
                (name, float(seconds))
                for name, seconds in re.findall(
                    r"built (\S+ v\d+) on this host in ([0-9.]+) s", two.log()
                )
            ]
            report(f"host 2 built {len(builds)} images itself in its warm-up ({warm_up_2:.1f} s)")
            two.stop()

            rows: dict[str, list[float]] = {"one host": [], "two hosts": []}
            duel_seconds: dict[str, list[float]] = {"one host": [], "two hosts": []}
            shares: list[dict[str, int]] = []
            for number in range(plan.rounds):
                order = ["one host", "two hosts"] if number % 2 == 0 else ["two hosts", "one host"]
                for setup in order:
                    running = [Worker(host_1, f"host-1-{number}-{setup[:3]}", "duels", shared)]
                    if setup == "two hosts":
                        running.append(Worker(host_2, f"host-2-{number}", "duels", shared))
                    workers.extend(running)
                    name = f"round {number + 1}, {setup}"
                    seconds = _tournament(revisions, name, plan.matches)
                    rows[setup].append(seconds)
                    duel_seconds[setup] += _duel_seconds(name)
                    if setup == "two hosts":
                        shares.append(_shares(name))
                    for worker in running:
                        worker.stop()
                    report(f"{name}: {seconds:.1f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    duels = len(plan.agents) * (len(plan.agents) - 1) // 2
    medians = {setup: statistics.median(times) for setup, times in rows.items()}
    per_minute = {setup: 60 * duels / seconds for setup, seconds in medians.items()}
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "agents": [name for name, _ in plan.agents],
        "duels": duels,
        "matches_per_duel": plan.matches,
        "processes_per_host": DUEL_PROCESSES,
        "cpus_per_host": list(cpus) if cpus[0] else None,
        "shared_cores_because": None if cpus[0] else pinning,
        "rounds": rows,
        "median_seconds": medians,
        # A duel's own time (claim to record), and how many ran at once on average.
        "duel_seconds_median": {
            setup: statistics.median(times) for setup, times in duel_seconds.items()
        },
        "duels_at_once": {setup: sum(duel_seconds[setup]) / sum(rows[setup]) for setup in rows},
        "duels_per_minute": per_minute,
        "ratio": per_minute["two hosts"] / per_minute["one host"],
        "two_host_shares": shares,
        "host_2_builds": builds,
        # The machine's 1-minute load average when the run began and ended.
        "load_average": [load_before, os.getloadavg()[0]],
    }


def _remove_images() -> None:
    """The revision images this run made on the machine's engine (host 2's went with it)."""
    from builder.revision_image import DEPS_ROLE, LABEL_INSTANCE, ROLE
    from sandboxes import docker_engine, docker_images

    os.environ.pop("DOCKER_HOST", None)  # the engine itself, not a proxy that is gone
    docker_engine._client_for.cache_clear()
    instance = {LABEL_INSTANCE: os.environ["ARENA_INSTANCE"]}
    for image in docker_images.images_labelled({docker_engine.LABEL_ROLE: ROLE, **instance}):
        docker_images.image_remove(image.tags[0] if image.tags else image.id)
    docker_images.images_prune_dangling({docker_engine.LABEL_ROLE: DEPS_ROLE, **instance})


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"Duel throughput by worker hosts — {figures['date']}: {figures['duels']} Connect Four "
        f"duels of {figures['matches_per_duel']} matches a round, "
        f"{figures['processes_per_host']} duel processes per host",
        f"machine: {machine_summary(figures['machine'])}; "
        + (
            "host 1 on CPU {}, host 2 on CPU {} (workers, engine, containers)".format(
                *figures["cpus_per_host"]
            )
            if figures["cpus_per_host"]
            else f"both hosts share every core ({figures['shared_cores_because']})"
        ),
        "",
        f"{'set-up':<12} {'rounds (s)':<24} {'median s':>9} {'duels/min':>10} "
        f"{'s a duel':>9} {'at once':>8}",
    ]
    for setup in ("one host", "two hosts"):
        rounds = ", ".join(f"{seconds:.1f}" for seconds in figures["rounds"][setup])
        lines.append(
            f"{setup:<12} {rounds:<24} {figures['median_seconds'][setup]:>9.1f} "
            f"{figures['duels_per_minute'][setup]:>10.1f} "
            f"{figures['duel_seconds_median'][setup]:>9.2f} "
            f"{figures['duels_at_once'][setup]:>8.2f}"
        )
    lines.append("")
    lines.append(f"two hosts / one host: {figures['ratio']:.2f}x duels per minute")
    lines.append("load average, start and end: {:.1f}, {:.1f}".format(*figures["load_average"]))
    shares = "; ".join(
        ", ".join(f"{host} {count}" for host, count in sorted(share.items()))
        for share in figures["two_host_shares"]
    )
    lines.append(f"duels per host, two-host rounds: {shares}")
    builds = figures["host_2_builds"]
    total = sum(seconds for _, seconds in builds)
    slowest = max((seconds for _, seconds in builds), default=0.0)
    lines.append(
        f"host 2's own builds of host 1's revisions (warm-up, once each): {len(builds)}, "
        f"{total:.1f} s in all, {slowest:.1f} s the longest"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="one round of a 3-agent round robin, 4 matches a duel",
        plan_options={"shared_cores": "both hosts on every core of the machine"},
    )


if __name__ == "__main__":
    sys.exit(main())
