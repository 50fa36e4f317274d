from __future__ import annotations

from collections.abc import Sequence

from core.management.daemon import DaemonCommand, Pass
from tournament_manager import daemon


class Command(DaemonCommand):
    help = (
        "The tournament manager: launches scheduled tournaments, withdraws disabled "
        "participants, refits leaderboards, finishes tournaments, schedules Swiss rounds "
        "and ladder duels. Loops until SIGTERM or SIGINT (the current pass finishes first); "
        "several may run at once. Lost and stalled work is the watchdog's (run_watchdog)."
    )
    title = "Tournament manager"
    logger_name = "tournament_manager.daemon"

    def passes(self) -> Sequence[Pass]:
        return [daemon.run_once]
