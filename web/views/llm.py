"""LLM players: registering and editing one, the statistics per model, and the
conversations' downloads."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.errors import ArenaError, sentence
from core.services.llm import llm_player_register, llm_player_update, llm_settings
from reads.access import (
    AuthenticatedHttpRequest,
    get_duel_for_user,
    get_environment,
    get_match_for_user,
    get_own_competitor,
)
from reads.llm import conversations_jsonl, duel_matches, llm_index_page, model_page
from web.forms import LLMPlayerForm, LLMSettingsForm
from web.views.environments import render_environment
from web.views.submissions import render_competitor

JSONL = "application/x-ndjson"


@login_required
@require_POST
def llm_player_create(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    environment = get_environment(name)
    form = LLMPlayerForm(request.POST)
    if form.is_valid():
        settings = form.cleaned_data
        try:
            competitor = llm_player_register(
                owner=request.user,
                environment=environment,
                name=settings["name"],
                **llm_settings(settings),
            )
        except ArenaError as error:
            form.add_error("name", sentence(error.message))
        else:
            messages.success(request, f"Registered the LLM player {competitor.name}.")
            return redirect(competitor)
    return render_environment(request, environment, llm_form=form)


@login_required
@require_POST
def llm_player_edit(
    request: AuthenticatedHttpRequest, environment_name: str, name: str
) -> HttpResponse:
    competitor = get_own_competitor(request.user, environment_name, name)
    if not competitor.is_llm:
        return redirect(competitor)
    form = LLMSettingsForm(request.POST, has_key=competitor.llm.has_key)
    if form.is_valid():
        revision = llm_player_update(
            competitor=competitor, changed_by=request.user, **llm_settings(form.cleaned_data)
        )
        if revision is None:
            messages.success(request, "Saved; it plays as before.")
        else:
            messages.success(
                request, f"Saved: it plays as {revision}, whose leaderboard entry starts afresh."
            )
        return redirect(competitor)
    return render_competitor(request, competitor, llm_form=form)


@require_GET
def llm_index(request: HttpRequest) -> HttpResponse:
    return render(request, "web/llm_index.html", {"page": llm_index_page(user=request.user)})


@require_GET
def llm_model(request: HttpRequest, model: str) -> HttpResponse:
    page = model_page(user=request.user, model=model)
    return render(request, "web/llm_model.html", {"page": page})


def _jsonl(lines: Iterable[bytes], filename: str) -> HttpResponse:
    # Read whole before answering: a streamed body would query after the view returned.
    response = HttpResponse(b"".join(lines), content_type=JSONL)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
def match_conversations(request: HttpRequest, duel_pk: int, index: int) -> HttpResponse:
    match = get_match_for_user(request.user, duel_pk, index)
    lines = conversations_jsonl(user=request.user, matches=[match])
    return _jsonl(lines, f"duel-{duel_pk}-match-{index}-conversations.jsonl")


@require_GET
def duel_conversations(request: HttpRequest, pk: int) -> HttpResponse:
    duel = get_duel_for_user(request.user, pk)
    matches = list(duel_matches(duel))
    for match in matches:
        match.duel = duel
    lines = conversations_jsonl(user=request.user, matches=matches)
    return _jsonl(lines, f"duel-{pk}-conversations.jsonl")
