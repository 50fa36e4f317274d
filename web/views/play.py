"""Playing an agent in the browser: starting a game, and its page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.errors import ArenaError
from core.models import Duel, Revision
from core.services.human import human_duel_seat, human_game_create
from reads.access import AuthenticatedHttpRequest, get_competitor_for_user
from reads.replays import first_mover, game_board_assets, game_of
from referee.results import match_seed, seat_rotation


@login_required
@require_POST
def play_start(request: AuthenticatedHttpRequest, environment_name: str, name: str) -> HttpResponse:
    """A new game of the user against the competitor's newest validated revision."""
    competitor = get_competitor_for_user(request.user, environment_name, name)
    opponent = Revision.objects.validated().filter(competitor=competitor).order_by("-version")
    try:
        revision = opponent.first()
        if revision is None:
            raise ArenaError(f"{competitor.name} has no validated revision to play")
        duel = human_game_create(user=request.user, opponent=revision)
    except ArenaError as error:
        messages.error(request, error.message)
        return redirect(competitor)
    return redirect("play", pk=duel.pk)


@login_required
@require_GET
def play(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    duel = get_object_or_404(
        Duel.objects.with_seats(),
        pk=pk,
    )
    if human_duel_seat(user=request.user, duel=duel) is None:
        raise Http404("No such game of yours")
    # The person is player 1, in the game's first seat of its one match; who moves first
    # is the game's to say (in chess, White: the second seat).
    seat = seat_rotation(2, 0).index(1)
    first = first_mover(game_of(duel), match_seed(duel.seed, 0))
    return render(
        request,
        "web/play.html",
        {
            "duel": duel,
            "environment": duel.environment,
            "opponent": duel.revisions()[1],
            "you_move_first": first == seat,
            "assets": game_board_assets(duel.environment.game),
            "replay_url": reverse("match", args=[duel.pk, 0]),
            "move_seconds": settings.ARENA_HUMAN_MOVE_SECONDS,
            "bank_seconds": settings.ARENA_HUMAN_TIME_BANK_SECONDS,
        },
    )
