"""What an owner does with a competitor from its page: share its logs, make it public or
private, disable or enable it, delete it (``core.services.competitors``, as the API's
``PATCH`` and ``DELETE /competitors/...`` do), start a test duel
(``core.services.requested_duels``), have it validated again when ladders paused it or an
LLM player's server did not answer its validation (``reads.competitors.revalidation_candidate``)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.errors import ArenaError, sentence
from core.models import Competitor
from core.services.competitions import final_mark
from core.services.competitors import (
    competitor_delete,
    competitor_deletion_message,
    competitor_update,
)
from core.services.requested_duels import requested_duel_create
from core.services.revisions import revision_revalidate
from reads.access import AuthenticatedHttpRequest, get_competitor_for_user, get_own_competitor
from reads.competitors import NOTHING_TO_REVALIDATE, revalidation_candidate
from web.forms import MoveLogsForm
from web.views.submissions import render_competitor

OwnerAction = Callable[[AuthenticatedHttpRequest, Competitor], HttpResponse]


def _owner_action(*methods: str) -> Callable[[OwnerAction], Callable[..., HttpResponse]]:
    """An action of a competitor's owner, by one of ``methods``, on its page: the view gets
    the URL's competitor (a 404 for anyone else's), and what the action refuses (an
    ``ArenaError``) is said on that page."""

    def decorator(view: OwnerAction) -> Callable[..., HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @functools.wraps(view)
        def action(
            request: AuthenticatedHttpRequest, environment_name: str, name: str
        ) -> HttpResponse:
            competitor = get_own_competitor(request.user, environment_name, name)
            try:
                return view(request, competitor)
            except ArenaError as error:
                messages.error(request, sentence(error.message))
                return redirect(competitor)

        return action

    return decorator


@_owner_action("POST")
def move_logs(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """Its owner shares its agent's logs with everyone, or stops sharing them."""
    form = MoveLogsForm(request.POST)
    if not form.is_valid():
        return render_competitor(request, competitor, logs_form=form)
    share = form.cleaned_data["share_logs"]
    competitor_update(competitor=competitor, share_logs=share)
    if not share:
        messages.success(request, "Saved: its logs are yours and the organizers' only.")
    elif competitor.is_public:
        messages.success(
            request, "Saved: anyone may read its logs in finished duels and evaluations."
        )
    else:
        messages.success(request, "Saved: its logs will be shared once it is public.")
    return redirect(competitor)


def _posted_switch(request: AuthenticatedHttpRequest, name: str, *, refusal: str) -> bool:
    """A form's on/off field ("1" or "0"); anything else is refused with ``refusal``."""
    switch = {"1": True, "0": False}.get(request.POST.get(name, ""))
    if switch is None:
        raise ArenaError(refusal)
    return switch


@_owner_action("POST")
def visibility(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """Public or private, as the form's ``public`` says ("1" or "0")."""
    public = _posted_switch(request, "public", refusal="Choose public or private.")
    published = competitor_update(competitor=competitor, is_public=public)
    if competitor.is_public:
        messages.success(
            request,
            f"{competitor.name} is public: anyone may see it"
            + (f"; {published} is queued for publication." if published else "."),
        )
    else:
        messages.success(
            request, f"{competitor.name} is private: only you and the organizers see it."
        )
    return redirect(competitor)


@_owner_action("POST")
def play_state(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """Disable or enable, as the form's ``disabled`` says ("1" or "0")."""
    disabled = _posted_switch(request, "disabled", refusal="Choose to disable or to enable it.")
    competitor_update(competitor=competitor, is_disabled=disabled)
    if disabled:
        messages.success(
            request,
            f"{competitor.name} is disabled: within seconds it leaves every tournament and "
            "ladder it is in and plays no more; what it played stays. Enable it to play again.",
        )
    else:
        messages.success(
            request,
            f"{competitor.name} is enabled: its newest validated revision rejoins the "
            "ladders within seconds.",
        )
    return redirect(competitor)


@_owner_action("GET", "POST")
def remove(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """A page that asks first (what goes, what stays), then the delete."""
    if request.method == "GET":
        return render(request, "web/competitor_delete.html", {"competitor": competitor})
    deletion = competitor_delete(competitor=competitor)
    message = competitor_deletion_message(deletion)
    if deletion.kept is not None:
        messages.warning(request, message)
        return redirect(deletion.kept)
    messages.success(request, f"{competitor.name}: {message}")
    return redirect("profile")


@_owner_action("POST")
def test_duel(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """A test duel against the agent the form names; its page shows it played, then its
    replays."""
    environment_name = competitor.environment.name
    try:
        opponent = get_competitor_for_user(
            request.user, environment_name, request.POST.get("opponent", "")
        )
    except Http404:
        raise ArenaError("Pick an opponent from the list.") from None
    duel = requested_duel_create(user=request.user, competitor=competitor, opponent=opponent)
    messages.success(
        request,
        f"Test duel of {competitor.name} against {opponent.name}: unrated, played now.",
    )
    return redirect("duel", pk=duel.pk)


@_owner_action("POST")
def final(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """A team's member marks one of its validated revisions final, or unmarks it, as the
    form's ``final`` says ("1" or "0"), before the competition's deadline."""
    mark = _posted_switch(request, "final", refusal="Choose to mark or to unmark it.")
    version = request.POST.get("version", "")
    revision = (
        competitor.revisions.filter(version=int(version)).first() if version.isdigit() else None
    )
    if revision is None:
        raise ArenaError("Pick one of its revisions.")
    final_mark(revision=revision, user=request.user, final=mark)
    if mark:
        messages.success(request, f"{revision} is marked final: the team plays the final with it.")
    else:
        messages.success(request, f"{revision} is no longer marked final.")
    return redirect(competitor)


@_owner_action("POST")
def revalidate(request: AuthenticatedHttpRequest, competitor: Competitor) -> HttpResponse:
    """Its owner's re-validation: of its newest validated revision while ladders pause it,
    or of an LLM player's newest whose validation failed."""
    revision = revalidation_candidate(request.user, competitor)
    if revision is None:
        raise ArenaError(NOTHING_TO_REVALIDATE.format(name=competitor.name))
    if revision_revalidate(revision=revision):
        messages.success(request, f"{revision} is being validated again.")
    else:
        messages.info(request, f"{revision}'s validation is already queued or running.")
    return redirect(revision)
