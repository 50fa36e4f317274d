"""What an owner does with a competitor from its page: share its logs, make it public or
private, disable or enable it, delete it (``core.services.competitors``, as the API's
``PATCH`` and ``DELETE /competitors/...`` do), start a test duel
(``core.services.requested_duels``), have it validated again when ladders paused it or an
LLM player's server did not answer its validation (``reads.competitors.revalidation_candidate``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ArenaError, sentence
from core.models import DisabledBy
from core.services.competitors import (
    competitor_delete,
    competitor_deletion_message,
    competitor_disable,
    competitor_enable,
    competitor_set_public,
    competitor_share_logs,
)
from core.services.requested_duels import requested_duel_create
from core.services.revisions import revision_revalidate
from reads.access import AuthenticatedHttpRequest, get_competitor_for_user, get_own_competitor
from reads.competitors import NOTHING_TO_REVALIDATE, revalidation_candidate
from web.forms import MoveLogsForm
from web.views.submissions import render_competitor


@login_required
@require_POST
def move_logs(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """Its owner shares its agent's logs with everyone, or stops sharing them."""
    competitor = get_own_competitor(request.user, environment_name, name)
    form = MoveLogsForm(request.POST)
    if not form.is_valid():
        return render_competitor(request, competitor, logs_form=form)
    share = form.cleaned_data["share_logs"]
    competitor_share_logs(competitor=competitor, share=share)
    if not share:
        messages.success(request, "Saved: its logs are yours and the organizers' only.")
    elif competitor.is_public:
        messages.success(
            request, "Saved: anyone may read its logs in finished duels and evaluations."
        )
    else:
        messages.success(request, "Saved: its logs will be shared once it is public.")
    return redirect(competitor)


def _posted_switch(request: AuthenticatedHttpRequest, name: str) -> bool | None:
    """A form's on/off field ("1" or "0"); None for anything else."""
    return {"1": True, "0": False}.get(request.POST.get(name, ""))


@login_required
@require_POST
def visibility(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """Public or private, as the form's ``public`` says ("1" or "0")."""
    competitor = get_own_competitor(request.user, environment_name, name)
    public = _posted_switch(request, "public")
    if public is None:
        messages.error(request, "Choose public or private.")
        return redirect(competitor)
    published = competitor_set_public(competitor=competitor, is_public=public)
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


@login_required
@require_POST
def play_state(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """Disable or enable, as the form's ``disabled`` says ("1" or "0")."""
    competitor = get_own_competitor(request.user, environment_name, name)
    disabled = _posted_switch(request, "disabled")
    if disabled is None:
        messages.error(request, "Choose to disable or to enable it.")
        return redirect(competitor)
    if disabled:
        competitor_disable(competitor=competitor, by=DisabledBy.OWNER)
        messages.success(
            request,
            f"{competitor.name} is disabled: within seconds it leaves every tournament and "
            "ladder it is in and plays no more; what it played stays. Enable it to play again.",
        )
        return redirect(competitor)
    try:
        competitor_enable(competitor=competitor, by=DisabledBy.OWNER)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
    else:
        messages.success(
            request,
            f"{competitor.name} is enabled: its newest validated revision rejoins the "
            "ladders within seconds.",
        )
    return redirect(competitor)


@login_required
@require_http_methods(["GET", "POST"])
def remove(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """A page that asks first (what goes, what stays), then the delete."""
    competitor = get_own_competitor(request.user, environment_name, name)
    if request.method == "GET":
        return render(request, "web/competitor_delete.html", {"competitor": competitor})
    try:
        deletion = competitor_delete(competitor=competitor)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
        return redirect(competitor)
    message = competitor_deletion_message(deletion)
    if deletion.kept is not None:
        messages.warning(request, message)
        return redirect(deletion.kept)
    messages.success(request, f"{competitor.name}: {message}")
    return redirect("profile")


@login_required
@require_POST
def test_duel(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """A test duel against the agent the form names; its page shows it played, then its
    replays."""
    competitor = get_own_competitor(request.user, environment_name, name)
    opponent_name = request.POST.get("opponent", "")
    try:
        opponent = get_competitor_for_user(request.user, environment_name, opponent_name)
    except Http404:
        messages.error(request, "Pick an opponent from the list.")
        return redirect(competitor)
    try:
        duel = requested_duel_create(user=request.user, competitor=competitor, opponent=opponent)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
        return redirect(competitor)
    messages.success(
        request,
        f"Test duel of {competitor.name} against {opponent.name}: unrated, played now.",
    )
    return redirect("duel", pk=duel.pk)


@login_required
@require_POST
def revalidate(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """Its owner's re-validation: of its newest validated revision while ladders pause it,
    or of an LLM player's newest whose validation failed."""
    competitor = get_own_competitor(request.user, environment_name, name)
    revision = revalidation_candidate(request.user, competitor)
    if revision is None:
        messages.error(request, sentence(NOTHING_TO_REVALIDATE.format(name=competitor.name)))
        return redirect(competitor)
    try:
        queued = revision_revalidate(revision=revision)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
        return redirect(competitor)
    if queued:
        messages.success(request, f"{revision} is being validated again.")
    else:
        messages.info(request, f"{revision}'s validation is already queued or running.")
    return redirect(revision)
