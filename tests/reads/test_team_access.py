"""A team's agents are every member's: listed among their own, on the site and in the API,
open to their private pages and logs, and theirs to test; nobody else's."""

from __future__ import annotations

import pytest
from django.utils import timezone

from api.selectors import competitors_for, submissions_of
from core.errors import ArenaError
from core.models import Competition, CompetitionPhase, Competitor, Team, TeamMember, User
from core.services.requested_duels import requested_duel_create
from reads.access import can_see_competitor, get_own_competitor, is_owner
from reads.selectors import environment_page
from tests.factories import CompetitorFactory, RevisionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_agent(alice: User, bob: User) -> Competitor:
    """A private agent alice made for her team, which bob is in too."""
    environment = alice.competitors.get().environment
    cup = Competition.objects.create(environment=environment, slug="cup", title="Cup")
    CompetitionPhase.objects.create(competition=cup, name="open", starts_at=timezone.now())
    team = Team.objects.create(competition=cup, name="Pair")
    for member in (alice, bob):
        TeamMember.objects.create(team=team, competition=cup, user=member)
    return RevisionFactory(
        competitor__owner=alice, competitor__team=team, validated=True
    ).competitor


def test_a_teammate_manages_the_teams_agent_and_nobody_else_does(
    team_agent: Competitor, bob: User, carol: User, sent
) -> None:
    environment = team_agent.environment
    assert is_owner(bob, team_agent) and can_see_competitor(bob, team_agent)
    assert get_own_competitor(bob, environment.name, team_agent.name) == team_agent
    assert team_agent in environment_page(user=bob, environment=environment).own_competitors
    assert team_agent in competitors_for(user=bob, owned_only=True)
    assert set(submissions_of(bob)) >= set(team_agent.revisions.all())
    opponent = CompetitorFactory(environment=environment, is_public=True)
    RevisionFactory(competitor=opponent, validated=True)
    assert requested_duel_create(user=bob, competitor=team_agent, opponent=opponent)

    assert not is_owner(carol, team_agent) and not can_see_competitor(carol, team_agent)
    assert team_agent not in environment_page(user=carol, environment=environment).own_competitors
    assert team_agent not in competitors_for(user=carol, owned_only=True)
    with pytest.raises(ArenaError, match="is not yours"):
        requested_duel_create(user=carol, competitor=team_agent, opponent=opponent)


def test_a_member_of_another_team_of_the_same_competition_sees_nothing_private(
    team_agent: Competitor,
) -> None:
    stranger = UserFactory()
    cup = team_agent.team.competition
    other = Team.objects.create(competition=cup, name="Other")
    TeamMember.objects.create(team=other, competition=cup, user=stranger)
    assert not is_owner(stranger, team_agent)
    assert team_agent not in competitors_for(user=stranger, owned_only=True)
