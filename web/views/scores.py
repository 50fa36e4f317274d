"""Score competitions: the leaderboard of mean returns, an evaluation, an episode's replay;
an owner entering (or withdrawing) an online agent or an LLM player."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.errors import ArenaError, sentence
from core.models import Competitor, ScoreCompetition
from core.services.scores import score_entry_create, score_entry_withdraw
from reads.access import AuthenticatedHttpRequest, can_see_logs
from reads.scores import (
    episode_document,
    episode_replay,
    evaluation_conversations_jsonl,
    evaluation_has_conversations,
    get_evaluation_for_user,
    get_own_entrant,
    get_score_competition_for_user,
    score_competition_page,
)


@require_GET
def score_competition(request: HttpRequest, pk: int) -> HttpResponse:
    competition = get_score_competition_for_user(request.user, pk)
    page = score_competition_page(user=request.user, competition=competition)
    return render(request, "web/score_competition.html", {"page": page, "competition": competition})


def _get_posted_entry(
    request: AuthenticatedHttpRequest, pk: int
) -> tuple[ScoreCompetition, Competitor]:
    """The competition, and the user's online agent or LLM player that the form names;
    404 for either that the user may not have."""
    competition = get_score_competition_for_user(request.user, pk)
    try:
        competitor_pk = int(request.POST.get("competitor", ""))
    except ValueError:
        raise Http404("No such competitor of yours") from None
    return competition, get_own_entrant(request.user, pk=competitor_pk)


@login_required
@require_POST
def score_entry(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Enter one of the user's online agents or LLM players."""
    competition, competitor = _get_posted_entry(request, pk)
    try:
        evaluation = score_entry_create(competition=competition, competitor=competitor)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
        return redirect(competition)
    if evaluation is not None:
        hint = " (keep its client connected)" if competitor.is_online else ""
        messages.success(
            request, f"{competitor.name} is entered: its episodes are played now{hint}."
        )
    elif competition.started_at is None:
        messages.success(
            request, f"{competitor.name} is entered: it is evaluated when the competition starts."
        )
    else:
        messages.success(
            request,
            f"{competitor.name} is entered again; its evaluation stands until the next re-run.",
        )
    return redirect(competition)


@login_required
@require_POST
def score_entry_remove(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Withdraw one of the user's entered online agents or LLM players."""
    competition, competitor = _get_posted_entry(request, pk)
    try:
        score_entry_withdraw(competition=competition, competitor=competitor)
    except ArenaError as error:
        messages.error(request, sentence(error.message))
    else:
        messages.success(request, f"{competitor.name} is withdrawn: it is not evaluated again.")
    return redirect(competition)


@require_GET
def evaluation(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = get_evaluation_for_user(request.user, pk)
    competitor = evaluation.revision.competitor
    return render(
        request,
        "web/evaluation.html",
        {
            "evaluation": evaluation,
            "competitor": competitor,
            "environment": competitor.environment,
            "shows_log": can_see_logs(request.user, competitor, finished=evaluation.is_finished),
            "has_conversations": evaluation_has_conversations(evaluation),
        },
    )


@require_GET
def evaluation_conversations(request: HttpRequest, pk: int) -> HttpResponse:
    """An LLM player's conversations of an evaluation, for whoever may read its log."""
    evaluation = get_evaluation_for_user(request.user, pk)
    competitor = evaluation.revision.competitor
    if not can_see_logs(request.user, competitor, finished=evaluation.is_finished):
        raise Http404("No such evaluation")
    response = HttpResponse(
        b"".join(evaluation_conversations_jsonl(evaluation)), content_type="application/x-ndjson"
    )
    response["Content-Disposition"] = f'attachment; filename="evaluation-{pk}-conversations.jsonl"'
    return response


@require_GET
def episode(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """An episode drawn step by step (``?step=N``: the state shown first, the last by
    default), recomputed from its seed and actions."""
    evaluation = get_evaluation_for_user(request.user, pk)
    document = episode_document(evaluation, index)
    environment = evaluation.revision.competitor.environment
    try:
        step = int(request.GET["step"])
    except (KeyError, ValueError):
        step = None
    return render(
        request,
        "web/episode.html",
        {
            "evaluation": evaluation,
            "episode": document,
            "environment": environment,
            "replay": episode_replay(environment.game, document, step),
        },
    )
