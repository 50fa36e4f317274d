"""What several benchmarks share: the machine they ran on, a duel that must have run
cleanly, a reply read off a pipe, a process group stopped, two checkouts of Arena side by
side, and throwaway databases (PostgreSQL from ``tests.support.postgres``; Redis is
``tests.support.redis.redis_server``). Django set up in the benchmark's own process is
``bench.local_site``'s."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from referee.results import DuelResult

#: The checkout the benchmarks run from.
REPOSITORY = Path(__file__).resolve().parent.parent
#: The example players of Connect Four, the game most benchmarks play, and the random one.
PLAYERS = REPOSITORY / "example_players" / "connect_four"
RANDOM_PLAYER = PLAYERS / "random_player.py"


def machine() -> dict[str, Any]:
    """What a benchmark's figures say about the machine: its cores, Python, and the
    platform (kernel and C library)."""
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def machine_summary(described: dict[str, Any]) -> str:
    """``machine()``'s figures in a table's heading."""
    return f"{described['cores']} cores, Python {described['python']}, {described['platform']}"


def simulation_figures(
    benchmark: str, *, settings: dict[str, Any], seed: int, started: float, cells: list[Any]
) -> dict[str, Any]:
    """The figures of a seeded simulation (no database, no agent): the benchmark, the
    machine, its ``settings``, the seed, its wall time since ``started``
    (``time.perf_counter()``) and its ``cells``, in that order."""
    return {
        "benchmark": benchmark,
        "machine": machine_summary(machine()),
        **settings,
        "seed": seed,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "cells": cells,
    }


def games_import() -> list[Any]:
    """The games imported (``environments_import``), their standing competitions off: a
    benchmark times its own tournaments, and each game's standing ladder would play
    beside them (Django must be set up)."""
    from core.models import Environment
    from core.services.environments import environments_import

    imported = environments_import()
    Environment.objects.update(standing_competition=False)
    return imported


def wait_until(
    what: str, predicate: Callable[[], bool], *, timeout: float, every: float = 2.0
) -> None:
    """Check ``predicate`` every ``every`` seconds until it holds; a benchmark that waited
    ``timeout`` seconds for ``what`` stops with that said."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def check_clean(result: DuelResult) -> None:
    """A benchmark of a failing duel measures the failure: stop instead."""
    faults = [fault.describe() for match in result.matches for fault in match.faults]
    if result.infrastructure_error or faults:
        problem = result.infrastructure_error or "; ".join(faults[:3])
        raise SystemExit(f"bench: the duel did not run cleanly: {problem}")


def process_cpu_seconds(pid: int) -> float:
    """The CPU seconds (user and system) process ``pid`` has used so far, from its
    ``/proc`` stat (for processes that are not this one's children, or not yet reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_reply(reply_fd: int) -> bytes:
    """One newline-terminated reply off a pipe or a socket."""
    answer = os.read(reply_fd, 1 << 16)
    while not answer.endswith(b"\n"):
        answer += os.read(reply_fd, 1 << 16)
    return answer


def stop_process_group(process: subprocess.Popen[Any], *, timeout: float) -> None:
    """SIGTERM to the group of ``process`` (started with ``start_new_session``), and
    SIGKILL if it has not ended ``timeout`` seconds later: what it started goes too."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --- two checkouts, side by side ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Checkout:
    role: str
    #: What was asked for: a folder, or a git revision.
    spec: str
    path: Path
    commit: str
    subject: str
    #: Uncommitted changes to tracked files (a folder's).
    changed: bool
    #: A worktree made for this run, removed at its end.
    temporary: bool

    def figures(self) -> dict[str, Any]:
        """The checkout in a benchmark's figures (JSON: the path as text)."""
        return {**dataclasses.asdict(self), "path": str(self.path)}


def git(folder: Path, *arguments: str) -> str | None:
    """What ``git -C folder arguments`` printed, or None when it failed."""
    completed = subprocess.run(
        ["git", "-C", str(folder), *arguments], capture_output=True, text=True, check=False
    )
    return completed.stdout.strip() if completed.returncode == 0 else None


def checkout_prepare(role: str, spec: str, folder: Path, stack: contextlib.ExitStack) -> Checkout:
    """A folder as it is, or a git revision in a temporary worktree (under ``folder``,
    removed when ``stack`` closes)."""
    path = Path(spec).expanduser()
    temporary = not path.is_dir()
    if temporary:
        commit = git(REPOSITORY, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
        if commit is None:
            raise SystemExit(f"bench: --{role} {spec!r} is neither a folder nor a revision")
        path = folder / role
        if git(REPOSITORY, "worktree", "add", "--detach", "--quiet", str(path), commit) is None:
            raise SystemExit(f"bench: could not check out {spec} in {path}")
        stack.callback(git, REPOSITORY, "worktree", "remove", "--force", str(path))
    path = path.resolve()
    if not (path / "manage.py").is_file() or not (path / "core" / "settings.py").is_file():
        raise SystemExit(f"bench: {path} is not a checkout of Arena")
    return Checkout(
        role=role,
        spec=spec,
        path=path,
        commit=git(path, "rev-parse", "--short", "HEAD") or "unknown",
        subject=git(path, "log", "-1", "--format=%s") or "",
        changed=bool(git(path, "status", "--porcelain", "--untracked-files=no")),
        temporary=temporary,
    )


#: The two checkouts a comparison measures, in the order its figures give them.
ROLES = ("baseline", "candidate")


def checkouts_prepare(
    baseline: str, candidate: str, folder: Path, stack: contextlib.ExitStack
) -> dict[str, Checkout]:
    """The baseline and the candidate (``checkout_prepare``), by role (``ROLES``)."""
    return {
        role: checkout_prepare(role, spec, folder, stack)
        for role, spec in zip(ROLES, (baseline, candidate), strict=True)
    }


# --- throwaway databases --------------------------------------------------------------


@contextlib.contextmanager
def throwaway_database(server: str | None, folder: Path, name: str) -> Iterator[str]:
    """A fresh database for one measurement, dropped afterwards: on the server, or a file."""
    if server is None:
        yield f"sqlite:///{folder / name}.sqlite3"
        return
    import psycopg

    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (``tests.support.postgres``) with a database
    ``bench``: its URL."""
    from tests.support.postgres import find_bindir, start_cluster

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("bench: PostgreSQL is not installed (apt-get install postgresql)")
    cluster = start_cluster(bindir)
    try:
        import psycopg

        with psycopg.connect(cluster.url("postgres"), autocommit=True) as connection:
            connection.execute("CREATE DATABASE bench")
        yield cluster.url("bench")
    finally:
        cluster.stop()
