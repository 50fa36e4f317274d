"""Score competitions: the leaderboard of mean returns, an evaluation, an episode's trace."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from reads.access import can_see_competitor
from reads.scores import (
    episode_document,
    episode_trace,
    get_evaluation_for_user,
    get_score_competition_for_user,
    score_competition_page,
)


@require_GET
def score_competition(request: HttpRequest, pk: int) -> HttpResponse:
    competition = get_score_competition_for_user(request.user, pk)
    page = score_competition_page(user=request.user, competition=competition)
    return render(request, "web/score_competition.html", {"page": page, "competition": competition})


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
            "shows_log": can_see_competitor(request.user, competitor),
        },
    )


@require_GET
def episode(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    evaluation = get_evaluation_for_user(request.user, pk)
    document = episode_document(evaluation, index)
    environment = evaluation.revision.competitor.environment
    return render(
        request,
        "web/episode.html",
        {
            "evaluation": evaluation,
            "episode": document,
            "environment": environment,
            "trace": episode_trace(environment.name, document),
        },
    )
