"""Entering score competitions, and queueing their evaluations.

A hosted agent needs no entry: its newest validated revision is evaluated when the
organizers start (or re-run) a competition of its game. An online agent or an LLM player
is evaluated only once its owner enters it (``score_entry_create``): an online agent's
client must be connected to play its episodes, and an LLM player's spend its owner's
tokens. Entered in a started competition, it is evaluated at once on the same episodes
as everyone; entered in a draft, when the competition starts. Either way it is entered
in the competition's re-runs too, until its owner withdraws it.

Who may enter what (the owner only, in a competition they may see) is for the site's
views and the API to check; these services check the rest and raise ``ArenaError``.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from core.errors import ArenaError
from core.jobs.lifecycle import jobs_queue
from core.models import (
    Competitor,
    Evaluation,
    Job,
    JobKind,
    JobStatus,
    Revision,
    ScoreCompetition,
)
from core.models.scores import ENTERED_KINDS


def score_evaluations_queue(
    *, competition: ScoreCompetition, revisions: Iterable[Revision]
) -> list[Evaluation]:
    """An evaluation of each revision on the competition's episodes, queued (in the
    caller's transaction)."""
    seeds = competition.seeds
    evaluations = Evaluation.objects.bulk_create(
        Evaluation(competition=competition, revision=revision, seeds=seeds)
        for revision in revisions
    )
    jobs_queue(kind=JobKind.EVALUATION, subject_ids=[evaluation.pk for evaluation in evaluations])
    return evaluations


def _newest_validated(competitor: Competitor) -> Revision | None:
    return (
        Revision.objects.validated()
        .filter(competitor=competitor)
        .select_related("competitor")
        .order_by("-version")
        .first()
    )


def _entry_refusal(competition: ScoreCompetition, competitor: Competitor) -> str:
    environment = competition.environment
    if competitor.environment_id != environment.pk:
        return (
            f"{competitor.name} plays {competitor.environment.title}; this competition is "
            f"in {environment.title}"
        )
    if competitor.is_hosted:
        return (
            f"{competitor.name} is a hosted agent: it needs no entry, its newest validated "
            "revision is evaluated whenever the organizers start or re-run the competition"
        )
    if competitor.kind not in ENTERED_KINDS:
        return (
            f"{competitor.name} is {competitor.get_kind_display().lower()}: only online "
            "agents and LLM players are entered"
        )
    if competitor.is_disabled:
        return competitor.disabled_message
    if not environment.is_active:
        return f"{environment.title} is closed to new entries"
    return ""


def score_entry_create(
    *, competition: ScoreCompetition, competitor: Competitor
) -> Evaluation | None:
    """Enter an online agent or an LLM player; returns its evaluation, queued at once in
    a started competition, None in a draft (it is evaluated when the competition starts).
    ArenaError if it may not be entered, or is already."""
    refusal = _entry_refusal(competition, competitor)
    if refusal:
        raise ArenaError(refusal)
    revision = _newest_validated(competitor)
    if revision is None:
        raise ArenaError(f"{competitor.name} has no version ready to play")
    with transaction.atomic():
        # The competition's row first, as its start does: a start at the same moment
        # either sees this entry or runs before it.
        locked = ScoreCompetition.objects.select_for_update().get(pk=competition.pk)
        if locked.entered.filter(pk=competitor.pk).exists():
            raise ArenaError(f"{competitor.name} is already entered in {competition.name}")
        locked.entered.add(competitor)
        if locked.started_at is None:
            return None
        if locked.evaluations.filter(revision__competitor=competitor).exists():
            return None  # entered before, withdrawn while its evaluation ran: it stays
        [evaluation] = score_evaluations_queue(competition=locked, revisions=[revision])
    return evaluation


def score_entry_withdraw(*, competition: ScoreCompetition, competitor: Competitor) -> None:
    """Withdraw an entered competitor: it is not evaluated again, and its evaluation still
    queued is cancelled and removed; one already played stays on the leaderboard until
    the competition is re-run. ArenaError if it is not entered, or is being evaluated
    (withdraw it once its evaluation is over)."""
    with transaction.atomic():
        locked = ScoreCompetition.objects.select_for_update().get(pk=competition.pk)
        if not locked.entered.filter(pk=competitor.pk).exists():
            raise ArenaError(f"{competitor.name} is not entered in {competition.name}")
        # Its jobs' rows held: a worker's claim waits, then finds a queued one gone.
        jobs = list(
            Job.objects.select_for_update().filter(
                kind=JobKind.EVALUATION,
                evaluation__competition=locked,
                evaluation__revision__competitor=competitor,
            )
        )
        if any(job.status == JobStatus.RUNNING for job in jobs):
            raise ArenaError(
                f"{competitor.name} is being evaluated now: withdraw it once its evaluation is over"
            )
        Evaluation.objects.filter(
            pk__in=[job.evaluation_id for job in jobs if job.status == JobStatus.QUEUED]
        ).delete()
        locked.entered.remove(competitor)
