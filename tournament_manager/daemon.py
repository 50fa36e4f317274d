"""The tournament manager's work, one pass at a time (``manage.py run_tournament_manager``).

It runs tournaments and ladders, keeps competitions to their schedule (the final launched
at the deadline, its standings published: ``tournament_manager.services.competitions``),
keeps each game's standing competition open
(``tournament_manager.services.standing``), and refits the published leaderboards
(``tournament_manager.leaderboard``). Work whose worker died or whose queue message was
lost is the watchdog's (``manage.py run_watchdog``, ``core.jobs.watchdog.jobs_recover``).

Each step looks for due work, does it, and returns whether it did any. Every change is
claimed with a conditional UPDATE in the service that makes it (see
``tournament_manager.services``), so several managers can run side by side: each piece
of work is done by exactly one of them, and the others find nothing left to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db.models import F, Q
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    DuelStatus,
    Environment,
    LiveEvent,
    Participant,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tournament_manager.leaderboard import leaderboard_refit
from tournament_manager.selectors import others_waiting
from tournament_manager.services.competitions import competitions_advance
from tournament_manager.services.ladder import ladder_matchmake, ladder_refresh_entries
from tournament_manager.services.participants import participant_withdraw
from tournament_manager.services.settlement import tournament_settle
from tournament_manager.services.standing import (
    standing_competitions_close,
    standing_competitions_open,
    standing_scores_keep_up,
)
from tournament_manager.services.swiss import swiss_round_next
from tournament_manager.services.tournaments import tournament_launch

logger = logging.getLogger(__name__)

#: Rows one step handles per pass; the rest wait for the next pass, which comes at once
#: since the step did work.
BATCH = 100


def launch_scheduled_tournaments() -> bool:
    """Launch the drafts an organizer scheduled (``starts_at``) once they are due."""
    due = Tournament.objects.filter(
        status=TournamentStatus.DRAFT, starts_at__lte=timezone.now()
    ).order_by("starts_at", "pk")[:BATCH]
    did_work = False
    for tournament in due:
        try:
            tournament_launch(tournament=tournament)
        except ArenaError as error:
            # Still a draft (not taken by another manager): it cannot start as it is.
            # Unscheduled with the reason, so it is not retried every pass; the
            # organizer fixes it and schedules it again.
            unscheduled = Tournament.objects.filter(
                pk=tournament.pk, status=TournamentStatus.DRAFT, starts_at=tournament.starts_at
            ).update(starts_at=None, error=f"Not launched at the scheduled time: {error.message}")
            if unscheduled:
                logger.warning("%s not launched: %s", tournament, error.message)
                did_work = True
            continue
        logger.info("%s launched, as scheduled", tournament)
        did_work = True
    return did_work


def drop_finished_live_events() -> bool:
    """Delete the spectators' events of duels that are over: a duel's worker deletes them
    once it has stored the duel, but one that was cancelled, or failed after its worker
    died, leaves them behind (its replay, if any, takes over)."""
    deleted, _ = LiveEvent.objects.filter(
        duel__status__in=[DuelStatus.SUCCEEDED, DuelStatus.FAILED, DuelStatus.CANCELLED]
    ).delete()
    if deleted:
        logger.info("%d batches of live events of finished duels deleted", deleted)
    return bool(deleted)


def withdraw_disabled_participants() -> bool:
    """Withdraw the participants of drafts and running tournaments whose revision (or
    competitor) was disabled: their queued duels are cancelled."""
    disabled = (
        Participant.objects.filter(
            withdrawn=False,
            tournament__status__in=[TournamentStatus.DRAFT, TournamentStatus.RUNNING],
        )
        .filter(Q(revision__is_disabled=True) | Q(revision__competitor__is_disabled=True))
        .select_related("revision__competitor", "tournament")[:BATCH]
    )
    withdrawn = [
        participant
        for participant in disabled
        if participant_withdraw(participant=participant, reason="was disabled")
    ]
    for participant in withdrawn:
        logger.info("%s withdrawn: disabled", participant)
    return bool(withdrawn)


def settle_tournaments() -> bool:
    """Keep running tournaments' counts exact and finish those with nothing left to play;
    rank a stopped ladder again once the duels still running when it stopped are over."""
    did_work = False
    for tournament in Tournament.objects.filter(
        Q(status=TournamentStatus.RUNNING)
        | (Q(format=TournamentFormat.LADDER) & ~Q(ranked_duels=F("duels_done")))
    ):
        did_work |= tournament_settle(tournament=tournament)
    return did_work


def schedule_swiss_rounds() -> bool:
    """Pair the next round of every Swiss tournament whose current round is over."""
    did_work = False
    for tournament in Tournament.objects.filter(
        status=TournamentStatus.RUNNING, format=TournamentFormat.SWISS
    ):
        did_work |= swiss_round_next(tournament=tournament)
    return did_work


def run_ladders() -> bool:
    """Let new revisions into every running ladder, and fill its free duel slots."""
    did_work = False
    ladders = list(
        Tournament.objects.filter(
            status=TournamentStatus.RUNNING, format=TournamentFormat.LADDER
        ).select_related("environment")
    )
    # Asked once for the pass: every standing ladder yields to the same waiting duels (an
    # organizer ladder's duels queued in this pass hold them from the next).
    others_wait = any(ladder.is_standing for ladder in ladders) and others_waiting()
    for ladder in ladders:
        did_work |= ladder_refresh_entries(tournament=ladder)
        did_work |= bool(ladder_matchmake(tournament=ladder, others_wait=others_wait))
    return did_work


def refit_leaderboards() -> bool:
    """Fit again the published leaderboard of every environment whose rated matches or
    current revisions changed."""
    did_work = False
    for environment in Environment.objects.all():
        if leaderboard_refit(environment=environment):
            logger.info("%s: leaderboard refitted", environment.name)
            did_work = True
    return did_work


#: In order: what a later step decides depends on what the earlier ones changed.
STEPS: tuple[Callable[[], bool], ...] = (
    competitions_advance,
    launch_scheduled_tournaments,
    drop_finished_live_events,
    withdraw_disabled_participants,
    refit_leaderboards,
    settle_tournaments,
    schedule_swiss_rounds,
    standing_competitions_close,
    standing_competitions_open,
    standing_scores_keep_up,
    run_ladders,
)


def run_once() -> bool:
    """One pass over every step; True when any of them did work."""
    did_work = False
    for step in STEPS:
        if step():
            did_work = True
    return did_work
