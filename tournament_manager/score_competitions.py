"""Score competitions: starting (and re-running) their evaluations, and keeping them going
when a worker dies or a queue message is lost (steps of the tournament manager's pass)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import dispatch
from core.errors import ArenaError
from core.models import DuelStatus, Evaluation, ScoreCompetition
from core.models.submissions import CompetitorKind, resend_at_default
from tournament_manager.selectors import latest_validated_revisions

PLAY_EVALUATION = "duel_runner.tasks.play_evaluation"


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
        for evaluation in evaluations:
            dispatch.start(PLAY_EVALUATION, evaluation_id=evaluation.pk)
    return evaluations


def score_competition_rerun_failed(*, competition: ScoreCompetition) -> int:
    """Queue again the evaluations of ``competition`` that failed (an infrastructure
    failure: never scored), keeping the others; returns how many."""
    with transaction.atomic():
        failed = list(competition.evaluations.select_for_update().filter(status=DuelStatus.FAILED))
        Evaluation.objects.filter(pk__in=[evaluation.pk for evaluation in failed]).update(
            status=DuelStatus.QUEUED,
            error="",
            ended_at=None,
            resends=0,
            resend_at=resend_at_default(),
        )
        for evaluation in failed:
            dispatch.start(PLAY_EVALUATION, evaluation_id=evaluation.pk)
    return len(failed)


def evaluation_requeue_expired(*, evaluation: Evaluation) -> bool:
    """Queue again an evaluation whose worker stopped renewing its lease (it died), and
    start it; the worker that lost the lease can no longer record its result."""
    with transaction.atomic():
        requeued = (
            Evaluation.objects.filter(
                pk=evaluation.pk, attempts__lt=settings.ARENA_DUEL_MAX_ATTEMPTS
            )
            .lease_expired()
            .update(
                status=DuelStatus.QUEUED,
                lease_owner="",
                lease_expires_at=None,
                resend_at=resend_at_default(),
            )
        )
        if requeued:
            dispatch.start(PLAY_EVALUATION, evaluation_id=evaluation.pk)
    return bool(requeued)


def evaluation_fail_exhausted(*, evaluation: Evaluation) -> bool:
    """Fail an evaluation whose worker lost the lease on its last allowed attempt: an
    infrastructure failure, never a score."""
    failed = (
        Evaluation.objects.filter(pk=evaluation.pk, attempts__gte=settings.ARENA_DUEL_MAX_ATTEMPTS)
        .lease_expired()
        .update(
            status=DuelStatus.FAILED,
            ended_at=timezone.now(),
            lease_owner="",
            lease_expires_at=None,
            error=(
                f"Not played: its worker stopped answering (lease expired) on each of "
                f"{settings.ARENA_DUEL_MAX_ATTEMPTS} attempts. Check the workers, then "
                "re-run the competition from the admin."
            ),
        )
    )
    return bool(failed)


def evaluation_resend(*, evaluation: Evaluation) -> bool:
    """Send again the queue message of an evaluation that sat queued past its re-send
    time (the message was lost); the next re-send waits twice as long."""
    now = timezone.now()
    wait = timedelta(seconds=settings.ARENA_RESEND_AFTER_SECONDS * 2 ** (evaluation.resends + 1))
    with transaction.atomic():
        resent = (
            Evaluation.objects.filter(pk=evaluation.pk, resends=evaluation.resends)
            .resend_due(now)
            .update(resends=evaluation.resends + 1, resend_at=now + wait)
        )
        if resent:
            dispatch.start(PLAY_EVALUATION, evaluation_id=evaluation.pk)
    return bool(resent)
