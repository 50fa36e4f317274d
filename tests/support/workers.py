"""Celery in the tests: eager by default, real worker processes for pipeline tests.

The test process runs every task eagerly, right after the commit that started it
(``ARENA_BROKER_URL=eager``), and so do the processes it starts unless a test gives them
a broker: tests see the outcome of an upload or a launch when the call returns.

``celery_workers`` starts worker processes on the build and duels queues of the throwaway
Redis server of ``tests.support.redis``, against the test database, the way production
runs them (and daemons such as the tournament manager, with ``manage``), and stops (or
has already killed) them before the test's tables are flushed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.database import database_url
from tests.support.processes import ended
from tests.support.require import require

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    os.environ["ARENA_BROKER_URL"] = "eager"
    if not settings.configured:
        return
    settings.ARENA_BROKER_URL = "eager"
    settings.ARENA_EMBEDDED_BROKER = False
    settings.CELERY_BROKER_URL = None
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from core.celery import app

    app.conf.update(broker_url=None, task_always_eager=True)


class Workers:
    """Starts worker processes that share the test's database, broker and folders."""

    def __init__(self, broker: str, settings: Any, log_dir: Path) -> None:
        self.broker = broker
        self.settings = settings
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        name: str,
        *,
        app: str = "core",
        queues: str = "build,duels",
        pool: str = "prefork",
        concurrency: int = 1,
        hostname: str = "",
        heartbeat: str = "",
        **environment: str,
    ) -> subprocess.Popen[bytes]:
        """A worker on ``queues`` (the build and duels queues by default; online duels
        run on ``online``, in threads); ``app`` is the Celery app's module. ``hostname``
        runs it in a UTS namespace of its own under that host name (root only), as a
        worker of another machine: its worker name (``core.leases``) and its containers'
        owner say so. ``heartbeat``: the file it touches while it consumes, as in
        production (``--heartbeat``)."""
        namespace = (
            ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname]
            if hostname
            else []
        )
        return self._run(
            name,
            [
                *namespace,
                sys.executable,
                "-m",
                "celery",
                "-A",
                app,
                "worker",
                "-Q",
                queues,
                "--concurrency",
                str(concurrency),
                "--pool",
                pool,
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"{name}@%h",
                *(["--heartbeat", heartbeat] if heartbeat else []),
            ],
            environment,
        )

    def manage(self, name: str, *arguments: str, **environment: str) -> subprocess.Popen[bytes]:
        """``manage.py <arguments>`` (a daemon, such as the tournament manager) in the same
        setting as the workers; stopped with them."""
        return self._run(name, [sys.executable, "manage.py", *arguments], environment)

    def _run(
        self, name: str, command: list[str], environment: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        settings = self.settings
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "core.settings",
            "DATABASE_URL": database_url(),
            "ARENA_BROKER_URL": self.broker,
            "ARENA_MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "ARENA_BUILD_ROOT": str(settings.ARENA_BUILD_ROOT),
            "ARENA_SANDBOX_ROOT": str(settings.ARENA_SANDBOX_ROOT),
            **environment,
        }
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the whole worker, pool children included: as if its machine died."""
        os.killpg(process.pid, signal.SIGKILL)
        ended(process)

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                ended(process)


@pytest.fixture
def celery_workers(
    redis_url: str, settings, tmp_path: Path, transactional_db: None
) -> Iterator[Workers]:
    """Workers on a real broker; this process queues tasks to it instead of running them."""
    from django.db import connection

    require(
        connection.vendor == "postgresql",
        "worker processes need the PostgreSQL test database (SQLite's is private to this process)",
    )
    from core.celery import app

    previous = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    _drop_connections(app)
    _forget_request_rates(redis_url)
    workers = Workers(redis_url, settings, tmp_path)
    try:
        yield workers
    finally:
        workers.stop_all()
        app.conf.update(**previous)
        _drop_connections(app)


def _forget_request_rates(redis_url: str) -> None:
    """The gateways of a test count request rates in this Redis (``api.rates``): each test
    starts from zero, whatever the one before it sent."""
    import redis

    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match="LIMITS*"):
        client.delete(key)


def _drop_connections(app: Any) -> None:
    """Forget pooled broker connections, so the next task uses the broker now configured."""
    from kombu import pools

    pools.reset()  # kombu's process-wide producer pools, keyed by broker
    app._pool = None
    app.amqp._producer_pool = None


def wait_for(predicate: Callable[[], object], *, timeout: float, what: str) -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}", pytrace=False)
        time.sleep(0.1)
