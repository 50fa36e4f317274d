"""Standing competitions: each game's own, kept open by the tournament manager
(``Environment.standing_competition``, on by default), so that every validated revision is
rated without anyone acting.

A game of two or more players has a standing ladder: the newest validated revision of
every competitor joins it (``ladder_refresh_entries``), and it schedules duels only while
no other tournament's duel waits for a worker (``ladder_matchmake``): organizers'
tournaments take precedence. A game that has a ladder of an organizer running needs no
other: every revision is rated there.

A one-player game has a standing score competition: the newest validated revision of each
hosted agent (and of each online agent or LLM player its owner entered) is evaluated in it
once, when it is validated; its leaderboard shows each competitor's newest played
evaluation (``reads.scores.score_leaderboard``).

An organizer turns a game's standing competition off in the admin (or by stopping its
standing ladder, which unticks it): its ladder is stopped, its score competition keeps its
leaderboard and evaluates no more.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core.models import (
    Environment,
    Revision,
    ScoreCompetition,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from core.services.scores import score_evaluations_queue
from tournament_manager.selectors import latest_validated_revisions, others_waiting
from tournament_manager.services.tournaments import ladder_open, tournament_stop

logger = logging.getLogger(__name__)


def standing_ladder_name(environment: Environment) -> str:
    return f"{environment.title} ladder"


def standing_competitions_open() -> bool:
    """Open the standing competition of every game that should have one and has none
    (a game with any ladder running has one); returns whether any was opened."""
    running_ladder = Tournament.objects.filter(
        environment=OuterRef("pk"),
        format=TournamentFormat.LADDER,
        status=TournamentStatus.RUNNING,
        open_entry=True,
        entrants__isnull=True,
    )
    standing_score = ScoreCompetition.objects.filter(environment=OuterRef("pk"), is_standing=True)
    wanted = Environment.objects.filter(standing_competition=True, is_active=True)
    opened = False
    for environment in wanted.filter(players__gte=2).exclude(Exists(running_ladder)):
        ladder = ladder_open(
            environment=environment, name=standing_ladder_name(environment), standing=True
        )
        if ladder is not None:
            logger.info("%s: its standing ladder opened", environment.name)
            opened = True
    for environment in wanted.filter(players=1).exclude(Exists(standing_score)):
        with transaction.atomic():
            # The game's row held: of two managers, one opens it.
            Environment.objects.select_for_update().get(pk=environment.pk)
            if environment.score_competitions.filter(is_standing=True).exists():
                continue
            ScoreCompetition.objects.create(
                environment=environment,
                name=f"{environment.title} scores",
                episodes=environment.matches_per_duel,
                is_standing=True,
                started_at=timezone.now(),
            )
        logger.info("%s: its standing score competition opened", environment.name)
        opened = True
    return opened


def standing_competitions_close() -> bool:
    """Stop the standing ladder of every game whose standing competition an organizer
    turned off (or closed to new entries); returns whether any was stopped."""
    closed = Tournament.objects.filter(is_standing=True, status=TournamentStatus.RUNNING).exclude(
        environment__standing_competition=True, environment__is_active=True
    )
    stopped = False
    for ladder in closed:
        tournament_stop(tournament=ladder)
        logger.info("%s: its standing ladder stopped", ladder.environment_id)
        stopped = True
    return stopped


def standing_scores_keep_up() -> bool:
    """Evaluate, in each open standing score competition, every newest validated revision
    not evaluated there yet, while no organizer's duel or evaluation waits for a worker;
    returns whether any was queued. A pass that finds nothing to queue (the usual one: it
    runs every second) takes no lock."""
    queued = False
    competitions = ScoreCompetition.objects.filter(
        is_standing=True,
        started_at__isnull=False,
        environment__standing_competition=True,
        environment__is_active=True,
    ).select_related("environment")
    pending = [competition for competition in competitions if _not_evaluated(competition)]
    # Idle capacity only: while an organizer's duel or evaluation waits, it queues none.
    if not pending or others_waiting():
        return False
    for competition in pending:
        with transaction.atomic():
            # Its row held, as a start or an entry holds it: of two managers, one queues.
            locked = ScoreCompetition.objects.select_for_update().get(pk=competition.pk)
            new = _not_evaluated(locked)
            if new:
                score_evaluations_queue(competition=locked, revisions=new)
                logger.info("%s: %d revision(s) to evaluate", competition, len(new))
                queued = True
    return queued


def _not_evaluated(competition: ScoreCompetition) -> list[Revision]:
    """The newest validated revisions of its game not evaluated in it yet: hosted agents',
    and the online agents' and LLM players' entered in it."""
    entered = set(competition.entered.values_list("pk", flat=True))
    evaluated = set(competition.evaluations.values_list("revision_id", flat=True))
    return [
        revision
        for revision in latest_validated_revisions(competition.environment)
        if revision.pk not in evaluated
        and (revision.competitor.is_hosted or revision.competitor_id in entered)
    ]
