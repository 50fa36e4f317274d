"""A ladder at scale: its matchmaking reads each entry's counters (duels played, last
duel's end), kept by each duel's end, instead of the whole history; its standings (a fit
of all its matches) are computed by the tournament manager at most every
``ARENA_LADDER_STANDINGS_SECONDS``, never by a duel's end."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from core.models import (
    Duel,
    DuelStatus,
    Job,
    JobStatus,
    Participant,
    TournamentFormat,
    TournamentStatus,
)
from tests.factories import DuelFactory, MatchFactory, ParticipantFactory, TournamentFactory
from tournament_manager.daemon import settle_tournaments
from tournament_manager.services.ladder import _ladder_idle_agents
from tournament_manager.services.settlement import tournament_duel_finished, tournament_settle
from tournament_manager.services.tournaments import tournament_stop

pytestmark = pytest.mark.django_db


@pytest.fixture
def ladder():
    return TournamentFactory(
        format=TournamentFormat.LADDER,
        status=TournamentStatus.RUNNING,
        started_at=timezone.now() - datetime.timedelta(hours=1),
        matches_per_duel=1,
    )


@pytest.fixture
def entries(ladder):
    joined = timezone.now() - datetime.timedelta(hours=1)
    return [ParticipantFactory(tournament=ladder, joined_at=joined) for _ in range(3)]


def finish(ladder, one, two, *, status=DuelStatus.SUCCEEDED, minutes_ago=1):
    ended = timezone.now() - datetime.timedelta(minutes=minutes_ago)
    duel = DuelFactory(
        tournament=ladder,
        revisions=[one.revision, two.revision],
        finished=True,
        status=status,
        result="PLAYER_1_WIN" if status == DuelStatus.SUCCEEDED else "",
        ended_at=ended,
    )
    if status == DuelStatus.SUCCEEDED:
        # Won by player 1, as the duel says (the factory's own play could go either way
        # from its opening).
        MatchFactory(duel=duel, index=0, scores=[1.0, 0.0], result="PLAYER_1_WIN")
    tournament_duel_finished(duel=duel)
    return duel


def test_each_duels_end_counts_in_its_players_entries(ladder, entries):
    a, b, c = entries
    finish(ladder, a, b, minutes_ago=30)
    finish(ladder, a, c, minutes_ago=20)
    failed = finish(ladder, b, c, status=DuelStatus.FAILED, minutes_ago=10)

    counted = {entry.pk: entry for entry in Participant.objects.filter(tournament=ladder)}
    assert [counted[entry.pk].duels_played for entry in entries] == [2, 1, 1]
    # A failed duel is no duel played, but it ended: its players waited from then.
    assert counted[b.pk].last_duel_at == failed.played.ended_at
    assert counted[c.pk].last_duel_at == failed.played.ended_at
    assert counted[a.pk].last_duel_at < failed.played.ended_at


def test_matchmaking_reads_the_counters_as_the_history_tells(ladder, entries):
    a, b, c = entries
    finish(ladder, a, b, minutes_ago=30)
    finish(ladder, a, c, minutes_ago=20)
    busy = DuelFactory(tournament=ladder, revisions=[b.revision, c.revision])
    busy.status = DuelStatus.RUNNING
    busy.save()
    now = timezone.now()

    idle = {agent.key: agent for agent in _ladder_idle_agents(ladder, now)}

    assert set(idle) == {a.revision_id}  # b and c are playing
    assert idle[a.revision_id].duels == 2
    assert idle[a.revision_id].waiting == pytest.approx(20 * 60, abs=5)


def test_a_ladders_standings_wait_for_the_manager_and_its_cadence(ladder, entries, settings):
    settings.ARENA_LADDER_STANDINGS_SECONDS = 3600
    a, b, _c = entries
    finish(ladder, a, b)

    ladder.refresh_from_db()
    assert ladder.duels_done == 1  # counted at once
    assert ladder.ranked_duels == 0  # ranked by the manager, not by the duel's end

    tournament_settle(tournament=ladder)  # the manager's pass: never ranked, so at once
    ladder.refresh_from_db()
    assert (ladder.ranked_duels, ladder.ranked_at is not None) == (1, True)
    assert Participant.objects.get(pk=a.pk).rank == 1

    finish(ladder, b, a)
    tournament_settle(tournament=ladder)  # within the hour: not again
    ladder.refresh_from_db()
    assert ladder.ranked_duels == 1

    settings.ARENA_LADDER_STANDINGS_SECONDS = 0
    # A fit that took 100 s waits ten times as long before the next, whatever the setting.
    type(ladder).objects.filter(pk=ladder.pk).update(ranking_seconds=100)
    tournament_settle(tournament=ladder)
    ladder.refresh_from_db()
    assert ladder.ranked_duels == 1

    type(ladder).objects.filter(pk=ladder.pk).update(
        ranked_at=timezone.now() - datetime.timedelta(seconds=1001)
    )
    tournament_settle(tournament=ladder)
    ladder.refresh_from_db()
    assert ladder.ranked_duels == 2 and ladder.ranking_seconds < 100


def test_a_stopped_ladder_gets_its_final_standings_at_once(ladder, entries, settings):
    settings.ARENA_LADDER_STANDINGS_SECONDS = 3600
    a, b, _c = entries
    finish(ladder, a, b)
    tournament_settle(tournament=ladder)
    finish(ladder, b, a)
    ladder.status = TournamentStatus.COMPLETED
    ladder.save()

    tournament_settle(tournament=ladder)

    ladder.refresh_from_db()
    assert ladder.ranked_duels == 2


def test_a_duel_still_running_when_the_ladder_stopped_counts_in_its_final_standings(
    ladder, entries, settings
):
    # The soak found a ladder's record two seats short: a duel that ended after the stop
    # was rated, but no pass of the manager looked at a ladder no longer running.
    settings.ARENA_LADDER_STANDINGS_SECONDS = 3600
    a, b, _c = entries
    finish(ladder, a, b)
    running = DuelFactory(tournament=ladder, revisions=[b.revision, a.revision])
    Duel.objects.filter(pk=running.pk).update(status=DuelStatus.RUNNING)
    tournament_stop(tournament=ladder)
    ladder.refresh_from_db()
    assert ladder.ranked_duels == 1

    Duel.objects.filter(pk=running.pk).update(status=DuelStatus.SUCCEEDED, result="PLAYER_1_WIN")
    Job.objects.filter(duel=running).update(status=JobStatus.SUCCEEDED, ended_at=timezone.now())
    running.refresh_from_db()
    MatchFactory(duel=running, index=0)
    tournament_duel_finished(duel=running)
    settle_tournaments()  # the manager's pass

    ladder.refresh_from_db()
    assert (ladder.status, ladder.duels_done, ladder.ranked_duels) == (
        TournamentStatus.COMPLETED,
        2,
        2,
    )
    record = {p.revision_id: (p.wins, p.losses) for p in ladder.participants.all()}
    assert record[a.revision_id] == (1, 1) and record[b.revision_id] == (1, 1)
