"""The continuous ladder: its entries (the newest validated revision of every competitor)
and its matchmaking."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelSeat,
    Evaluation,
    Participant,
    Tournament,
    TournamentStatus,
)
from core.services.online import online_present
from tournament_manager.bradley_terry import UNFITTED_SCORE, UNFITTED_SCORE_SD
from tournament_manager.matchmaking import LadderAgent, Matchmaker, hosted_duel_limit
from tournament_manager.selectors import (
    asks_for_duels,
    latest_validated_revisions,
    others_waiting,
    paused_revisions,
)
from tournament_manager.services.participants import participant_withdraw
from tournament_manager.services.scheduling import (
    ACTIVE,
    duels_create,
    duels_start,
    ladder_duels_scheduled,
)
from tournament_manager.services.settlement import tournament_settle

logger = logging.getLogger(__name__)


def ladder_refresh_entries(*, tournament: Tournament) -> bool:
    """Make the ladder's entries the newest validated revision of every competitor.

    A revision validated since joins and replaces its competitor's previous one, which
    is withdrawn (its duels stay; ratings are per competitor, so nothing is lost); a
    revision no longer valid (disabled) leaves. Returns whether anything changed. A
    ladder closed to new entries (``Tournament.open_entry`` off) keeps its own; a
    competition's own (``Tournament.entrants``) takes its teams' agents only.
    """
    if not tournament.open_entry:
        return False
    newest = {
        revision.competitor_id: revision
        for revision in latest_validated_revisions(tournament.environment)
    }
    if tournament.entrants_id is not None:  # a competition's own: its teams' agents only
        entered = set(
            Competitor.objects.filter(
                team__competition=tournament.entrants_id, team__disqualified_at__isnull=True
            ).values_list("pk", flat=True)
        )
        newest = {
            competitor: revision for competitor, revision in newest.items() if competitor in entered
        }
    changed = False
    for participant in tournament.participants.filter(withdrawn=False).select_related("revision"):
        replacement = newest.get(participant.revision.competitor_id)
        if replacement is None or replacement.pk != participant.revision_id:
            reason = "left" if replacement is None else f"was replaced by {replacement}"
            changed |= participant_withdraw(participant=participant, reason=reason)
    playing = set(
        tournament.participants.filter(withdrawn=False).values_list("revision_id", flat=True)
    )
    for revision in newest.values():
        if revision.pk in playing:
            continue
        now = timezone.now()
        # get_or_create survives another manager creating the same row first.
        participant, created = Participant.objects.get_or_create(
            tournament=tournament, revision=revision, defaults={"joined_at": now}
        )
        rejoined = not created and Participant.objects.filter(
            pk=participant.pk, withdrawn=True
        ).update(withdrawn=False, joined_at=now)
        if created or rejoined:
            changed = True
            logger.info("%s: %s joined", tournament, revision)
    if changed:
        tournament_settle(tournament=tournament, rerank=True)
    return changed


def ladder_matchmaker() -> Matchmaker:
    return Matchmaker(
        wait_seconds=settings.ARENA_LADDER_WAIT_SECONDS,
        newcomer_duels=settings.ARENA_LADDER_NEWCOMER_DUELS,
        fill_seconds=settings.ARENA_ONLINE_FILL_SECONDS,
    )


def ladder_matchmake(
    *, tournament: Tournament, now: datetime | None = None, others_wait: bool | None = None
) -> int:
    """Fill the ladder's free duel slots (its pace, ``Tournament.concurrent_duels`` or
    else ``ARENA_LADDER_CONCURRENT_DUELS``, queued or running at once between hosted
    agents, and fewer than one per ``players`` hosted entries;
    ``ARENA_ONLINE_CONCURRENT_DUELS`` with an online agent or an LLM player) with the
    best pairings of its idle agents; returns duels created.

    A standing ladder uses idle capacity only: while another tournament's duel waits
    for a worker, it schedules none (its running duels finish). ``others_wait``: that,
    when the caller has asked already (a pass over every ladder asks once)."""
    now = now or timezone.now()
    ladder = Tournament.objects.get(pk=tournament.pk)
    if not ladder.is_ladder or ladder.status != TournamentStatus.RUNNING:
        return 0
    if ladder.is_standing and (others_waiting() if others_wait is None else others_wait):
        return 0
    pace = ladder.concurrent_duels or settings.ARENA_LADDER_CONCURRENT_DUELS
    # Read before counting the busy duels: the claim below compares against it.
    seen_total = ladder.duels_total
    active = Duel.objects.filter(tournament=ladder, status__in=ACTIVE)
    active_networked = (active.with_online_seat() | active.with_llm_seat()).distinct().count()
    active_hosted = active.count() - active_networked
    slots = pace - active_hosted
    online_slots = settings.ARENA_ONLINE_CONCURRENT_DUELS - active_networked
    # A ladder of a fixed length schedules no more duels than it has left to play.
    left = (
        None if ladder.duels_limit is None else ladder.duels_limit - ladder_duels_scheduled(ladder)
    )
    if left is not None and left <= 0:
        return 0
    if slots <= 0 and online_slots <= 0:
        return 0
    size = ladder.environment.players
    idle = _ladder_idle_agents(ladder, now)
    if ladder.is_standing:
        idle = _settled_resting(idle)
        if not any(_unsettled(agent) for agent in idle):
            return 0
    hosted = sum(not agent.networked for agent in idle) + size * active_hosted
    limit = hosted_duel_limit(hosted, size=size, slots=pace)
    slots = min(slots, limit - active_hosted)
    pairs = ladder_matchmaker().groupings(idle, size=size, slots=slots, online_slots=online_slots)
    if ladder.is_standing:
        pairs = [group for group in pairs if any(_unsettled(agent) for agent in group)]
    if left is not None:
        pairs = pairs[:left]
    if not pairs:
        return 0
    with transaction.atomic():
        # A ladder's total only grows (cancelled duels count): a manager that matched the
        # same free slots a moment earlier has moved it, and this one leaves them.
        claimed = Tournament.objects.filter(
            pk=ladder.pk, status=TournamentStatus.RUNNING, duels_total=seen_total
        ).update(duels_total=seen_total + len(pairs))
        if not claimed:
            return 0
        duels = duels_create(ladder, _seats_balanced(ladder, pairs))
        duels_start(duels)
    logger.info("%s: %d duel(s) scheduled", ladder, len(duels))
    return len(duels)


def _unsettled(agent: LadderAgent) -> bool:
    return asks_for_duels(agent.duels, online=agent.online)


def _settled_resting(agents: list[LadderAgent]) -> list[LadderAgent]:
    """The settled entries as if they had just played: no waiting bonus, so that the
    pairings anchored on unsettled entries come first."""
    return [
        agent if _unsettled(agent) else dataclasses.replace(agent, waiting=0.0) for agent in agents
    ]


def _seats_balanced(
    ladder: Tournament, pairs: Sequence[tuple[LadderAgent, ...]]
) -> list[tuple[int, ...]]:
    """Each pair as (player 1, player 2) so that, over the ladder, each of two agents is
    player 1 (who moves first in a duel's even-numbered matches) as often as the other:
    with an odd number of matches per duel that is who moves first more often. A group of
    more than two keeps its order: its seats rotate within the duel, evenly over a
    number of matches that is a multiple of the seats (``ladder_matches_per_duel``)."""
    as_seat_1 = Counter(
        (group[0][0], group[1][0])
        for group in DuelSeat.objects.filter(duel__tournament=ladder, duel__num_players=2)
        .groups("revision_id")
        .values()
        if len(group) == 2
    )
    ordered: list[tuple[int, ...]] = []
    for group in pairs:
        if len(group) > 2:
            ordered.append(tuple(agent.key for agent in group))
            continue
        one, two = group
        if as_seat_1[(one.key, two.key)] > as_seat_1[(two.key, one.key)]:
            one, two = two, one
        ordered.append((one.key, two.key))
    return ordered


def _ladder_idle_agents(ladder: Tournament, now: datetime) -> list[LadderAgent]:
    """The entries with no duel queued or running, with their places on the published
    leaderboard and their waiting times; an online agent only while it is in the queue and
    connected."""
    # The duels being played (a few: the ladder's slots); the rest of the history is in
    # each entry's counters (``_ladder_entries_count``), read with the entries.
    busy = set(
        DuelSeat.objects.filter(
            duel__in=Duel.objects.filter(tournament=ladder, status__in=ACTIVE)
        ).values_list("revision_id", flat=True)
    )
    # An online agent being evaluated has its seat taken: one game at a time.
    evaluated = set(
        Evaluation.objects.active()
        .with_online_seat()
        .values_list("revision__competitor_id", flat=True)
    )
    # One row per entry, with only what pairing needs: a ladder of thousands is read
    # every second (loading its revisions whole took a second at 10,000 entries).
    entries = [
        entry
        for entry in ladder.participants.filter(withdrawn=False)
        .order_by("pk")
        .values_list(
            "revision_id",
            "revision__competitor_id",
            "revision__competitor__kind",
            "joined_at",
            "last_duel_at",
            "duels_played",
            "revision__competitor__leaderboard_entry__revision_id",
            "revision__competitor__leaderboard_entry__score",
            "revision__competitor__leaderboard_entry__score_sd",
            "revision__competitor__online_seat__queued_at",
        )
        if entry[0] not in busy and entry[1] not in evaluated
    ]
    # An entry whose last duels all failed (its server down...) waits until it validates
    # again: one broken entry does not fill the ladder with failures.
    paused = paused_revisions(entry[0] for entry in entries)
    entries = [entry for entry in entries if entry[0] not in paused]
    # Presence is the stream: a queued model whose client holds none is not paired.
    queued = {
        competitor: queued_at
        for _, competitor, kind, *_, queued_at in entries
        if kind == CompetitorKind.ONLINE and queued_at is not None
    }
    present = online_present(Competitor(pk=competitor) for competitor in queued)
    agents = []
    for revision, competitor, kind, joined_at, last_duel_at, duels, fitted, score, sd, _ in entries:
        if kind == CompetitorKind.ONLINE and competitor not in present:
            continue
        since = max(
            moment
            for moment in (last_duel_at, joined_at, ladder.started_at, queued.get(competitor))
            if moment is not None
        )
        agents.append(
            LadderAgent(
                key=revision,
                competitor=competitor,
                # Where the published leaderboard places it; a revision not on it yet
                # (no rated match, or newer than the last fit) is as the fit's prior.
                mu=score if fitted == revision else UNFITTED_SCORE,
                sigma=sd if fitted == revision else UNFITTED_SCORE_SD,
                duels=duels,
                waiting=(now - since).total_seconds(),
                online=kind == CompetitorKind.ONLINE,
                waits_on_network=kind == CompetitorKind.LLM,
            )
        )
    return agents
