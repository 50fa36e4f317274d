"""Competitions on the site: the list, a competition's page (``reads.competitions``) and
what a signed-in visitor does there: form a team, invite to it (by address or by link),
leave it, accept an invitation, upload an agent (``core.services.teams``,
``core.services.revisions``).

An invitation link carries its code in the URL's fragment (``/c/<slug>/join/#<code>``):
a fragment never reaches the server, so no access log holds it. The join page's script
copies it into the form, which POSTs it.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import ArenaError, sentence
from core.models import Competition, TeamInvitation, User
from core.services.revisions import revision_upload
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


@login_required
@require_POST
def team_new(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    competition = get_competition_for_user(request.user, slug)
    form = TeamForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the team a name (at most 80 characters).")
        return redirect(competition)
    try:
        team = team_create(
            competition=competition, user=request.user, name=form.cleaned_data["name"]
        )
    except ArenaError as error:
        return _refused(request, competition, error)
    messages.success(request, f"Team {team.name} is formed: invite your teammates.")
    return redirect(competition)


@login_required
@require_POST
def team_invite(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """An invitation by address (its code goes nowhere: the invitee accepts it on this
    page, signed in with that address) or by link, shown once, here."""
    competition = get_competition_for_user(request.user, slug)
    form = InvitationForm(request.POST)
    team = team_of(user=request.user, competition=competition)
    if team is None:
        return _refused(request, competition, ArenaError("form or join a team first"))
    if not form.is_valid():
        messages.error(request, "Enter an e-mail address, or leave it empty for a link.")
        return redirect(competition)
    email = form.cleaned_data["email"]
    try:
        _, code = invitation_create(
            team=team,
            by=request.user,
            email=email,
            page_url=request.build_absolute_uri(competition.get_absolute_url()),
        )
    except ArenaError as error:
        return _refused(request, competition, error)
    if email:
        messages.success(
            request,
            f"{email} is invited: signed in with that address, they accept it on this page "
            f"(within {TeamInvitation.default_expiry().days} days).",
        )
        return redirect(competition)
    link = request.build_absolute_uri(reverse("competition_join", args=[competition.slug]))
    # Rendered, not redirected: the code is shown once and kept nowhere but in its hash.
    return render_competition(request, competition, invitation_link=f"{link}#{code}")


@login_required
@require_POST
def team_name_change(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    competition = get_competition_for_user(request.user, slug)
    team = team_of(user=request.user, competition=competition)
    form = TeamForm(request.POST)
    if team is None:
        return _refused(request, competition, ArenaError("you are in no team here"))
    if not form.is_valid():
        messages.error(request, "Give the team a name (at most 80 characters).")
        return redirect(competition)
    try:
        team_rename(team=team, user=request.user, name=form.cleaned_data["name"])
    except ArenaError as error:
        return _refused(request, competition, error)
    messages.success(request, f"Your team is named {team.name} now.")
    return redirect(competition)


@login_required
@require_POST
def invitation_withdraw(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Revoke one of the team's open invitations: its code or address no longer joins."""
    competition = get_competition_for_user(request.user, slug)
    team = team_of(user=request.user, competition=competition)
    invitation = TeamInvitation.objects.filter(pk=pk, team=team).select_related("team").first()
    if team is None or invitation is None:
        return _refused(request, competition, ArenaError("no such invitation of your team"))
    try:
        invitation_revoke(invitation=invitation, by=request.user)
    except ArenaError as error:
        return _refused(request, competition, error)
    messages.success(request, "The invitation is revoked: it no longer lets anyone join.")
    return redirect(competition)


@login_required
@require_POST
def team_quit(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    competition = get_competition_for_user(request.user, slug)
    team = team_of(user=request.user, competition=competition)
    if team is None:
        return _refused(request, competition, ArenaError("you are in no team here"))
    try:
        team_leave(team=team, user=request.user)
    except ArenaError as error:
        return _refused(request, competition, error)
    messages.success(request, f"You left team {team.name}.")
    return redirect(competition)


@login_required
@require_POST
def invitation_take(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Accept an invitation meant for the visitor's address (listed on the page)."""
    competition = get_competition_for_user(request.user, slug)
    invitation = (
        TeamInvitation.objects.filter(
            pk=pk, team__competition=competition, email=request.user.email.lower()
        )
        .select_related("team__competition")
        .first()
    )
    try:
        if invitation is None or not invitation.is_open():
            raise ArenaError("this invitation is not valid: it was used, revoked or has expired")
        team = invitation_accept(invitation=invitation, user=request.user)
    except ArenaError as error:
        return _refused(request, competition, error)
    messages.success(request, f"You joined team {team.name}.")
    return redirect(competition)


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
            invitation = invitation_find(form.cleaned_data["code"])
            if invitation.team.competition_id != competition.pk:
                raise ArenaError(f"this invitation is not to a team of {competition.title}")
            team = invitation_accept(invitation=invitation, user=request.user)
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
