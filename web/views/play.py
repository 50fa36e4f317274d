"""Playing an agent in the browser: starting a game, its page, a rematch, "My games"."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.errors import ArenaError
from core.models import Duel, DuelStatus, Revision
from core.services.human import TooManyGames, human_game_create, human_game_rematch
from reads.access import AuthenticatedHttpRequest, get_competitor_for_user
from reads.human import game_rows, my_games, play_page
from reads.pages import rows_page
from reads.replays import game_board_assets

#: Games a page of "My games" lists.
GAME_ROWS = 25


@login_required
@require_POST
def play_start(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """A new game of the user against the competitor's newest validated revision, on the
    side the form chose (first, second, or random)."""
    competitor = get_competitor_for_user(request.user, environment_name, name)
    opponent = Revision.objects.validated().filter(competitor=competitor).order_by("-version")
    try:
        revision = opponent.first()
        if revision is None:
            raise ArenaError(f"{competitor.name} has no validated revision to play")
        duel = human_game_create(
            user=request.user, opponent=revision, side=request.POST.get("side", "first")
        )
    except TooManyGames as error:
        # Where the games going are listed, to finish or resign one.
        messages.error(request, error.message)
        return redirect("my_games")
    except ArenaError as error:
        messages.error(request, error.message)
        return redirect(competitor)
    return redirect("play", pk=duel.pk)


@login_required
@require_POST
def play_rematch(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The same agent again, sides swapped."""
    duel = get_object_or_404(Duel.objects.with_seats(), pk=pk)
    try:
        rematch = human_game_rematch(user=request.user, duel=duel)
    except TooManyGames as error:
        messages.error(request, error.message)
        return redirect("my_games")
    except ArenaError as error:
        messages.error(request, error.message)
        return redirect("play", pk=pk)
    return redirect("play", pk=rematch.pk)


@login_required
@require_GET
def play(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    duel = get_object_or_404(Duel.objects.with_seats(), pk=pk)
    page = play_page(user=request.user, duel=duel)
    if page is None:
        raise Http404("No such game of yours")
    return render(
        request,
        "web/play.html",
        {
            "page": page,
            "duel": duel,
            "environment": duel.environment,
            "opponent": page.opponent.revision,
            "you_move_first": page.you_move_first,
            "assets": game_board_assets(duel.environment.game),
            "replay_url": reverse("match", args=[duel.pk, 0]),
            "move_seconds": settings.ARENA_HUMAN_MOVE_SECONDS,
            "bank_seconds": settings.ARENA_HUMAN_TIME_BANK_SECONDS,
        },
    )


@login_required
@require_GET
def games(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's games in the browser: those going on first, with links to go back."""
    games = my_games(user=request.user)
    listed = rows_page(games, request.GET.get("page"), GAME_ROWS)
    going = games.filter(status__in=[DuelStatus.QUEUED, DuelStatus.RUNNING])
    return render(
        request,
        "web/my_games.html",
        {
            "games": listed,
            "rows": game_rows(user=request.user, duels=list(listed)),
            "going": game_rows(user=request.user, duels=list(going)),
            "limit": settings.ARENA_HUMAN_GAMES_PER_USER,
        },
    )
