"""The embedded default for real, in processes of its own: a SQLite database and the
embedded broker in a private ``ARENA_VAR_DIR``, ``manage.py`` commands run against them,
and the site served by ``run_gateway --manager`` (with its Celery worker) on a loopback
port, read over HTTP as a visitor or an organizer would.

The test process itself runs on PostgreSQL (pytest-django); none of this touches it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.redis import free_port
from tests.support.workers import ROOT, wait_for

ORGANIZER_EMAIL = "organizer@example.org"
ORGANIZER_PASSWORD = "an organizer's long password"


def process_ids_with(variable: str, value: str) -> list[int]:
    """Live processes whose environment has ``variable=value`` (the site's processes,
    whoever their parent is now)."""
    wanted = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in environment and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="session")
def embedded_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated embedded database, made once for the run: sites start from a copy
    (``EmbeddedSite(folder, database=...)``) rather than migrate for seconds each."""
    site = EmbeddedSite(tmp_path_factory.mktemp("embedded-database"))
    try:
        site.manage("migrate", "--verbosity", "0")
    finally:
        site.close()
    return site.var_dir / "arena.sqlite3"


class EmbeddedSite:
    """One embedded setup in ``folder``: its database (a copy of ``database``, migrated,
    if given), broker, uploads, builds and logs."""

    def __init__(self, folder: Path, *, database: Path | None = None, **settings: str) -> None:
        self.var_dir = folder / "var"
        if database is not None:
            self.var_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(database, self.var_dir / "arena.sqlite3")
        # Agents run under their own user ids when the tests run as root: the sandbox's
        # parents must be open to them, so not under pytest's private tmp_path.
        self.sandboxes = Path(tempfile.mkdtemp(prefix="arena-test-embedded-"))
        self.environment = {
            # Nothing of the test run's own database, broker or folders.
            **{
                key: value
                for key, value in os.environ.items()
                if not key.startswith("ARENA_") and key != "DATABASE_URL"
            },
            "DJANGO_SETTINGS_MODULE": "core.settings",
            "ARENA_VAR_DIR": str(self.var_dir),
            "ARENA_SANDBOX": "process",
            "ARENA_SANDBOX_ROOT": str(self.sandboxes),
            "PYTHONUNBUFFERED": "1",
            # Tests read the API as often as they like.
            "ARENA_API_ANONYMOUS_RATE": "100000/min",
            **settings,
        }
        self.server: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def server_log_path(self) -> Path:
        return self.var_dir / "log" / "server.log"

    @property
    def worker_log_path(self) -> Path:
        return self.var_dir / "log" / "worker.log"

    def manage(self, *arguments: str, timeout: float = 120) -> str:
        """``manage.py <arguments>``; its output, or the test fails with it."""
        done = subprocess.run(
            [sys.executable, "manage.py", *arguments],
            cwd=ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            pytest.fail(
                f"manage.py {' '.join(arguments)} failed ({done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
                pytrace=False,
            )
        return done.stdout

    def run(self, code: str) -> Any:
        """Run Python in Django against the site's database; what it prints as its last
        line, read as JSON."""
        output = self.manage("shell", "--no-imports", "-c", code)
        return json.loads(output.strip().splitlines()[-1])

    def serve(self) -> None:
        """``run_gateway --manager``, until ``stop``; returns once it answers and its
        worker is ready."""
        self.port = free_port()
        self.server_log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.server_log_path, "ab") as log:
            self.server = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "run_gateway",
                    "--manager",
                    "--interval",
                    "0.2",
                    "--port",
                    str(self.port),
                ],
                cwd=ROOT,
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def answers() -> bool:
            if self.server is not None and self.server.poll() is not None:
                pytest.fail(f"the site stopped:\n{self.server_log()}", pytrace=False)
            try:
                return requests.get(f"{self.url}/api/v1/environments", timeout=5).ok
            except (requests.ConnectionError, requests.Timeout):
                return False  # not yet, or slow to answer its first request

        wait_for(answers, timeout=60, what="the site to answer")
        wait_for(lambda: " ready." in self.worker_log(), timeout=60, what="its worker to be ready")

    def worker_pid(self) -> int:
        """The worker's main process, as the server announced it."""
        line = next(
            line for line in self.server_log().splitlines() if "by a Celery worker (pid " in line
        )
        return int(line.split("by a Celery worker (pid ", 1)[1].split(",", 1)[0])

    def stop(self, number: signal.Signals = signal.SIGINT) -> int:
        """Send the server ``number`` (SIGINT: a Ctrl-C) and wait for it to exit."""
        assert self.server is not None
        if self.server.poll() is None:
            os.kill(self.server.pid, number)
        code = self.server.wait(timeout=60)
        self.server = None
        return code

    def processes(self) -> list[int]:
        """Every live process of this site (server, worker, pool, agents)."""
        return process_ids_with("ARENA_VAR_DIR", str(self.var_dir))

    def close(self) -> None:
        """Stop whatever still runs (a failed test's), remove the sandboxes' folder."""
        if self.server is not None and self.server.poll() is None:
            self.stop()
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.sandboxes, ignore_errors=True)

    def get(self, path: str) -> Any:
        """A public API read (``/api/v1/...``), as JSON."""
        response = requests.get(f"{self.url}/api/v1{path}", timeout=30)
        response.raise_for_status()
        return response.json()

    def page(self, path: str) -> str:
        response = requests.get(f"{self.url}{path}", timeout=30)
        response.raise_for_status()
        return response.text

    def organizer_session(self) -> requests.Session:
        """Logged in to the admin as the organizer ``run(SEED)`` made."""
        session = requests.Session()
        session.get(f"{self.url}/admin/login/", timeout=30).raise_for_status()
        response = session.post(
            f"{self.url}/admin/login/",
            data={
                "username": ORGANIZER_EMAIL,
                "password": ORGANIZER_PASSWORD,
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
                "next": "/admin/",
            },
            headers={"Referer": f"{self.url}/admin/login/"},
            timeout=30,
        )
        response.raise_for_status()
        assert "sessionid" in session.cookies, "the organizer could not log in to the admin"
        return session

    def server_log(self) -> str:
        return self._read(self.server_log_path)

    def worker_log(self) -> str:
        return self._read(self.worker_log_path)

    @staticmethod
    def _read(path: Path) -> str:
        try:
            return path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


def wait_until(predicate: Any, *, timeout: float, what: str, site: EmbeddedSite) -> None:
    """``wait_for``, failing with the site's logs."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(
                f"timed out after {timeout} s waiting for {what}\n--- server log:\n"
                f"{site.server_log()[-4000:]}\n--- worker log:\n{site.worker_log()[-4000:]}",
                pytrace=False,
            )
        time.sleep(0.25)
