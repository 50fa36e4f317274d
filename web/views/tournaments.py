from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from core.models import User
from core.services.human import human_duel_seat
from reads.access import get_duel_for_user, get_match_for_user, get_tournament_for_user
from reads.live import LIVE_PREFIX, duel_watchable
from reads.llm import conversations_visible, turns_by_frame
from reads.replays import (
    BoardAssets,
    game_board_assets,
    match_replay,
    move_logs_by_frame,
    move_logs_visible,
    player_labels,
)
from reads.tournaments import duel_page, tournament_page
from web.page_cache import cached_for_visitors


@require_GET
@cached_for_visitors
def tournament(request: HttpRequest, pk: int) -> HttpResponse:
    tournament = get_tournament_for_user(request.user, pk)
    page = tournament_page(
        user=request.user,
        tournament=tournament,
        standings_page=request.GET.get("standings"),
        duels_page=request.GET.get("duels"),
    )
    return render(request, "web/tournament.html", {"page": page, "tournament": tournament})


@require_GET
@cached_for_visitors
def duel(request: HttpRequest, pk: int) -> HttpResponse:
    duel = get_duel_for_user(request.user, pk)
    page = duel_page(user=request.user, duel=duel)
    watchable = page.is_pending and duel_watchable(duel)
    return render(
        request,
        "web/duel.html",
        {
            "page": page,
            "duel": duel,
            "live_url": f"{LIVE_PREFIX}{duel.pk}" if watchable else "",
            "live_assets": game_board_assets(duel.environment.game) if watchable else BoardAssets(),
            "play_url": reverse("play", args=[duel.pk])
            if page.is_pending
            and isinstance(request.user, User)
            and human_duel_seat(user=request.user, duel=duel)
            else "",
        },
    )


def _requested_step(request: HttpRequest) -> int | None:
    """The step to show first: ``?step=N`` (how the page works without JavaScript); None
    for the final state."""
    try:
        return int(request.GET["step"])
    except (KeyError, ValueError):
        return None


@require_GET
@cached_for_visitors
def match(request: HttpRequest, duel_pk: int, index: int) -> HttpResponse:
    match = get_match_for_user(request.user, duel_pk, index)
    replay = match_replay(match, _requested_step(request))
    step = replay.step
    conversations = list(conversations_visible(request.user, match))
    # Every frame's conversation panel is rendered (hidden but the current one): the
    # viewer's script shows the one of the step it moves to, without a request.
    labels = player_labels(match.duel)
    final_step = max(replay.final_step, 0)
    panels = turns_by_frame(conversations, labels=labels, final_step=final_step)
    # The same for what the agents logged during their moves, to whoever may read it.
    log_panels = move_logs_by_frame(
        move_logs_visible(request.user, match), labels=labels, final_step=final_step
    )
    return render(
        request,
        "web/match.html",
        {
            "match": match,
            "duel": match.duel,
            "replay": replay,
            "step": step,
            "frame": replay.frames[step] if replay.frames else None,
            "environment": match.duel.environment,
            "has_conversations": bool(conversations),
            "conversation_panels": sorted(panels.items()),
            "conversation_steps": set(panels),
            "move_log_panels": sorted(log_panels.items()),
            "move_log_steps": set(log_panels),
        },
    )
