"""Competitions (an organizer's event with phases, teams, limits, a deadline and a final),
your team in each, and the final marks of your revisions. What a caller may see is
``reads.competitions``' rule, as on the site: a private competition is a 404 to everyone
but the organizers; a phase's private standings show only the caller's own team.

Uploads to a competition are ``POST /submissions`` with its ``competition`` field (one
upload service, ``core.services.revisions.revision_upload``). An invitation's code is
answered once, when it is made, and is only ever sent back in a request's body: never in
a URL, where proxies and servers log it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Schema
from ninja.responses import Status

from api import auth
from api.environments import LeaderboardEntryOut
from api.errors import documented
from api.pagination import paginated
from api.params import PRINTABLE, Id, Number, Slug
from api.tournaments import StandingOut
from core.errors import ArenaError
from core.models import (
    Competition,
    PhasePlays,
    Revision,
    Team,
    TeamInvitation,
    TournamentFormat,
    TournamentStatus,
)
from core.services.competitions import final_mark
from core.services.teams import (
    invitation_accept,
    invitation_create,
    invitation_find,
    invitation_revoke,
    team_create,
    team_leave,
    team_of,
    team_rename,
)
from reads.access import AuthenticatedHttpRequest, can_see_tournament, get_own_competitor
from reads.competitions import (
    CompetitionPage,
    TeamView,
    competition_page,
    competitions_listed,
    get_competition_for_user,
    team_view,
)
from reads.selectors import LeaderboardRow

router = auth.ArenaRouter(tags=["competitions"], auth=auth.read)

#: The words of a refused code, whatever the reason (as ``invitation_find``'s): whether a
#: code exists, and for which competition, never leaks.
INVALID_INVITATION = "this invitation is not valid: it was used, revoked or has expired"


# --- schemas ------------------------------------------------------------------------


class PhaseOut(Schema):
    name: str
    #: From then until the next phase's start (ISO 8601, with its time zone).
    starts_at: datetime
    uploads_open: bool
    #: Uploads per team per day (UTC), at most; None: no limit.
    daily_limit: int | None
    #: Uploads per team in this phase, at most; None: no limit.
    total_limit: int | None
    #: "ladder": the game's ladder rates the teams' agents; "final": the final tournament.
    plays: PhasePlays
    standings_public: bool


class FinalOut(Schema):
    """The final tournament, launched by itself at the deadline."""

    format: TournamentFormat
    #: "scheduled" (before the deadline, or not yet launched), "not_launched" (see
    #: ``error``), then its tournament's status ("running", "completed"...), and
    #: "published" once its standings are.
    status: str
    #: Its tournament (``GET /tournaments/{id}``) once launched, when you may see it (a
    #: held-out final's is the organizers' until published).
    tournament: int | None
    #: Why it could not be launched at the deadline.
    error: str
    published_at: datetime | None


class CompetitionOut(Schema):
    slug: str
    title: str
    description: str
    environment: str = Field(alias="environment.name")
    is_public: bool
    #: Members of a team, at most.
    team_size_limit: int
    #: Revisions a team may mark final (one per agent).
    final_submissions: int
    #: When uploads close and the final starts; None without a final phase.
    deadline: datetime | None
    #: The running phase's name; None before the first.
    phase: str | None
    final: FinalOut

    @staticmethod
    def resolve_phase(competition: Competition) -> str | None:
        phase = competition.phase_at()
        return phase.name if phase else None

    @staticmethod
    def resolve_final(competition: Competition, context: dict[str, Any]) -> dict[str, Any]:
        request: HttpRequest = context["request"]
        tournament = competition.final_tournament
        if competition.is_published:
            status = "published"
        elif tournament is not None:
            status = TournamentStatus(tournament.status).value
        elif competition.final_error:
            status = "not_launched"
        else:
            status = "scheduled"
        return {
            "format": competition.final_format,
            "status": status,
            "tournament": (
                tournament.pk
                if tournament is not None and can_see_tournament(request.user, tournament)
                else None
            ),
            "error": competition.final_error,
            "published_at": competition.final_published_at,
        }


class FinalRevisionOut(Schema):
    competitor: str = Field(alias="competitor.name")
    version: int
    #: When it was marked final; None: it plays as the team's newest validated revision.
    marked_final_at: datetime | None


class InvitationOut(Schema):
    id: int
    #: Only that person may accept it; empty: anyone who has its code (a link).
    email: str
    created_at: datetime
    expires_at: datetime


class TeamOut(Schema):
    id: int = Field(alias="team.pk")
    name: str = Field(alias="team.name")
    #: Its members' display names, first joined first.
    members: list[str]
    #: Every upload of its agents, by any member.
    uploads: int
    #: Once it has, its members may neither leave it nor join another team.
    has_submitted: bool
    disqualified: bool = Field(alias="team.is_disqualified")
    #: What it would play the final with now: its marked revisions, else its newest
    #: validated one.
    finals: list[FinalRevisionOut]
    #: Its open invitations (their codes are not kept: only shown when made).
    invitations: list[InvitationOut]

    @staticmethod
    def resolve_members(view: TeamView) -> list[str]:
        return [member.display_name for member in view.members]


class InvitedOut(Schema):
    """An open invitation for the caller's e-mail address, to accept with the code sent
    to them."""

    id: int
    team: str = Field(alias="team.name")
    expires_at: datetime


class CompetitionStandingOut(LeaderboardEntryOut):
    team: str


def _page(competition: Competition, context: dict[str, Any]) -> CompetitionPage:
    """The competition's page as the caller sees it: read once per answer."""
    if "competition_page" not in context:
        request: HttpRequest = context["request"]
        context["competition_page"] = competition_page(user=request.user, competition=competition)
    page: CompetitionPage = context["competition_page"]
    return page


