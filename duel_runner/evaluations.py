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

import logging

from django.utils import timezone

from core.errors import ArenaError
from core.jobs.policies import Outcome
from core.jobs.worker import Claimed, Done, job_defer, job_run
from core.models import DuelStatus, Evaluation, JobKind, Revision
from duel_runner.services import (
    LOG_CHARS,
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
        played_by=worker,
        restarts=result.restarts,
        log=result.log[-LOG_CHARS:],
        **_result_fields(result),
    )
    evaluation.refresh_from_db()


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


def evaluation_play(*, evaluation_id: int) -> None:
    """The evaluation job (``core.jobs.worker.job_run``): play a queued evaluation in its
    seat and store it. An online agent's waits while it plays a duel (a seat plays one
    game at a time): put off, and sent again shortly."""
    if Evaluation.objects.filter(pk=evaluation_id).seat_busy().exists():
        job_defer(kind=JobKind.EVALUATION, subject_id=evaluation_id)
        return
    job_run(kind=JobKind.EVALUATION, subject_id=evaluation_id, work=_evaluation_work)


def _evaluation_work(claimed: Claimed) -> Done:
    evaluation = Evaluation.objects.select_related(
        "revision__competitor__environment", "revision__competitor__llm"
    ).get(pk=claimed.job.subject_id)
    claimed.hold_builds([evaluation.revision], what=f"evaluation {evaluation.pk}")
    result = _evaluation_result(evaluation)

    def store() -> Outcome:
        evaluation_store_result(evaluation=evaluation, result=result, worker=claimed.worker)
        return Outcome(evaluation.status == DuelStatus.SUCCEEDED, error=evaluation.error)

    return Done(store=store)


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
    *, claimed: Claimed, revision: Revision, source: AgentSource, backend: SandboxBackend
) -> tuple[Done, bool]:
    """Validate a revision of a one-player game by a short evaluation in ``backend``: how
    to store it and the outcome in the validation job ``claimed``, and whether it passed."""
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
            # Its own times: it has no job (``Evaluation.played``).
            started_at=claimed.job.started_at,
            ended_at=timezone.now(),
        )
        evaluation_store_result(evaluation=row, result=evaluation, worker=claimed.worker)
        return Outcome(
            succeeded=validation.passed,
            error="" if validation.passed else validation.message,
            log=log[-LOG_CHARS:],
        )

    return Done(store=store), validation.passed
