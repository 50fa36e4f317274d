"""The loop of Arena's daemons: passes until asked to stop.

A daemon's work is a list of passes, each a callable that returns whether it did
something. ``serve`` runs them one after the other, again at once after a pass that did
work, after ``interval`` seconds after one that did not; a failed pass (the database
gone, say) is logged and tried again. ``DaemonCommand`` is the management command around
it (``run_tournament_manager``, ``run_watchdog``): ``--once``, ``--interval``,
``--heartbeat``, and a clean stop after the current pass on SIGTERM or SIGINT. The
embedded default's gateway runs ``serve`` in a thread (``run_gateway --manager``).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, close_old_connections, connection

from core.celery import forget_statements

Pass = Callable[[], bool]


def run_passes(passes: Sequence[Pass]) -> bool:
    """Each pass once, in order; whether any did work."""
    did_work = False
    for one in passes:
        if one():
            did_work = True
    return did_work


def serve(
    passes: Sequence[Pass],
    *,
    stopping: threading.Event,
    interval: float,
    logger: logging.Logger,
    heartbeat: Path | None = None,
) -> None:
    """``passes`` again and again until ``stopping`` is set, each on its own (one that
    fails is logged, and the others run); each round in which none failed touches
    ``heartbeat`` (a healthcheck reads its age)."""
    while not stopping.is_set():
        # Drops a connection that broke or outlived CONN_MAX_AGE, and forgets the
        # statements debug mode logged, as a request would.
        close_old_connections()
        forget_statements()
        did_work, failed = False, False
        for one in passes:
            # Each pass on its own: one that fails does not hold up the others.
            try:
                did_work = bool(one()) or did_work
            except DatabaseError as error:
                logger.warning("database error, trying again in %g s: %s", interval, error)
                connection.close()
                failed = True
            except Exception:
                logger.exception("the pass failed; trying again in %g s", interval)
                failed = True
        if heartbeat is not None and not failed:
            heartbeat.touch()
        if not did_work:
            stopping.wait(interval)
    connection.close()


class DaemonCommand(BaseCommand):
    """A daemon's management command: its ``passes`` in a loop, or once."""

    #: Its name in what it prints ("Tournament manager"), and its logger's.
    title = ""
    logger_name = ""
    default_interval = 2.0

    def passes(self) -> Sequence[Pass]:
        raise NotImplementedError

    @property
    def logger(self) -> logging.Logger:
        return logging.getLogger(self.logger_name)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=self.default_interval,
            metavar="SECONDS",
            help=f"sleep this long after a pass that found nothing to do "
            f"(default {self.default_interval:g})",
        )
        parser.add_argument(
            "--once", action="store_true", help="make one pass and exit (1 if it failed)"
        )
        parser.add_argument(
            "--heartbeat",
            type=Path,
            metavar="FILE",
            help="touch FILE after every pass that did not fail: a healthcheck reads its age "
            "(python -m core.healthcheck file FILE SECONDS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verbosity"] >= 1:
            logging.basicConfig(
                level=logging.DEBUG if options["verbosity"] >= 2 else logging.INFO,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            )
        self.stopping = threading.Event()
        if options["once"]:
            try:
                run_passes(self.passes())
            except DatabaseError as error:
                raise CommandError(f"the pass failed: {error}") from error
            finally:
                connection.close()
            return
        previous = {
            number: signal.signal(number, self.on_signal)
            for number in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self.stdout.write(f"{self.title} started (idle interval {options['interval']:g} s).")
            self.serve(interval=options["interval"], heartbeat=options["heartbeat"])
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        self.stdout.write(f"{self.title} stopped.")

    def on_signal(self, number: int, frame: FrameType | None) -> None:
        self.logger.info(
            "%s received: stopping after the current pass", signal.Signals(number).name
        )
        self.stopping.set()

    def serve(self, *, interval: float, heartbeat: Path | None = None) -> None:
        serve(
            self.passes(),
            stopping=self.stopping,
            interval=interval,
            logger=self.logger,
            heartbeat=heartbeat,
        )
