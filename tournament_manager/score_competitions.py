"""Score competitions: starting (and re-running) their evaluations, each a job
(``core.jobs``, which keeps them going when a worker dies or a queue message is lost)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.jobs.lifecycle import job_retry
from core.models import (
    Environment,
    Evaluation,
    Job,
    JobKind,
    JobStatus,
    ScoreCompetition,
    User,
)
from core.services.scores import score_evaluations_queue
from tournament_manager.selectors import latest_validated_revisions


def score_competition_create(
    *, environment: Environment, name: str, episodes: int, created_by: User
) -> ScoreCompetition:
    """A score competition not started yet (``score_competition_start``)."""
    return ScoreCompetition.objects.create(
        environment=environment, name=name, episodes=episodes, created_by=created_by
    )


def score_competition_start(*, competition: ScoreCompetition) -> list[Evaluation]:
    """Evaluate every hosted competitor's newest validated revision on the competition's
    episodes, and that of every online agent and LLM player its owner entered
    (``core.services.scores``).

    A re-run starts afresh: the evaluations of an earlier run are deleted (a worker still
    playing one can no longer record it) and the entrants are chosen again, so a newer
    revision replaces its predecessor on the leaderboard.
    """
    environment = competition.environment
    if environment.players != 1:
        raise ArenaError(
            f"{environment.title} is a {environment.players}-player game; score competitions "
            "are for one-player games (run a tournament instead)"
        )
    with transaction.atomic():
        # Locked first: an entry made meanwhile is either seen here or made after.
        ScoreCompetition.objects.select_for_update().get(pk=competition.pk)
        entered = set(competition.entered.values_list("pk", flat=True))
        entrants = [
            revision
            for revision in latest_validated_revisions(environment)
            if revision.competitor.is_hosted or revision.competitor_id in entered
        ]
        if not entrants:
            raise ArenaError(f"{environment.title} has no validated agent to evaluate yet")
        competition.evaluations.all().delete()
        evaluations = score_evaluations_queue(competition=competition, revisions=entrants)
        competition.started_at = timezone.now()
        competition.save(update_fields=["started_at"])
    return evaluations


def score_competition_rerun_failed(*, competition: ScoreCompetition) -> int:
    """Queue again the evaluations of ``competition`` that failed (an infrastructure
    failure: never scored), keeping the others; returns how many."""
    failed = Job.objects.filter(
        kind=JobKind.EVALUATION, evaluation__competition=competition, status=JobStatus.FAILED
    )
    with transaction.atomic():
        retried = [job for job in failed.select_for_update() if job_retry(job=job)]
        Evaluation.objects.filter(pk__in=[job.evaluation_id for job in retried]).update(error="")
    return len(retried)
