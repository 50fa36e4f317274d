"""Online play through the real gateway: what a network seat costs per move, how many
online agents play at once, how many idle connections a gateway holds.

    python -m bench.bench_online            # full run, about 5 minutes
    python -m bench.bench_online --quick    # smoke run (a test runs it)
    python -m bench.bench_online --json figures.json

Everything runs for real on this machine: a throwaway SQLite database, agents uploaded
and validated through the platform, online models registered through its services,
``manage.py run_gateway`` (uvicorn) as its own process, and online agents connected with
the SDK's client (``arena_sdk.online``), from other processes, over loopback HTTP.

latency
    The same agent (the example random Connect Four player), in the same seat against
    the same hosted opponent, once as a hosted agent in the ``process`` sandbox and once
    online; the median time the referee measures per move of that seat, from sending the
    request to reading the reply, both in the same round. Two ways to run online: the
    embedded default (the gateway process referees its online duels, seat bus in memory)
    and production (a Redis seat bus: the gateway holds the client, a referee in another
    process, as a duel worker of the ``online`` queue would).
load
    ``players`` online agents at once (clients in one process, a thread each), paired in
    ``players / 2`` two-match duels all queued together, on the Redis path; the wall time
    until all are stored, faults (none expected), the per-move median and 95th percentile,
    and the gateway's CPU time and peak memory.
idle
    ``idle`` online agents each holding its stream open and doing nothing for ``hold``
    seconds (long enough for the gateway's keep-alive ping); the gateway's memory before
    and after, per connection, and how many connections were still alive (each got its
    ``welcome`` and a ``ping``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.local_site import django_setup, site_environment
from bench.support import (
    RANDOM_PLAYER,
    REPOSITORY,
    games_import,
    machine,
    machine_summary,
    stop_process_group,
)

TARGET_MS = 2.0


@dataclasses.dataclass(frozen=True)
class Plan:
    rounds: int
    #: Matches of each latency duel.
    matches: int
    players: int
    idle: int
    hold: float


FULL = Plan(rounds=5, matches=20, players=200, idle=1000, hold=20.0)
QUICK = Plan(rounds=1, matches=2, players=6, idle=20, hold=1.0)


# --- processes --------------------------------------------------------------------------------


def _wait_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


class GatewayProcess:
    """``manage.py run_gateway`` on a free port, with this process's database."""

    def __init__(self, folder: Path, name: str, **environment: str) -> None:
        from tests.support.redis import free_port

        self.port = free_port()
        self.log_path = folder / f"{name}.log"
        env = {
            **os.environ,
            # Online agents make many requests; the bench opens a thousand streams from
            # one address, which a real deployment sees from a thousand addresses.
            "ARENA_ONLINE_RATE": "1000/s",
            "ARENA_API_ANONYMOUS_RATE": "100000/min",
            "ARENA_CONNECTIONS_PER_ADDRESS": "100000",
            **environment,
        }
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "run_gateway", "--port", str(self.port)],
                cwd=REPOSITORY,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_port(self.port, self.process, f"the gateway ({self.log_path})")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def status(self, field: str) -> int:
        """A memory figure of /proc/<pid>/status, in KiB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop_process_group(self.process, timeout=20)


def _clients(server: str, tokens: list[str], duels: int) -> subprocess.Popen[str]:
    """Online agents in one process (a thread each): ``python -m bench.bench_online
    --clients``, reading its tokens from stdin."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.bench_online", "--clients", server, str(duels)],
        cwd=REPOSITORY,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write("\n".join(tokens) + "\n")
    process.stdin.close()
    process.stdin = None  # given: communicate() must not flush it again
    return process


