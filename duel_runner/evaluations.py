"""Playing evaluations stored in the database: a revision of a one-player game alone on
seeded episodes, for a score competition or to validate an upload.

Its one seat is any seat a duel has (``duel_runner.services.seat_backend``): a hosted
agent's sandbox, an online agent's remote seat (told of the evaluation as a ``duel``
event whose ``evaluation`` says which), an LLM player's harness on the LLM clock.

An evaluation is a job like a duel (``core.jobs``): a worker that dies stops renewing its
lease, the watchdog queues it again, and only the lease's owner records a result, so an
evaluation is never counted twice.
"""

from __future__ import annotations

import contextlib
import logging

from django.utils import timezone

from core.errors import ArenaError
from core.jobs.local_builds import revisions_built_here
from core.jobs.policies import Outcome
from core.jobs.worker import (
    job_claim,
    job_give_back,
    job_heartbeat,
    job_record,
    job_wait,
    worker_name,
)
from core.models import DuelStatus, Evaluation, Job, JobKind, Revision
from duel_runner.services import (
    LOG_CHARS,
    RETRY_SECONDS,
    _log_local_builds,
    environment_limits,
    revision_agent_source,
    seat_backend,
    seat_clock,
    unplayable,
)
from referee.evaluation import EvaluationResult, run_evaluation, validate_evaluation
from sandboxes import AgentSource, InvalidAgent, SandboxBackend

logger = logging.getLogger(__name__)


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


def evaluation_store_result(
    *, evaluation: Evaluation, result: EvaluationResult, worker: str
) -> None:
    """Store a played evaluation, in the caller's transaction, which holds the work it is
    part of (its job, or its revision's validation)."""
    Evaluation.objects.filter(pk=evaluation.pk).update(
        ended_at=timezone.now(),
        played_by=worker,
        restarts=result.restarts,
        log=result.log[-LOG_CHARS:],
        **_result_fields(result),
    )
    evaluation.refresh_from_db()


def evaluation_record_result(
    *, job: Job, evaluation: Evaluation, result: EvaluationResult, worker: str
) -> bool:
    """Store a played evaluation if ``worker`` still holds its job, and finish the job;
    returns whether it did."""

    def store() -> Outcome:
        evaluation_store_result(evaluation=evaluation, result=result, worker=worker)
        return Outcome(evaluation.status == DuelStatus.SUCCEEDED, error=evaluation.error)

    return job_record(job=job, worker=worker, store=store)


def _announcement(evaluation: Evaluation) -> dict[str, object]:
    """What an online agent is told as its evaluation begins (its ``duel`` event, with no
    duel and no opponent: the episodes are played alone)."""
    return {
        "competition": evaluation.competition_id,
        "environment": evaluation.revision.competitor.environment.name,
        "player": 1,
        "players": 1,
        "opponent": None,
        "opponents": [],
        "matches": len(evaluation.seeds),
        "episodes": len(evaluation.seeds),
    }


def evaluation_play(*, evaluation_id: int) -> float | None:
    """Play a queued evaluation in its seat and store it.

    Returns None when it is done with, or the seconds after which to try again: another
    worker holds it, this host could not build its revision, or its online agent is
    playing a duel (a seat plays one game at a time).
    """
    worker = worker_name()
    busy = Evaluation.objects.filter(pk=evaluation_id).seat_busy().exists()
    if busy:
        return RETRY_SECONDS
    job = job_claim(kind=JobKind.EVALUATION, subject_id=evaluation_id, worker=worker)
    if job is None:
        return job_wait(kind=JobKind.EVALUATION, subject_id=evaluation_id)
    evaluation = Evaluation.objects.select_related(
        "revision__competitor__environment", "revision__competitor__llm"
    ).get(pk=evaluation_id)
    revision = evaluation.revision
    with job_heartbeat(job=job, worker=worker), contextlib.ExitStack() as builds:
        try:
            built = builds.enter_context(revisions_built_here([revision]))
        except ArenaError as error:
            again = job_give_back(job=job, worker=worker, problem=error.message)
            return RETRY_SECONDS if again else None
        _log_local_builds(built, f"evaluation {evaluation.pk}")
        result = _evaluation_result(evaluation)
    evaluation_record_result(job=job, evaluation=evaluation, result=result, worker=worker)
    return None


def _evaluation_result(evaluation: Evaluation) -> EvaluationResult:
    """Play the claimed evaluation, whose agent's build this host holds."""
    revision = evaluation.revision
    environment = revision.competitor.environment
    try:
        source = revision_agent_source(revision)
        backend = seat_backend(
            revision,
            game=evaluation.pk,
            announcement=_announcement(evaluation),
            kind="evaluation",
        )
    except (InvalidAgent, ArenaError) as error:
        return EvaluationResult(
            environment=environment.name,
            agent=str(revision),
            seeds=list(evaluation.seeds),
            infrastructure_error=unplayable(error),
        )
    return run_evaluation(
        environment.game,
        source,
        backend=backend,
        seeds=list(evaluation.seeds),
        **{
            **environment_limits(environment),
            **seat_clock([revision.competitor], environment.game),
        },
    )


def revision_validate_alone(
    *, job: Job, revision: Revision, source: AgentSource, backend: SandboxBackend, worker: str
) -> bool:
    """Validate a revision of a one-player game by a short evaluation in ``backend``; store
    it and the outcome if ``worker`` still holds the validation ``job``. Returns whether
    it did."""
    environment = revision.competitor.environment.name
    validation = validate_evaluation(environment, source, backend=backend)
    evaluation = validation.evaluation
    log = validation.message
    if evaluation.log:
        log += "\n\n--- agent log ---\n" + evaluation.log

    def store() -> Outcome:
        row = Evaluation.objects.create(
            revision=revision,
            is_validation=True,
            seeds=evaluation.seeds,
            status=DuelStatus.RUNNING,
            started_at=job.started_at,
        )
        evaluation_store_result(evaluation=row, result=evaluation, worker=worker)
        return Outcome(
            succeeded=validation.passed,
            error="" if validation.passed else validation.message,
            log=log[-LOG_CHARS:],
        )

    return job_record(job=job, worker=worker, store=store)
