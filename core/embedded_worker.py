"""The embedded default's Celery worker: a child process of the command that serves the
site (``run_gateway``) or plays the demo (``demo``), on every queue of the embedded broker
(``core/embedded_broker.py``). It runs the same tasks as production's workers, so a web
request only queues work and returns.

The owner keeps it from outliving it and reports what happens to it:

- it runs in a session of its own, so a Ctrl-C meant for the owner reaches it only through
  ``stop``: a warm shutdown (running tasks may finish for ``stop_grace`` seconds), then a
  cold one (unfinished tasks go back to the broker), then SIGKILL to its process group;
- it gets SIGQUIT (a cold shutdown) when the owner dies without stopping it (SIGKILL), so
  it never lingers alone (Linux's parent-death signal);
- a worker that stops by itself is reported with the end of its log and started again; one
  that fails three times in a row within seconds of starting is given up on, with the
  reason in ``failure`` and in the report.

Run as ``python -m core.embedded_worker OWNER_PID CELERY_ARGUMENTS...`` by ``EmbeddedWorker``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

logger = logging.getLogger(__name__)

#: A worker that stops within this many seconds of its start failed to start.
QUICK_EXIT_SECONDS = 15.0
#: Quick exits in a row after which the worker is not started again.
QUICK_EXITS_ALLOWED = 3
#: Seconds between a worker's exit and its next start (doubled after each quick exit).
RESTART_DELAY_SECONDS = 1.0
#: After a cold shutdown, seconds before the worker's process group is killed.
COLD_STOP_SECONDS = 5.0
#: A log over this size when a worker starts is kept as ``<log>.1`` and a new one begun.
LOG_KEEP_BYTES = 10 * 1024 * 1024
_PR_SET_PDEATHSIG = 1


def routed_queues() -> list[str]:
    """Every queue a task goes to (``ARENA_QUEUES``): one worker does all the embedded
    default's work."""
    from django.conf import settings

    return list(settings.ARENA_QUEUES)


def worker_arguments(*, name: str, concurrency: int) -> list[str]:
    """``celery`` arguments of the embedded worker. No gossip, mingle or heartbeats: they
    need a broadcast exchange, which the embedded broker does not have."""
    return [
        "-A",
        "core",
        "worker",
        "--queues",
        ",".join(routed_queues()),
        "--pool",
        "prefork",
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--hostname",
        f"{name}@%h",
    ]


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def site_worker(*, report: Callable[[str], None]) -> EmbeddedWorker:
    """The worker of the commands that serve the site or play the demo: its log in
    ``ARENA_VAR_DIR/log``, ``ARENA_EMBEDDED_WORKER_CONCURRENCY`` processes."""
    from django.conf import settings

    return EmbeddedWorker(
        log_path=Path(settings.VAR_DIR) / "log" / "worker.log",
        concurrency=settings.ARENA_EMBEDDED_WORKER_CONCURRENCY,
        report=report,
    )


class EmbeddedWorker:
    """A Celery worker process, started by ``start`` (or ``with``) and stopped by ``stop``."""

    def __init__(
        self,
        *,
        log_path: Path,
        concurrency: int,
        report: Callable[[str], None] | None = None,
        stop_grace: float = 10.0,
        name: str | None = None,
    ) -> None:
        self.log_path = log_path
        self.concurrency = concurrency
        self.report = report or logger.warning
        self.stop_grace = stop_grace
        self.name = name or f"embedded-{os.getpid()}"
        #: Why the worker was given up on; None while it runs (or is being restarted).
        self.failure: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._started = threading.Event()
        # The supervisor starts every worker process: the parent-death signal is tied to
        # the thread that forked, which lives as long as the worker may.
        self._supervisor = threading.Thread(
            target=self._supervise, name="embedded-worker", daemon=True
        )

    def __enter__(self) -> EmbeddedWorker:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        """The worker's main process (its process group), while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._supervisor.start()
        self._started.wait(timeout=30)

    def stop(self) -> None:
        """Stop the worker and every process of its group; wait for them."""
        self._stopping.set()
        with self._lock:
            process = self._process
        if process is not None and process.poll() is None:
            # The main process only: it stops its pool in order.
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_grace)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGQUIT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=COLD_STOP_SECONDS)
        if process is not None:
            # Whatever of its group is left: the main process if it did not stop, pool
            # processes it did not reap.
            self._signal_group(process, signal.SIGKILL)
            process.wait()
        if self._supervisor.is_alive():
            self._supervisor.join(timeout=10)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], number: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, number)

    def _spawn(self) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            if self.log_path.exists() and self.log_path.stat().st_size > LOG_KEEP_BYTES:
                self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
            with open(self.log_path, "ab") as log:
                log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} started\n".encode())
                log.flush()
                self._process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "core.embedded_worker",
                        str(os.getpid()),
                        *worker_arguments(name=self.name, concurrency=self.concurrency),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            return self._process

    def _supervise(self) -> None:
        try:
            self._supervise_restarts()
        except Exception as error:  # the log cannot be written, the process not started
            self.failure = f"The Celery worker could not be started: {error}"
            self.report(self.failure)
        finally:
            self._started.set()

    def _supervise_restarts(self) -> None:
        quick_exits = 0
        while True:
            process = self._spawn()
            self._started.set()
            if process is None:
                return
            began = time.monotonic()
            code = process.wait()
            if self._stopping.is_set():
                return
            quick_exits = quick_exits + 1 if time.monotonic() - began < QUICK_EXIT_SECONDS else 0
            tail = self.log_tail()
            if quick_exits >= QUICK_EXITS_ALLOWED:
                self.failure = (
                    f"The Celery worker failed {quick_exits} times in a row within "
                    f"{QUICK_EXIT_SECONDS:g} s of starting ({_describe_exit(code)}); it is not "
                    f"started again, so builds, validations and duels wait. Its log, "
                    f"{self.log_path}, ends with:\n{tail}"
                )
                self.report(self.failure)
                return
            delay = RESTART_DELAY_SECONDS * 2 ** max(0, quick_exits - 1)
            self.report(
                f"The Celery worker stopped by itself ({_describe_exit(code)}); starting it "
                f"again in {delay:g} s. Its work is taken up again once its leases run out. "
                f"Its log, {self.log_path}, ends with:\n{tail}"
            )
            if self._stopping.wait(delay):
                return


def _die_with_owner(owner: int) -> None:
    """Ask Linux for SIGQUIT (Celery's cold shutdown) when the owner dies; exit at once if
    it is gone already."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)
    if os.getppid() != owner:
        raise SystemExit("the command that started this worker is gone")


if __name__ == "__main__":
    _die_with_owner(int(sys.argv[1]))
    from celery.bin.celery import main

    sys.argv = ["celery", *sys.argv[2:]]
    main()