def _run_clients(server: str, duels: int) -> int:
    """The client side: one ``OnlineClient`` per token, each for ``duels`` duels."""
    sys.path.insert(0, str(REPOSITORY / "sdk"))
    from arena_sdk.adapters import load_agent
    from arena_sdk.online import OnlineClient

    tokens = [line.strip() for line in sys.stdin if line.strip()]
    results: list[int] = []
    threads = []
    for token in tokens:
        client = OnlineClient(
            load_agent(RANDOM_PLAYER),
            server=server,
            token=token,
            join=False,
            duels=duels,
            log=lambda text: None,
        )
        thread = threading.Thread(target=lambda c=client: results.append(c.run()), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    print(json.dumps({"clients": len(tokens), "ok": results.count(0)}))
    return 0


# --- the platform ------------------------------------------------------------------------------


def _setup(folder: Path) -> None:
    sandboxes = Path(tempfile.mkdtemp(prefix="bench-online-sandboxes-"))
    django_setup(
        {
            **site_environment(folder),
            "ARENA_SANDBOX_ROOT": str(sandboxes),
            "ARENA_SANDBOX": "process",
            "ARENA_ONLINE_BUS_URL": "",
            "ARENA_ONLINE_CONCURRENT_DUELS": "200",
        }
    )
    from django.db import connection

    with connection.cursor() as cursor:
        # Several processes write: the gateway's referees, this one.
        cursor.execute("PRAGMA journal_mode=WAL")
    games_import()


def _field() -> tuple[Any, Any, Any]:
    """The owner, the environment and the hosted random player's validated revision."""
    from core.models import Environment
    from core.services.accounts import user_create
    from core.services.revisions import revision_upload

    owner = user_create(email="bench@example.org", display_name="Bench", password="bench-Secret-1")
    environment = Environment.objects.get(name="connect_four")
    hosted = revision_upload(
        owner=owner,
        environment=environment,
        competitor_name="hosted-random",
        is_public=True,
        filename="random_player.py",
        content=RANDOM_PLAYER.read_bytes(),
    )
    hosted.refresh_from_db()
    if not hosted.is_valid:
        why = hosted.job("validation")
        raise RuntimeError(f"the hosted player did not validate: {why and why.error}")
    return owner, environment, hosted


def _models(owner: Any, environment: Any, prefix: str, count: int) -> list[tuple[Any, str]]:
    """``count`` online models: (their revision, their token)."""
    from core.services.online import online_model_register

    made = []
    for number in range(count):
        competitor, token = online_model_register(
            owner=owner, environment=environment, name=f"{prefix}-{number}"
        )
        made.append((competitor.revisions.get(), token))
    return made


def _queue_duel(one: Any, two: Any, matches: int, seed: int) -> int:
    """A queued duel with its job, which the bench plays itself (no task is sent)."""
    from core.models import Duel, Job, JobKind

    duel = Duel.objects.seated([one, two], num_matches=matches, seed=seed)
    Job.objects.create(kind=JobKind.DUEL, duel=duel)
    return int(duel.pk)


def _wait_stored(duel_ids: list[int], timeout: float) -> None:
    from django.db import close_old_connections

    from core.models import Duel, DuelStatus

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        done = Duel.objects.filter(
            pk__in=duel_ids, status__in=[DuelStatus.SUCCEEDED, DuelStatus.FAILED]
        ).count()
        if done == len(duel_ids):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the duels {duel_ids[:5]}... were not all stored in {timeout:.0f} s")


def _seat_timings(duel_ids: list[int], player: int) -> tuple[list[float], int]:
    """Seconds per move of ``player`` in the duels' matches, and the faults there were."""
    from core.models import Duel, Match

    timings: list[float] = []
    faults = 0
    for match in Match.objects.filter(duel_id__in=duel_ids).order_by("duel_id", "index"):
        seat = 0 if match.first_player == player else 1
        timings += [step[seat] for step in match.timings if step[seat] is not None]
        faults += len(match.faults)
    faults += Duel.objects.filter(pk__in=duel_ids, status="failed").count()
    return timings, faults


# --- measurements ---------------------------------------------------------------------------


def _latency_rounds(
    plan: Plan,
    field: tuple[Any, Any, Any],
    gateway: GatewayProcess,
    path: str,
    *,
    first_seed: int,
    referee_here: bool,
    report: Callable[[str], None],
) -> list[dict[str, float]]:
    """``plan.rounds`` latency rounds through ``gateway``, by a model of its own."""
    owner, environment, hosted = field
    model = _models(owner, environment, f"latency-{path}", 1)[0]
    rounds = []
    for round_number in range(plan.rounds):
        seed = first_seed + round_number
        rounds.append(_latency_round(plan, hosted, model, gateway, seed, referee_here))
        report(f"latency, {path}, round {round_number + 1}: {rounds[-1]}")
    return rounds


def _latency_round(
    plan: Plan,
    hosted: Any,
    model: tuple[Any, str],
    gateway: GatewayProcess,
    seed: int,
    referee_here: bool,
) -> dict[str, float]:
    from duel_runner.online import OnlineDuelRunner
    from duel_runner.services import duel_play

    baseline = _queue_duel(hosted, hosted, plan.matches, seed)
    duel_play(duel_id=baseline)
    process_timings, _ = _seat_timings([baseline], 2)
    revision, token = model
    online = _queue_duel(hosted, revision, plan.matches, seed)
    runner = None
    if referee_here:
        runner = OnlineDuelRunner(concurrency=4)
        runner.start()
    clients = _clients(gateway.url, [token], 1)
    try:
        _wait_stored([online], timeout=120)
    finally:
        clients.communicate(timeout=60)
        if runner is not None:
            runner.stop()
    online_timings, faults = _seat_timings([online], 2)
    if faults:
        raise RuntimeError(f"the online duel {online} had faults")
    process_ms = statistics.median(process_timings) * 1000
    online_ms = statistics.median(online_timings) * 1000
    return {
        "process_ms": process_ms,
        "online_ms": online_ms,
        "added_ms": online_ms - process_ms,
        # The same seed and a deterministic agent: the same game, hosted or online.
        "same_replays": _actions(baseline) == _actions(online),
    }


def _actions(duel_id: int) -> list[object]:
    from core.models import Match

    return [match.actions for match in Match.objects.filter(duel_id=duel_id).order_by("index")]


def _load(plan: Plan, owner: Any, environment: Any, gateway: GatewayProcess) -> dict[str, Any]:
    from duel_runner.online import OnlineDuelRunner

    models = _models(owner, environment, "load", plan.players)
    clients = _clients(gateway.url, [token for _, token in models], 1)
    time.sleep(min(10.0, 1 + plan.players / 40))  # their streams open
    cpu_before = gateway.cpu_seconds()
    started = time.monotonic()
    duel_ids = [
        _queue_duel(models[i][0], models[i + 1][0], 2, 1000 + i)
        for i in range(0, len(models) - 1, 2)
    ]
    runner = OnlineDuelRunner(concurrency=len(duel_ids))
    runner.start()
    try:
        _wait_stored(duel_ids, timeout=600)
        wall = time.monotonic() - started
    finally:
        runner.stop()
    out, _ = clients.communicate(timeout=120)
    timings, faults = _seat_timings(duel_ids, 1)
    timings += _seat_timings(duel_ids, 2)[0]
    timings.sort()
    return {
        "players": plan.players,
        "duels": len(duel_ids),
        "moves": len(timings),
        "wall_s": wall,
        "faults": faults,
        "clients_ok": json.loads(out.strip().splitlines()[-1])["ok"] if out.strip() else 0,
        "move_median_ms": statistics.median(timings) * 1000,
        "move_p95_ms": timings[int(0.95 * (len(timings) - 1))] * 1000,
        "gateway_cpu_s": gateway.cpu_seconds() - cpu_before,
        "gateway_peak_mib": gateway.status("VmHWM") / 1024,
    }


def _idle(plan: Plan, owner: Any, environment: Any, gateway: GatewayProcess) -> dict[str, Any]:
    models = _models(owner, environment, "idle", plan.idle)
    before = gateway.status("VmRSS")
    streams = selectors.DefaultSelector()
    opened = 0
    for _, token in models:
        connection = socket.create_connection(("127.0.0.1", gateway.port))
        connection.sendall(
            b"GET /api/v1/online/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {token}\r\n\r\n".encode()
        )
        connection.setblocking(False)
        streams.register(connection, selectors.EVENT_READ, data=bytearray())
        opened += 1
    hold_until = time.monotonic() + plan.hold
    # A ping comes every 15 s: a hold that long also checks each stream is kept alive.
    want_ping = plan.hold >= 16
    give_up = hold_until + 20
    welcomed: set[int] = set()
    pinged: set[int] = set()
    while True:
        now = time.monotonic()
        everyone = len(welcomed) == opened and (not want_ping or len(pinged) == opened)
        if now >= hold_until and (everyone or now >= give_up):
            break
        for key, _ in streams.select(timeout=0.5):
            chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
            key.data.extend(chunk)
            number = key.fileobj.fileno()  # type: ignore[union-attr]
            if b'"welcome"' in key.data:
                welcomed.add(number)
            if b'"ping"' in key.data:
                pinged.add(number)
    after = gateway.status("VmRSS")
    for key in list(streams.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    streams.close()
    return {
        "connections": opened,
        "welcomed": len(welcomed),
        "pinged": len(pinged),
        "held_s": plan.hold,
        "rss_before_mib": before / 1024,
        "rss_after_mib": after / 1024,
        "kib_per_connection": (after - before) / max(1, opened),
    }


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    folder = Path(tempfile.mkdtemp(prefix="bench-online-"))
    from tests.support.redis import redis_server

    # Room for the thousand streams of the idle measurement, and more.
    redis = contextlib.ExitStack()
    redis_url = redis.enter_context(redis_server("--maxclients", "10000"))
    figures: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": machine_summary(machine()),
        "plan": dataclasses.asdict(plan),
    }
    try:
        _setup(folder)
        from django.conf import settings

        field = _field()
        owner, environment, _ = field
        report("hosted player validated")
        latency: dict[str, list[dict[str, float]]] = {}
        embedded = GatewayProcess(folder, "gateway-embedded")
        try:
            latency["embedded"] = _latency_rounds(
                plan, field, embedded, "embedded", first_seed=100, referee_here=False, report=report
            )
        finally:
            embedded.stop()
        settings.ARENA_ONLINE_BUS_URL = redis_url
        production = GatewayProcess(folder, "gateway-redis", ARENA_ONLINE_BUS_URL=redis_url)
        try:
            latency["redis"] = _latency_rounds(
                plan, field, production, "redis", first_seed=200, referee_here=True, report=report
            )
            figures["load"] = _load(plan, owner, environment, production)
            report(f"load: {figures['load']}")
        finally:
            production.stop()
        idle_gateway = GatewayProcess(folder, "gateway-idle", ARENA_ONLINE_BUS_URL=redis_url)
        try:
            figures["idle"] = _idle(plan, owner, environment, idle_gateway)
            report(f"idle: {figures['idle']}")
        finally:
            idle_gateway.stop()
        figures["latency"] = {
            path: {
                "rounds": rounds,
                "process_ms": statistics.median(r["process_ms"] for r in rounds),
                "online_ms": statistics.median(r["online_ms"] for r in rounds),
                "added_ms": statistics.median(r["added_ms"] for r in rounds),
                "added_range_ms": [
                    min(r["added_ms"] for r in rounds),
                    max(r["added_ms"] for r in rounds),
                ],
                "same_replays": all(r["same_replays"] for r in rounds),
            }
            for path, rounds in latency.items()
        }
    finally:
        redis.close()
    return figures


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"Online play ({figures['machine']}, {figures['date']})",
        "",
        "| seat | per move, median (ms) | added over the process seat (ms), median (range) |",
        "| --- | ---: | ---: |",
    ]
    for path, label in (
        ("embedded", "online, embedded default (memory bus)"),
        ("redis", "online, production path (Redis bus)"),
    ):
        row = figures["latency"][path]
        low, high = row["added_range_ms"]
        lines.append(
            f"| {label} | {row['online_ms']:.3f} (process: {row['process_ms']:.3f}) "
            f"| **{row['added_ms']:.3f}** ({low:.3f} to {high:.3f}) |"
        )
    met = all(figures["latency"][path]["added_ms"] <= TARGET_MS for path in figures["latency"])
    same = all(figures["latency"][path]["same_replays"] for path in figures["latency"])
    load, idle = figures["load"], figures["idle"]
    lines += [
        "",
        f"target: a remote seat adds at most {TARGET_MS:g} ms per move at the median: "
        + ("met" if met else "NOT met"),
        "the same agent's duels, hosted and online (same seeds): "
        + ("identical replays" if same else "replays DIFFER"),
        "",
        "| load | value |",
        "| --- | ---: |",
        f"| online agents playing at once | {load['players']} ({load['duels']} duels) |",
        f"| all duels stored after | {load['wall_s']:.1f} s |",
        f"| moves | {load['moves']} |",
        f"| faults | {load['faults']} |",
        f"| per move, median / 95th percentile | {load['move_median_ms']:.2f} / "
        f"{load['move_p95_ms']:.2f} ms |",
        f"| gateway CPU time | {load['gateway_cpu_s']:.1f} s |",
        f"| gateway peak memory | {load['gateway_peak_mib']:.0f} MiB |",
        "",
        "| idle connections | value |",
        "| --- | ---: |",
        f"| held open | {idle['connections']} for {idle['held_s']:g} s |",
        f"| welcomed / pinged | {idle['welcomed']} / {idle['pinged']} |",
        f"| gateway memory before / after | {idle['rss_before_mib']:.0f} / "
        f"{idle['rss_after_mib']:.0f} MiB |",
        f"| per connection | {idle['kib_per_connection']:.0f} KiB |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--clients"]:
        return _run_clients(argv[1], int(argv[2]))
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="smoke run: one round, 6 agents at once, 20 idle connections",
    )


if __name__ == "__main__":
    sys.exit(main())
