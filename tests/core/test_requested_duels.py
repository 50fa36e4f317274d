"""Test duels (``core.services.requested_duels``): an owner's agent against an agent of
their choice, queued at once, unrated, limited per user and hour."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import ArenaError
from core.models import CompetitorKind, Duel, DuelStatus, JobKind, Rating, RatingChange
from core.services.requested_duels import requested_duel_create
from tests.factories import CompetitorFactory, EnvironmentFactory, MatchFactory, RevisionFactory
from tournament_manager.receivers import rate_and_settle

pytestmark = pytest.mark.django_db


def agent(environment, **fields):
    competitor = CompetitorFactory(environment=environment, **fields)
    RevisionFactory(competitor=competitor, validated=True)
    newest = RevisionFactory(competitor=competitor, validated=True)
    return competitor, newest


def test_it_queues_an_unrated_duel_of_the_newest_revisions_at_once(
    sent, django_capture_on_commit_callbacks
):
    environment = EnvironmentFactory()
    mine, my_newest = agent(environment)
    theirs, their_newest = agent(environment)

    with django_capture_on_commit_callbacks(execute=True):
        duel = requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)

    assert duel.revisions() == [my_newest, their_newest]
    assert duel.tournament is None and not duel.is_validation
    assert duel.requested_by == mine.owner
    assert (duel.status, duel.num_matches) == (DuelStatus.QUEUED, environment.matches_per_duel)
    assert sent == [("duel_runner.tasks.play_duel", duel.pk)]
    assert duel.job.kind == JobKind.DUEL


def test_it_refuses_what_cannot_be_a_test_duel():
    environment = EnvironmentFactory()
    mine, _ = agent(environment)
    theirs, _ = agent(environment)
    elsewhere, _ = agent(EnvironmentFactory(name="connect_four"))
    online = CompetitorFactory(environment=environment, kind=CompetitorKind.ONLINE)
    RevisionFactory(competitor=online, validated=True)
    unvalidated = CompetitorFactory(environment=environment)
    RevisionFactory(competitor=unvalidated)
    disabled, _ = agent(environment, is_disabled=True, disabled_by="organizers")
    others_llm, _ = agent(environment, kind=CompetitorKind.LLM)

    for competitor, opponent, message in (
        (theirs, mine, "is not yours: test duels play your own agents"),
        (mine, elsewhere, "plays another game than"),
        (mine, mine, "pick another agent than itself"),
        (mine, online, "plays over the network"),
        (mine, unvalidated, "has no validated revision to play yet"),
        (mine, disabled, "is disabled by the organizers"),
        (mine, others_llm, "another user's LLM player: its duels spend its owner's tokens"),
    ):
        with pytest.raises(ArenaError, match=message):
            requested_duel_create(user=mine.owner, competitor=competitor, opponent=opponent)
    assert not Duel.objects.exists()


def test_a_user_starts_at_most_the_hourly_limit_and_is_told_when_the_next_may(settings, sent):
    settings.ARENA_TEST_DUELS_PER_HOUR = 2
    environment = EnvironmentFactory()
    mine, _ = agent(environment)
    theirs, _ = agent(environment)
    first = requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)
    requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)

    with pytest.raises(ArenaError, match="you started 2 test duels in the past hour") as refused:
        requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)
    next_at = timezone.localtime(first.created_at + timedelta(hours=1))
    assert f"can start at {next_at:%H:%M}" in refused.value.message
    assert Duel.objects.count() == 2

    # An hour on, the first no longer counts.
    Duel.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=2))
    requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)
    assert Duel.objects.count() == 3


def test_a_test_duel_is_not_rated_when_it_ends(sent):
    environment = EnvironmentFactory()
    mine, _ = agent(environment)
    theirs, _ = agent(environment)
    duel = requested_duel_create(user=mine.owner, competitor=mine, opponent=theirs)
    MatchFactory(duel=duel)

    rate_and_settle(duel=duel)

    assert not Rating.objects.exists() and not RatingChange.objects.exists()
