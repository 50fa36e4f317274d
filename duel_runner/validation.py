"""A revision's validation: self-play, whose duel is stored so that its matches can be
replayed; a one-player game's by a short evaluation (``duel_runner.evaluations``)."""

from __future__ import annotations

import contextlib
import logging

from core.errors import ArenaError
from core.jobs.local_builds import revisions_built_here
from core.jobs.policies import Outcome
from core.jobs.signals import revision_validated
from core.jobs.worker import job_claim, job_give_back, job_heartbeat, job_record, worker_name
from core.models import Duel, DuelStatus, JobKind, Revision, StepStatus
from duel_runner.evaluations import revision_validate_alone
from duel_runner.services import (
    LOG_CHARS,
    RETRY_SECONDS,
    _log_local_builds,
    duel_store_result,
    environment_limits,
    hosted_backend,
    revision_agent_source,
)
from referee.duel import validate

logger = logging.getLogger(__name__)


def revision_validate(*, revision_id: int) -> float | None:
    """Self-play the revision; store the validation duel so its matches can be replayed.

    The validation job is held under a renewed lease; a worker that lost it meanwhile (the
    validation was queued again) stores nothing, neither the duel nor the outcome.
    Returns the seconds after which the task tries again when this host could not build
    the revision (the validation was given back, see ``core.jobs.worker.job_give_back``).
    """
    worker = worker_name()
    job = job_claim(kind=JobKind.VALIDATION, subject_id=revision_id, worker=worker)
    if job is None:
        return None
    revision = Revision.objects.select_related("competitor__environment").get(pk=revision_id)
    environment = revision.competitor.environment
    with job_heartbeat(job=job, worker=worker), contextlib.ExitStack() as builds:
        try:
            built = builds.enter_context(revisions_built_here([revision]))
            # Agents this worker cannot confine: given back too, never the revision's fault.
            backend = hosted_backend([revision], warm=False)
        except ArenaError as error:
            again = job_give_back(job=job, worker=worker, problem=error.message)
            return RETRY_SECONDS if again else None
        _log_local_builds(built, f"validation of {revision}")
        source = revision_agent_source(revision)
        if environment.players == 1:
            # One-player games are validated by a short evaluation instead of self-play.
            alone = revision_validate_alone(
                job=job, revision=revision, source=source, backend=backend, worker=worker
            )
            if not alone:
                return None
            revision.refresh_from_db()
            if revision.validation_status == StepStatus.SUCCEEDED:
                revision_validated.send(sender=Revision, revision=revision)
            return None
        validation = validate(
            environment.game,
            source,
            backend=backend,
            matches=environment.validation_matches if environment.spec else None,
            **environment_limits(environment),
        )
        log = validation.message
        first_copy = validation.duel.logs[0]
        if first_copy:
            log += "\n\n--- agent log (first copy) ---\n" + first_copy

        def store() -> Outcome:
            duel = Duel.objects.seated(
                [revision] * len(validation.duel.players),
                environment=environment,
                is_validation=True,
                num_matches=len(validation.duel.matches) or environment.validation_matches,
                seed=validation.duel.seed,
                status=DuelStatus.RUNNING,
                started_at=job.started_at,
            )
            duel_store_result(duel=duel, result=validation.duel, worker=worker)
            return Outcome(
                succeeded=validation.passed,
                error="" if validation.passed else validation.message,
                log=log[-LOG_CHARS:],
            )

        if not job_record(job=job, worker=worker, store=store):
            return None
    if validation.passed:
        revision.refresh_from_db()
        revision_validated.send(sender=Revision, revision=revision)
    return None
