from __future__ import annotations

from collections.abc import Sequence

from core.jobs.watchdog import jobs_recover
from core.management.daemon import DaemonCommand, Pass


class Command(DaemonCommand):
    help = (
        "The watchdog of every kind of job (builds, validations, publications, duels, "
        "evaluations; core.jobs): queues again the jobs whose worker stopped renewing its "
        "lease, or fails them after their last attempt (ARENA_REVISION_MAX_ATTEMPTS, "
        "ARENA_PUBLICATION_MAX_ATTEMPTS, ARENA_DUEL_MAX_ATTEMPTS), and sends again the "
        "messages of jobs queued past their re-send time (ARENA_RESEND_AFTER_SECONDS), "
        "failing them after ARENA_MAX_RESENDS. Loops until SIGTERM or SIGINT; several may "
        "run at once."
    )
    title = "Watchdog"
    logger_name = "core.jobs"

    def passes(self) -> Sequence[Pass]:
        return [jobs_recover]
