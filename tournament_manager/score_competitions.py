"""Score competitions: starting (and re-running) their evaluations, each a job
(``core.jobs``, which keeps them going when a worker dies or a queue message is lost)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.jobs import job_retry, jobs_queue
from core.models import Evaluation, Job, JobKind, JobStatus, ScoreCompetition
from core.models.submissions import CompetitorKind
from tournament_manager.selectors import latest_validated_revisions


def score_competition_start(*, competition: ScoreCompetition) -> list[Evaluation]:
    """Evaluate every competitor's newest validated revision on the competition's episodes.

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
    entrants = [
        revision
        for revision in latest_validated_revisions(environment)
        if revision.competitor.kind == CompetitorKind.HOSTED
    ]
    if not entrants:
        raise ArenaError(f"{environment.title} has no validated agent to evaluate yet")
    seeds = competition.seeds
    with transaction.atomic():
        ScoreCompetition.objects.select_for_update().get(pk=competition.pk)
        competition.evaluations.all().delete()
        evaluations = Evaluation.objects.bulk_create(
            Evaluation(competition=competition, revision=revision, seeds=seeds)
            for revision in entrants
        )
        competition.started_at = timezone.now()
        competition.save(update_fields=["started_at"])
        jobs_queue(
            kind=JobKind.EVALUATION, subject_ids=[evaluation.pk for evaluation in evaluations]
        )
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
