"""Competitions on the site: the list, a competition's page (``reads.competitions``) and
what a signed-in visitor does there: form a team, invite to it (by address or by link),
leave it, accept an invitation, upload an agent (``core.services.teams``,
``core.services.revisions``).

An invitation link carries its code in the URL's fragment (``/c/<slug>/join/#<code>``):
a fragment never reaches the server, so no access log holds it. The join page's script
copies it into the form, which POSTs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import ArenaError, sentence
from core.models import Competition, Team, TeamInvitation, User
from core.services import teams
from core.services.revisions import revision_upload
from reads.access import AuthenticatedHttpRequest
from reads.competitions import competition_page, competitions_listed, get_competition_for_user
from web.forms import CompetitionUploadForm, InvitationForm, JoinForm, TeamForm


@require_GET
def competition_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "web/competitions.html",
        {"competitions": competitions_listed(request.user)},
    )


@require_GET
def competition(request: HttpRequest, slug: str) -> HttpResponse:
    return render_competition(request, get_competition_for_user(request.user, slug))


def render_competition(
    request: HttpRequest,
    competition: Competition,
    *,
    upload_form: CompetitionUploadForm | None = None,
    invitation_link: str = "",
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "web/competition.html",
        {
            "page": competition_page(user=request.user, competition=competition),
            "competition": competition,
            "team_form": TeamForm(),
            "invitation_form": InvitationForm(),
            "upload_form": upload_form or CompetitionUploadForm(),
            "invitation_link": invitation_link,
        },
        status=status,
    )


def _refused(request: HttpRequest, competition: Competition, error: ArenaError) -> HttpResponse:
    messages.error(request, sentence(error.message))
    return redirect(competition)


#: A view given the request, the competition (and the visitor's team), then the URL's ids.
MemberAction = Callable[..., HttpResponse | None]
TeamAction = Callable[..., HttpResponse | None]


def _member_action(view: MemberAction) -> Callable[..., HttpResponse]:
    """A signed-in visitor's POST on a competition's page: the view gets the competition
    (a 404 when the visitor may not see it); a refusal (ArenaError) is said on the page,
    and a view that returns None has said its success: back to the page."""

    @functools.wraps(view)
    @login_required
    @require_POST
    def action(request: AuthenticatedHttpRequest, slug: str, **ids: int) -> HttpResponse:
        competition = get_competition_for_user(request.user, slug)
        try:
            response = view(request, competition, **ids)
        except ArenaError as error:
            return _refused(request, competition, error)
        return response or redirect(competition)

    return action


def _team_action(view: TeamAction) -> Callable[..., HttpResponse]:
    """A member's action on their team, as ``_member_action``; one in no team is refused."""

    @functools.wraps(view)
    def with_team(
        request: AuthenticatedHttpRequest, competition: Competition, **ids: int
    ) -> HttpResponse | None:
        team = teams.team_of(user=request.user, competition=competition)
        if team is None:
            raise ArenaError("you are in no team here")
        return view(request, competition, team, **ids)

    return _member_action(with_team)


def _team_name(request: AuthenticatedHttpRequest) -> str:
    form = TeamForm(request.POST)
    if not form.is_valid():
        raise ArenaError("give the team a name (at most 80 characters)")
    return str(form.cleaned_data["name"])


@_member_action
def team_new(request: AuthenticatedHttpRequest, competition: Competition) -> None:
    team = teams.team_create(competition=competition, user=request.user, name=_team_name(request))
    messages.success(request, f"Team {team.name} is formed: invite your teammates.")


