"""What a competition's page and its API read: who may see it, its phases, the visitor's
team, its standings (the development ladder's, or the final's once published), in one
call each (``core.models.competitions``, ``core.models.teams``).

Who may see what:

- a public competition is everyone's; a private one the organizers' only (a 404);
- the development standings are the game's published leaderboard restricted to the
  competition's teams' agents: everyone's while the running phase's standings are public,
  else the organizers' (each team still sees its own rows);
- the final's standings are everyone's once published, the organizers' before (the final
  tournament's own visibility says the same).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from core.models import (
    Competition,
    CompetitionPhase,
    Competitor,
    Revision,
    Team,
    TeamInvitation,
    Tournament,
    User,
)
from core.services.competitions import final_revisions, team_uploads
from core.services.teams import team_of
from reads.access import Visitor, can_see_tournament, is_organizer
from reads.selectors import LeaderboardRow, leaderboard_entries, leaderboard_rows
from reads.tournaments import StandingRow, tournament_standings


def competitions_visible(user: Visitor) -> Q:
    return Q() if is_organizer(user) else Q(is_public=True)


def can_see_competition(user: Visitor, competition: Competition) -> bool:
    return competition.is_public or is_organizer(user)


def competitions_listed(user: Visitor) -> QuerySet[Competition]:
    return (
        Competition.objects.filter(competitions_visible(user))
        .select_related("environment", "final_tournament")
        .order_by("-created_at", "-pk")
    )


def get_competition_for_user(user: Visitor, slug: str) -> Competition:
    competition = (
        Competition.objects.select_related("environment", "final_tournament")
        .filter(slug=slug)
        .first()
    )
    if competition is None or not can_see_competition(user, competition):
        raise Http404("No such competition")
    return competition


@dataclasses.dataclass(frozen=True)
class TeamView:
    team: Team
    members: list[User]
    uploads: int
    #: Whether it has uploaded anything: its members may no longer leave it.
    has_submitted: bool
    #: What it would play the final with now (marked, or its newest validated).
    finals: list[Revision]
    #: Its open invitations (not the codes: only their hashes are kept).
    invitations: list[TeamInvitation]


@dataclasses.dataclass(frozen=True)
class CompetitionPage:
    competition: Competition
    phases: list[CompetitionPhase]
    phase: CompetitionPhase | None
    next_phase: CompetitionPhase | None
    deadline: datetime | None
    #: Whether the deadline has passed: uploads, teams and final marks are closed.
    closed: bool
    #: The visitor's team (None: not signed in, or in none yet).
    team: TeamView | None
    #: Invitations for the visitor's e-mail address, open.
    invitations: list[TeamInvitation]
    teams: int
    #: The development standings, when the visitor may see them (else None).
    standings: list[LeaderboardRow] | None
    #: The final's standings, once published or for the organizers (else None).
    final_standings: list[StandingRow] | None
    #: The competition's own ladder (of a phase that plays one), its latest, when the
    #: visitor may see it, and its standings.
    ladder: Tournament | None = None
    ladder_standings: list[StandingRow] | None = None


def team_view(team: Team) -> TeamView:
    members = [membership.user for membership in team.memberships.select_related("user")]
    invitations = [invitation for invitation in team.invitations.all() if invitation.is_open()]
    return TeamView(
        team=team,
        members=members,
        uploads=team_uploads(team),
        has_submitted=Revision.objects.filter(competitor__team=team).exists(),
        finals=final_revisions(team),
        invitations=invitations,
    )


def competition_standings(
    *, user: Visitor, competition: Competition, phase: CompetitionPhase | None
) -> list[LeaderboardRow] | None:
    """The game's published leaderboard, its rows of the competition's teams' agents; for
    a visitor who may not see them all (the phase's standings private), only their team's,
    and None when that leaves them nothing to see."""
    entries = (
        leaderboard_entries(competition.environment)
        .filter(competitor__team__competition=competition)
        .select_related("competitor__team")
    )
    if (phase is None or not phase.standings_public) and not is_organizer(user):
        team = team_of(user=user, competition=competition) if isinstance(user, User) else None
        if team is None:
            return None
        entries = entries.filter(competitor__team=team)
    return leaderboard_rows(user=user, entries=entries)


def competition_page(*, user: Visitor, competition: Competition) -> CompetitionPage:
    now = timezone.now()
    phase = competition.phase_at(now)
    deadline = competition.deadline
    team = team_of(user=user, competition=competition) if isinstance(user, User) else None
    invitations = []
    if isinstance(user, User):
        invitations = [
            invitation
            for invitation in TeamInvitation.objects.filter(
                team__competition=competition, email=user.email.lower()
            ).select_related("team")
            if invitation.is_open() and (team is None or invitation.team_id != team.pk)
        ]
    ladder = competition.ladders.order_by("-started_at", "-pk").first()
    if ladder is not None and not can_see_tournament(user, ladder):
        ladder = None
    final = competition.final_tournament
    final_standings = None
    if final is not None and (competition.is_published or is_organizer(user)):
        final_standings = tournament_standings(user=user, tournament=final)
    return CompetitionPage(
        competition=competition,
        phases=list(competition.phases.all()),
        phase=phase,
        next_phase=competition.next_phase(now),
        deadline=deadline,
        closed=deadline is not None and now >= deadline,
        team=team_view(team) if team is not None else None,
        invitations=invitations,
        teams=competition.teams.count(),
        standings=competition_standings(user=user, competition=competition, phase=phase),
        final_standings=final_standings,
        ladder=ladder,
        ladder_standings=(
            tournament_standings(user=user, tournament=ladder) if ladder is not None else None
        ),
    )


@dataclasses.dataclass(frozen=True)
class CompetitorFinals:
    """A team's agent's final marks, for its page."""

    competition: Competition
    #: Before the deadline: its revisions may be marked final or unmarked.
    is_open: bool
    #: The revisions the team would play the final with now (marked, or its newest).
    playing: set[int]


def competitor_finals(*, user: Visitor, competitor: Competitor) -> CompetitorFinals | None:
    """Its final marks for a member of its team (None for anyone else, or an agent
    entered in no competition)."""
    team = competitor.team
    if team is None or not isinstance(user, User) or not competitor.is_managed_by(user):
        return None
    competition = team.competition
    deadline = competition.deadline
    return CompetitorFinals(
        competition=competition,
        is_open=deadline is None or timezone.now() < deadline,
        playing={revision.pk for revision in final_revisions(team)},
    )
