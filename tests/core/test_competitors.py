"""An owner's controls over a competitor (``core.services.competitors``): visibility,
disabling and enabling, deleting; the organizers' disabling stands over the owner's."""

from __future__ import annotations

import pytest

from core.errors import ArenaError
from core.models import (
    Competitor,
    DisabledBy,
    Duel,
    DuelStatus,
    OnlineSeat,
    Participant,
    Revision,
    TournamentFormat,
)
from core.services.competitors import (
    competitor_delete,
    competitor_disable,
    competitor_enable,
    competitor_set_public,
)
from core.services.revisions import revision_create
from core.services.uploads import UploadRejected, upload_limits
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EnvironmentFactory,
    EvaluationFactory,
    RevisionFactory,
    TournamentFactory,
    example_player_source,
    queued_duel,
)
from tournament_manager.daemon import withdraw_disabled_participants
from tournament_manager.services.ladder import ladder_refresh_entries
from tournament_manager.services.tournaments import tournament_launch

pytestmark = pytest.mark.django_db


def entrants(count: int) -> list[Revision]:
    environment = EnvironmentFactory()
    return [
        RevisionFactory(competitor=CompetitorFactory(environment=environment), validated=True)
        for _ in range(count)
    ]


def playing(tournament_id: int) -> set[int]:
    participants = Participant.objects.filter(tournament_id=tournament_id, withdrawn=False)
    return set(participants.values_list("revision_id", flat=True))


def test_a_disabled_competitor_leaves_the_ladder_and_rejoins_once_enabled(sent):
    first, second, third = entrants(3)
    ladder = tournament_launch(
        tournament=TournamentFactory(
            environment=first.competitor.environment, format=TournamentFormat.LADDER
        )
    )
    assert playing(ladder.pk) == {first.pk, second.pk, third.pk}

    competitor_disable(competitor=first.competitor, by=DisabledBy.OWNER)
    assert withdraw_disabled_participants()
    assert playing(ladder.pk) == {second.pk, third.pk}
    with pytest.raises(UploadRejected, match="disabled by its owner: enable it on its page"):
        revision_create(
            competitor=first.competitor,
            uploaded_by=first.competitor.owner,
            filename="main.py",
            content=example_player_source("tic_tac_toe"),
            limits=upload_limits(),
        )

    competitor_enable(competitor=first.competitor, by=DisabledBy.OWNER)
    assert ladder_refresh_entries(tournament=ladder)
    assert playing(ladder.pk) == {first.pk, second.pk, third.pk}
    stored = Competitor.objects.get(pk=first.competitor_id)
    assert (stored.is_disabled, stored.disabled_by) == (False, "")


def test_its_owner_cannot_enable_what_the_organizers_disabled():
    competitor = CompetitorFactory()
    competitor_disable(competitor=competitor, by=DisabledBy.OWNER)
    # The organizers' disabling stands over the owner's...
    competitor_disable(competitor=competitor, by=DisabledBy.ORGANIZERS)
    # ...and the owner's does not undo theirs.
    competitor_disable(competitor=competitor, by=DisabledBy.OWNER)
    assert Competitor.objects.get(pk=competitor.pk).disabled_by == DisabledBy.ORGANIZERS

    with pytest.raises(ArenaError, match="disabled by the organizers: only they can enable it"):
        competitor_enable(competitor=competitor, by=DisabledBy.OWNER)
    assert Competitor.objects.get(pk=competitor.pk).is_disabled

    competitor_enable(competitor=competitor, by=DisabledBy.ORGANIZERS)
    assert not Competitor.objects.get(pk=competitor.pk).is_disabled


def test_a_disabled_online_model_leaves_the_matchmaking_queue():
    competitor = CompetitorFactory(kind="online")
    seat = OnlineSeat.objects.create(competitor=competitor, queued_at="2026-11-29T10:00:00Z")

    competitor_disable(competitor=competitor, by=DisabledBy.OWNER)

    seat.refresh_from_db()
    assert not seat.is_queued


def test_visibility_is_its_owners_to_change():
    competitor = CompetitorFactory(is_public=False)
    competitor_set_public(competitor=competitor, is_public=True)
    assert Competitor.objects.get(pk=competitor.pk).is_public
    competitor_set_public(competitor=competitor, is_public=False)
    assert not Competitor.objects.get(pk=competitor.pk).is_public


def test_deleting_a_competitor_nothing_depends_on_erases_it_and_frees_its_name():
    competitor = CompetitorFactory()
    revisions = [RevisionFactory(competitor=competitor, validated=True) for _ in range(2)]

    deletion = competitor_delete(competitor=competitor)

    assert deletion.erased
    assert not Competitor.objects.filter(pk=competitor.pk).exists()
    assert not Revision.objects.filter(pk__in=[r.pk for r in revisions]).exists()
    CompetitorFactory(environment=competitor.environment, name=competitor.name)


def test_deleting_a_competitor_that_played_others_keeps_it_disabled_with_its_games():
    mine, theirs = entrants(2)
    unplayed = RevisionFactory(competitor=mine.competitor, validated=True)
    duel = DuelFactory(revisions=[mine, theirs])

    deletion = competitor_delete(competitor=mine.competitor)

    assert deletion.kept is not None
    assert "played duels" in deletion.reason
    stored = Competitor.objects.get(pk=mine.competitor_id)
    assert (stored.is_disabled, stored.disabled_by) == (True, DisabledBy.OWNER)
    # The revision that played stays; the one nothing refers to is erased.
    assert Revision.objects.filter(pk=mine.pk).exists()
    assert not Revision.objects.filter(pk=unplayed.pk).exists()
    assert Duel.objects.filter(pk=duel.pk).exists()
    # The competitor's flag alone keeps it out: enabled again, it plays again.
    competitor_enable(competitor=stored, by=DisabledBy.OWNER)
    assert Revision.objects.validated().filter(pk=mine.pk).exists()


def test_a_competitor_the_organizers_disabled_is_not_deleted_by_its_owner():
    competitor = CompetitorFactory()
    RevisionFactory(competitor=competitor, validated=True)
    competitor_disable(competitor=competitor, by=DisabledBy.ORGANIZERS)

    with pytest.raises(ArenaError, match="disabled by the organizers: it cannot be deleted"):
        competitor_delete(competitor=competitor)
    assert Competitor.objects.filter(pk=competitor.pk).exists()


def test_deleting_a_one_player_games_competitor_erases_its_validation_evaluation():
    revision = RevisionFactory(validated=True, competitor__environment__name="cartpole")
    EvaluationFactory(revision=revision, competition=None, is_validation=True, seeds=[0, 1])

    deletion = competitor_delete(competitor=revision.competitor)

    assert deletion.erased
    assert not Revision.objects.filter(pk=revision.pk).exists()


def test_disabling_cancels_its_test_duels_not_started(sent):
    mine, theirs = entrants(2)
    owner = mine.competitor.owner
    duel = queued_duel([mine, theirs], num_matches=2, seed=1, requested_by=owner)

    competitor_disable(competitor=theirs.competitor, by=DisabledBy.OWNER)

    assert Duel.objects.get(pk=duel.pk).status == DuelStatus.CANCELLED
