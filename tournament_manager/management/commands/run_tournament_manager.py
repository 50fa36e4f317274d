from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, close_old_connections, connection

from tournament_manager import daemon

logger = logging.getLogger("tournament_manager.daemon")


class Command(BaseCommand):
    help = (
        "The tournament manager: launches scheduled tournaments, queues again builds, "
        "validations and duels whose worker lost its lease (and fails them after "
        "ARENA_REVISION_MAX_ATTEMPTS or ARENA_DUEL_MAX_ATTEMPTS), sends again work queued "
        "past ARENA_RESEND_AFTER_SECONDS, finishes tournaments, schedules Swiss rounds and "
        "ladder duels. Loops until SIGTERM or SIGINT (the current pass finishes first); "
        "several may run at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=2.0,
            metavar="SECONDS",
            help="sleep this long after a pass that found nothing to do (default 2)",
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
                daemon.run_once()
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
            self.stdout.write(
                f"Tournament manager started (idle interval {options['interval']:g} s)."
            )
            self.serve(interval=options["interval"], heartbeat=options["heartbeat"])
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        self.stdout.write("Tournament manager stopped.")

    def on_signal(self, number: int, frame: FrameType | None) -> None:
        logger.info("%s received: stopping after the current pass", signal.Signals(number).name)
        self.stopping.set()

    def serve(self, *, interval: float, heartbeat: Path | None = None) -> None:
        """Pass after pass until ``stopping`` is set; sleep ``interval`` after an idle
        pass. A failed pass (the database gone, say) is logged and tried again; each other
        pass touches ``heartbeat``."""
        while not self.stopping.is_set():
            # Drops a connection that broke or outlived CONN_MAX_AGE, as a request would.
            close_old_connections()
            try:
                did_work = daemon.run_once()
            except DatabaseError as error:
                logger.warning("database error, trying again in %g s: %s", interval, error)
                connection.close()
                did_work = False
            except Exception:
                logger.exception("the pass failed; trying again in %g s", interval)
                did_work = False
            else:
                if heartbeat is not None:
                    heartbeat.touch()
            if not did_work:
                self.stopping.wait(interval)
        connection.close()