@_team_action
def team_invite(
    request: AuthenticatedHttpRequest, competition: Competition, team: Team
) -> HttpResponse | None:
    """An invitation by address (its code goes nowhere: the invitee accepts it on this
    page, signed in with that address) or by link, shown once, here."""
    form = InvitationForm(request.POST)
    if not form.is_valid():
        raise ArenaError("enter an e-mail address, or leave it empty for a link")
    email = form.cleaned_data["email"]
    _, code = teams.invitation_create(
        team=team,
        by=request.user,
        email=email,
        page_url=request.build_absolute_uri(competition.get_absolute_url()),
    )
    if email:
        messages.success(
            request,
            f"{email} is invited: signed in with that address, they accept it on this page "
            f"(within {TeamInvitation.default_expiry().days} days).",
        )
        return None
    link = request.build_absolute_uri(reverse("competition_join", args=[competition.slug]))
    # Rendered, not redirected: the code is shown once and kept nowhere but in its hash.
    return render_competition(request, competition, invitation_link=f"{link}#{code}")


@_team_action
def team_name_change(
    request: AuthenticatedHttpRequest, competition: Competition, team: Team
) -> None:
    teams.team_rename(team=team, user=request.user, name=_team_name(request))
    messages.success(request, f"Your team is named {team.name} now.")


@_member_action
def invitation_withdraw(
    request: AuthenticatedHttpRequest, competition: Competition, pk: int
) -> None:
    """Revoke one of the team's open invitations: its code or address no longer joins."""
    team = teams.team_of(user=request.user, competition=competition)
    invitation = TeamInvitation.objects.filter(pk=pk, team=team).select_related("team").first()
    if invitation is None:
        raise ArenaError("no such invitation of your team")
    teams.invitation_revoke(invitation=invitation, by=request.user)
    messages.success(request, "The invitation is revoked: it no longer lets anyone join.")


@_team_action
def team_quit(request: AuthenticatedHttpRequest, competition: Competition, team: Team) -> None:
    teams.team_leave(team=team, user=request.user)
    messages.success(request, f"You left team {team.name}.")


@_member_action
def invitation_take(request: AuthenticatedHttpRequest, competition: Competition, pk: int) -> None:
    """Accept an invitation meant for the visitor's address (listed on the page)."""
    invitation = (
        TeamInvitation.objects.filter(
            pk=pk, team__competition=competition, email=request.user.email.lower()
        )
        .select_related("team__competition")
        .first()
    )
    if invitation is None or not invitation.is_open():
        raise ArenaError("this invitation is not valid: it was used, revoked or has expired")
    team = teams.invitation_accept(invitation=invitation, user=request.user)
    messages.success(request, f"You joined team {team.name}.")


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, slug: str) -> HttpResponse:
    """The invitation link's page: its script puts the fragment's code into the form. A
    visitor not signed in sees it too, with a link to log in: the script keeps the code
    in the tab's storage meanwhile, as the login's redirects drop the fragment."""
    competition = get_competition_for_user(request.user, slug)
    if request.method == "POST" and not isinstance(request.user, User):
        return redirect_to_login(request.path)
    form = JoinForm(request.POST or None)
    if request.method == "POST" and isinstance(request.user, User) and form.is_valid():
        try:
            invitation = teams.invitation_find(form.cleaned_data["code"])
            if invitation.team.competition_id != competition.pk:
                raise ArenaError(f"this invitation is not to a team of {competition.title}")
            team = teams.invitation_accept(invitation=invitation, user=request.user)
        except ArenaError as error:
            form.add_error(None, sentence(error.message))
        else:
            messages.success(request, f"You joined team {team.name}.")
            return redirect(competition)
    return render(
        request,
        "web/competition_join.html",
        {"competition": competition, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def upload(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """An agent's upload to the competition: the uploader's team (one of one if they had
    none) enters it; a refusal (closed, over a limit) says when the next is allowed."""
    competition = get_competition_for_user(request.user, slug)
    form = CompetitionUploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            revision = revision_upload(
                owner=request.user,
                environment=competition.environment,
                competitor_name=form.cleaned_data["name"],
                is_public=False,
                filename=form.cleaned_data["file"].name,
                content=form.content(),
                competition=competition,
            )
        except ArenaError as error:
            form.add_error(None, sentence(error.message))
        else:
            messages.success(request, f"Uploaded {revision}: it is built and validated now.")
            return redirect(revision)
    return render_competition(request, competition, upload_form=form, status=400)