def _from_page(name: str) -> staticmethod[[Competition, dict[str, Any]], Any]:
    """A resolver that answers the field as the caller's page (``_page``) has it."""

    def resolve(competition: Competition, context: dict[str, Any]) -> Any:
        return getattr(_page(competition, context), name)

    return staticmethod(resolve)


class CompetitionDetailOut(CompetitionOut):
    """With its phases, the caller's team and the standings they may see."""

    phases: list[PhaseOut]
    resolve_phases = _from_page("phases")
    next_phase: PhaseOut | None
    resolve_next_phase = _from_page("next_phase")
    #: The deadline has passed: uploads, teams and final marks are closed.
    closed: bool
    resolve_closed = _from_page("closed")
    teams: int
    resolve_teams = _from_page("teams")
    #: The caller's team; None anonymously or in none yet.
    team: TeamOut | None
    resolve_team = _from_page("team")
    invitations: list[InvitedOut]
    resolve_invitations = _from_page("invitations")
    #: The game's leaderboard rows of the teams' agents; None when the running phase's
    #: standings are private (then a team sees its own rows only).
    standings: list[CompetitionStandingOut] | None
    #: The final's, once published; None before.
    final_standings: list[StandingOut] | None
    resolve_final_standings = _from_page("final_standings")
    #: The competition's own ladder (of a phase that plays one; its latest), when the
    #: caller may see it: its standings and duels are ``/tournaments/{id}``'s.
    ladder_id: int | None

    @staticmethod
    def resolve_standings(
        competition: Competition, context: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        rows = _page(competition, context).standings
        return None if rows is None else [_standing(row) for row in rows]

    @staticmethod
    def resolve_ladder_id(competition: Competition, context: dict[str, Any]) -> int | None:
        ladder = _page(competition, context).ladder
        return None if ladder is None else ladder.pk


def _standing(row: LeaderboardRow) -> dict[str, Any]:
    entry, competitor = row.entry, row.competitor
    return {
        "rank": entry.rank,
        "provisional": entry.is_provisional,
        "competitor": competitor.name,
        "owner": competitor.owner.display_name,
        "team": competitor.team.name if competitor.team else "",
        "revision": entry.revision.version,
        "score": entry.score,
        "score_sd": entry.score_sd,
        "rank_best": entry.rank_best,
        "rank_worst": entry.rank_worst,
        "matches": entry.matches,
        "wins": entry.wins,
        "draws": entry.draws,
        "losses": entry.losses,
    }


class TeamIn(Schema):
    name: str = Field(min_length=1, max_length=80, pattern=PRINTABLE)


#: An address: something@somewhere, no space nor control character.
EMAIL = r"^[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+$"


class InvitationIn(Schema):
    #: Only that person may accept it (the code is for you to send them); none: a link,
    #: for whoever has the code.
    email: str | None = Field(None, max_length=254, pattern=EMAIL)


class InvitationCreatedOut(InvitationOut):
    #: The code, shown this once (only its hash is kept): whoever accepts sends it in the
    #: body of ``POST /competitions/{slug}/join``.
    code: str


class JoinIn(Schema):
    #: An invitation's code.
    code: str = Field(min_length=1, max_length=200, pattern=PRINTABLE)


class LeftOut(Schema):
    message: str


class FinalMarkOut(Schema):
    competitor: str = Field(alias="competitor.name")
    version: int
    #: Marked final: it plays the final (None: not marked).
    marked_final_at: datetime | None


# --- operations ---------------------------------------------------------------------

COMPETITION = "/competitions/{slug}"
FINAL_MARK = "/competitors/{environment}/{name}/revisions/{version}/final"


def _own_team(request: AuthenticatedHttpRequest, competition: Competition) -> Team:
    team = team_of(user=request.user, competition=competition)
    if team is None:
        raise Http404(f"You are in no team in {competition.title}.")
    return team


@router.get("/competitions", response=documented({200: list[CompetitionOut]}))
@paginated
def competitions_list(request: HttpRequest) -> QuerySet[Competition]:
    """Competitions you may see, newest first"""
    return competitions_listed(request.user)


@router.get(COMPETITION, response=documented({200: CompetitionDetailOut}, 404))
def competition_detail(request: HttpRequest, slug: Slug) -> Competition:
    """One competition: its phases, your team, its standings

    Times are ISO 8601 with their time zone (UTC). `standings` are the game's leaderboard
    rows of the teams' agents, while the running phase's standings are public (otherwise
    your team's rows only, or None); `final_standings` once the final is published;
    `ladder_id`: the competition's own ladder, of a phase that plays one.
    """
    return get_competition_for_user(request.user, slug)


@router.post(f"{COMPETITION}/team", auth=auth.submit, response=documented({201: TeamOut}, 400, 404))
def team_start(request: AuthenticatedHttpRequest, slug: Slug, payload: TeamIn) -> Status[TeamView]:
    """Form a team, with you as its first member

    Refused (400) when you are in a team of the competition already, the name is taken, or
    the deadline has passed. Uploading alone makes you a team of one, with no step of yours.
    """
    competition = get_competition_for_user(request.user, slug)
    team = team_create(competition=competition, user=request.user, name=payload.name)
    return Status(201, team_view(team))


@router.patch(
    f"{COMPETITION}/team", auth=auth.submit, response=documented({200: TeamOut}, 400, 404)
)
def team_change(request: AuthenticatedHttpRequest, slug: Slug, payload: TeamIn) -> TeamView:
    """Rename your team"""
    team = _own_team(request, get_competition_for_user(request.user, slug))
    team_rename(team=team, user=request.user, name=payload.name)
    return team_view(team)


@router.delete(
    f"{COMPETITION}/team/membership",
    auth=auth.submit,
    response=documented({200: LeftOut}, 400, 404),
)
def team_quit(request: AuthenticatedHttpRequest, slug: Slug) -> dict[str, str]:
    """Leave your team

    Refused (400) once the team has submitted: its members stay in it until the
    competition ends. A team left empty is removed.
    """
    team = _own_team(request, get_competition_for_user(request.user, slug))
    team_leave(team=team, user=request.user)
    return {"message": f"You left team {team.name}."}


@router.post(
    f"{COMPETITION}/team/invitations",
    auth=auth.submit,
    response=documented({201: InvitationCreatedOut}, 400, 404),
)
def invitation_make(
    request: AuthenticatedHttpRequest, slug: Slug, payload: InvitationIn
) -> Status[dict[str, Any]]:
    """Invite someone to your team

    With `email`, only that person may accept; without, whoever has the code (a link). The
    answer holds the code, this once: send it to them; they accept with
    `POST /competitions/{slug}/join`, the code in the body. It expires after 7 days.
    Refused (400) when the team is full or the deadline has passed.
    """
    team = _own_team(request, get_competition_for_user(request.user, slug))
    invitation, code = invitation_create(
        team=team,
        by=request.user,
        email=payload.email or "",
        page_url=request.build_absolute_uri(team.competition.get_absolute_url()),
    )
    return Status(
        201,
        {
            "id": invitation.pk,
            "email": invitation.email,
            "created_at": invitation.created_at,
            "expires_at": invitation.expires_at,
            "code": code,
        },
    )


@router.delete(
    f"{COMPETITION}/team/invitations/{{invitation_id}}",
    auth=auth.submit,
    response=documented({200: InvitationOut}, 400, 404),
)
def invitation_cancel(
    request: AuthenticatedHttpRequest, slug: Slug, invitation_id: Id
) -> TeamInvitation:
    """Revoke an open invitation of your team"""
    team = _own_team(request, get_competition_for_user(request.user, slug))
    invitation = get_object_or_404(
        TeamInvitation.objects.select_related("team"), pk=invitation_id, team=team
    )
    invitation_revoke(invitation=invitation, by=request.user)
    return invitation


@router.post(f"{COMPETITION}/join", auth=auth.submit, response=documented({200: TeamOut}, 400, 404))
def team_join(request: AuthenticatedHttpRequest, slug: Slug, payload: JoinIn) -> TeamView:
    """Join a team with its invitation's code

    The code goes in the JSON body (`{"code": "..."}`), never in the URL. You leave your
    current team of the competition, unless it has submitted (then you cannot join
    another). Refused (400) for a code that is used, revoked, expired or unknown, an
    invitation for another address, a full team, or after the deadline.
    """
    competition = get_competition_for_user(request.user, slug)
    invitation = invitation_find(payload.code)
    if invitation.team.competition_id != competition.pk:
        raise ArenaError(INVALID_INVITATION)
    return team_view(invitation_accept(invitation=invitation, user=request.user))


def _managed_revision(
    request: AuthenticatedHttpRequest, environment: str, name: str, version: int
) -> Revision:
    competitor = get_own_competitor(request.user, environment, name)
    return get_object_or_404(
        Revision.objects.select_related("competitor__team__competition"),
        competitor=competitor,
        version=version,
    )


@router.put(FINAL_MARK, auth=auth.submit, response=documented({200: FinalMarkOut}, 400, 404))
def final_mark_set(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug, version: Number
) -> Revision:
    """Mark a revision of your team's agent final

    Before the deadline, a validated revision of a competitor entered in a competition,
    which you manage (its owner or a member of its team). One per agent: marking another
    revision of the agent moves its mark; a team marks the competition's
    `final_submissions` at most. A team that marks none plays the final with its newest
    validated revision.
    """
    revision = _managed_revision(request, environment, name, version)
    final_mark(revision=revision, user=request.user, final=True)
    return revision


@router.delete(FINAL_MARK, auth=auth.submit, response=documented({200: FinalMarkOut}, 400, 404))
def final_mark_remove(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug, version: Number
) -> Revision:
    """Unmark a final revision of your team's agent, before the deadline"""
    revision = _managed_revision(request, environment, name, version)
    final_mark(revision=revision, user=request.user, final=False)
    return revision
