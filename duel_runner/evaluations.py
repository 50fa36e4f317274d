"""Playing evaluations stored in the database: a revision of a one-player game alone on
seeded episodes, for a score competition or to validate an upload.

An evaluation is claimed with a lease like a duel (``duel_runner.services.duel_claim``):
a worker that dies stops renewing it, the tournament manager queues it again, and only
the lease's owner records a result, so an evaluation is never counted twice.
"""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.leases import Heartbeat, lease_claim, lease_give_back, lease_heartbeat, worker_name
from core.local_builds import revisions_built_here
from core.models import DuelStatus, Evaluation, Revision, StepStatus
from core.services import revision_step_finish
from duel_runner.services import (
    LOG_CHARS,
    RETRY_SECONDS,
    _log_local_builds,
    revision_agent_source,
    sandbox_backend,
)
from referee.evaluation import EvaluationResult, run_evaluation, validate_evaluation
from sandboxes import AgentSource, InvalidAgent

logger = logging.getLogger(__name__)


def evaluation_claim(*, evaluation_id: int, worker: str) -> Evaluation | None:
    """Take an evaluation to play: queued, or running with an expired lease. None if taken."""
    if not lease_claim(Evaluation.objects.filter(pk=evaluation_id).claimable(), worker=worker):
        return None
    return Evaluation.objects.select_related("revision__competitor__environment").get(
        pk=evaluation_id
    )


def evaluation_heartbeat(*, evaluation_id: int, worker: str) -> Heartbeat:
    return lease_heartbeat(
        Evaluation.objects.filter(pk=evaluation_id, status=DuelStatus.RUNNING, lease_owner=worker)
    )


def _result_fields(result: EvaluationResult) -> dict[str, object]:
    """The columns of a played evaluation; an infrastructure error is stored, never scored."""
    summary = result.summary
    if result.infrastructure_error or summary is None:
        return {
            "status": DuelStatus.FAILED,
            "error": (result.infrastructure_error or "no episode was played")[:10_000],
            "mean_return": None,
            "ci_low": None,
            "ci_high": None,
            "episodes_played": 0,
            "faulty_episodes": 0,
            "episodes": [],
        }
    faulty = [episode for episode in result.episodes if episode.faults]
    return {
        "status": DuelStatus.SUCCEEDED,
        "error": "; ".join(dict.fromkeys(episode.error_msg for episode in faulty))[:10_000],
        "mean_return": summary.mean,
        "ci_low": summary.low,
        "ci_high": summary.high,
        "episodes_played": len(result.episodes),
        "faulty_episodes": len(faulty),
        "episodes": [episode.as_json() for episode in result.episodes],
    }


def evaluation_record_result(
    *, evaluation: Evaluation, result: EvaluationResult, worker: str
) -> bool:
    """Store a played evaluation if ``worker`` still holds its lease; returns whether it did."""
    updated = Evaluation.objects.filter(
        pk=evaluation.pk, status=DuelStatus.RUNNING, lease_owner=worker
    ).update(
        ended_at=timezone.now(),
        lease_owner="",
        lease_expires_at=None,
        played_by=worker,
        restarts=result.restarts,
        log=result.log[-LOG_CHARS:],
        **_result_fields(result),
    )
    if updated:
        evaluation.refresh_from_db()
    return bool(updated)


def _give_back(*, evaluation: Evaluation, worker: str, problem: str) -> float | None:
    """This host could not build the revision: queued again while attempts are left
    (``ARENA_DUEL_MAX_ATTEMPTS``), else failed with the reason; never scored."""
    logger.warning("evaluation %d: not played on this host: %s", evaluation.pk, problem)
    if evaluation.attempts < settings.ARENA_DUEL_MAX_ATTEMPTS:
        given_back = lease_give_back(
            Evaluation.objects.filter(
                pk=evaluation.pk, status=DuelStatus.RUNNING, lease_owner=worker
            ),
            error=f"Attempt {evaluation.attempts} could not start its agent: {problem}",
        )
        return RETRY_SECONDS if given_back else None
    failure = EvaluationResult(
        environment=evaluation.revision.competitor.environment.name,
        agent=str(evaluation.revision),
        seeds=list(evaluation.seeds),
        infrastructure_error=(
            f"Not played: its agent could not be built on the workers ({evaluation.attempts} "
            f"attempts; not the agent's fault). The last: {problem}"
        ),
    )
    evaluation_record_result(evaluation=evaluation, result=failure, worker=worker)
    return None


def _lease_wait(evaluation_id: int) -> float | None:
    evaluation = Evaluation.objects.filter(pk=evaluation_id, status=DuelStatus.RUNNING).first()
    if evaluation is None or evaluation.lease_expires_at is None:
        return None
    return max(1.0, (evaluation.lease_expires_at - timezone.now()).total_seconds() + 1)


def evaluation_play(*, evaluation_id: int) -> float | None:
    """Play a queued evaluation in the sandbox and store it.

    Returns None when it is done with, or the seconds after which to try again: another
    worker holds it, or this host could not build its revision.
    """
    worker = worker_name()
    evaluation = evaluation_claim(evaluation_id=evaluation_id, worker=worker)
    if evaluation is None:
        return _lease_wait(evaluation_id)
    revision = evaluation.revision
    environment = revision.competitor.environment.name
    with (
        evaluation_heartbeat(evaluation_id=evaluation.pk, worker=worker),
        contextlib.ExitStack() as builds,
    ):
        try:
            built = builds.enter_context(revisions_built_here([revision]))
        except ArenaError as error:
            return _give_back(evaluation=evaluation, worker=worker, problem=error.message)
        _log_local_builds(built, f"evaluation {evaluation.pk}")
        try:
            source = revision_agent_source(revision)
        except InvalidAgent as error:
            result = EvaluationResult(
                environment=environment,
                agent=str(revision),
                seeds=list(evaluation.seeds),
                infrastructure_error=f"the revision's build is missing: {error}",
            )
        else:
            result = run_evaluation(
                environment, source, backend=sandbox_backend(), seeds=list(evaluation.seeds)
            )
    evaluation_record_result(evaluation=evaluation, result=result, worker=worker)
    return None


def revision_validate_alone(*, revision: Revision, source: AgentSource, worker: str) -> bool:
    """Validate a revision of a one-player game by a short evaluation; store it and the
    outcome if ``worker`` still holds the validation's lease (checked under the revision's
    row lock). Returns whether it was stored."""
    environment = revision.competitor.environment.name
    validation = validate_evaluation(environment, source, backend=sandbox_backend(warm=False))
    evaluation = validation.evaluation
    log = validation.message
    if evaluation.log:
        log += "\n\n--- agent log ---\n" + evaluation.log
    with transaction.atomic():
        held = Revision.objects.select_for_update().filter(
            pk=revision.pk, validation_status=StepStatus.RUNNING, validation_lease_owner=worker
        )
        if not held.exists():
            return False
        row = Evaluation.objects.create(
            revision=revision,
            is_validation=True,
            seeds=evaluation.seeds,
            status=DuelStatus.RUNNING,
            lease_owner=worker,
            attempts=1,
            resend_at=None,
            started_at=revision.validation_started_at,
        )
        evaluation_record_result(evaluation=row, result=evaluation, worker=worker)
        revision_step_finish(
            revision=revision,
            step="validation",
            succeeded=validation.passed,
            error="" if validation.passed else validation.message,
            log=log[-LOG_CHARS:],
            worker=worker,
        )
    return True
