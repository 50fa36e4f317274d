"""What the pages (and the API) of score competitions read: the leaderboard of mean
returns, an evaluation's episodes, and an episode's replay recomputed from its seed and
actions."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import orjson
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from core.models import (
    Competitor,
    DuelStatus,
    Environment,
    Evaluation,
    Revision,
    ScoreCompetition,
    User,
)
from core.models.scores import ENTERED_KINDS
from environments.base import IllegalAction
from environments.registry import (
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    load_info,
    make_environment,
)
from reads.access import (
    Visitor,
    can_see_competitor,
    can_see_evaluation,
    competitors_visible,
    score_competitions_visible,
)
from reads.replays import NOT_INSTALLED, BoardAssets, ReplayBroken, board_assets


def visible_score_competitions(user: Visitor) -> QuerySet[ScoreCompetition]:
    return ScoreCompetition.objects.select_related("environment").filter(
        score_competitions_visible(user)
    )


def get_score_competition_for_user(user: Visitor, pk: int) -> ScoreCompetition:
    return get_object_or_404(visible_score_competitions(user), pk=pk)


def get_evaluation_for_user(user: Visitor, pk: int) -> Evaluation:
    """A competition's evaluation the visitor may see the competition of; a validation
    evaluation only with its competitor (as the revision's page)."""
    evaluation = get_object_or_404(
        Evaluation.objects.select_related(
            "competition__environment",
            "revision__competitor__owner",
            "revision__competitor__environment",
            "job",
        ),
        pk=pk,
    )
    if not can_see_evaluation(user, evaluation):
        raise Http404("No such evaluation")
    return evaluation


def revision_validation_evaluation(revision: Revision) -> Evaluation | None:
    """The evaluation that validated a revision of a one-player game (its latest)."""
    return revision.evaluations.filter(is_validation=True).order_by("-created_at").first()


@dataclasses.dataclass(frozen=True)
class ScoreRow:
    #: None for an evaluation not (or not successfully) played.
    rank: int | None
    evaluation: Evaluation
    competitor: Competitor
    #: False for a private competitor the visitor may not open: its name shows, unlinked.
    linked: bool


def score_leaderboard(*, user: Visitor, competition: ScoreCompetition) -> list[ScoreRow]:
    """Played evaluations by mean return, best first (ties: the higher lower end of the
    interval, then the name); then the queued, running and failed ones. One row per
    competitor: its newest played evaluation, else its newest (a standing competition
    evaluates each new revision beside the earlier ones, which stay on the board until
    the new one is played)."""
    every = competition.evaluations.select_related(
        "revision__competitor__owner", "revision__competitor__environment"
    ).order_by("-revision__version", "-pk")
    shown: dict[int, Evaluation] = {}
    for evaluation in every:
        competitor_id = evaluation.revision.competitor_id
        kept = shown.get(competitor_id)
        if kept is None or (
            kept.status != DuelStatus.SUCCEEDED and evaluation.status == DuelStatus.SUCCEEDED
        ):
            shown[competitor_id] = evaluation
    evaluations = list(shown.values())

    def order(evaluation: Evaluation) -> tuple[Any, ...]:
        played = evaluation.status == DuelStatus.SUCCEEDED
        return (
            not played,
            -(evaluation.mean_return or 0.0),
            -(evaluation.ci_low if evaluation.ci_low is not None else float("-inf")),
            evaluation.revision.competitor.name,
        )

    rows = []
    rank = 0
    for evaluation in sorted(evaluations, key=order):
        played = evaluation.status == DuelStatus.SUCCEEDED
        rank += played
        competitor = evaluation.revision.competitor
        rows.append(
            ScoreRow(
                rank=rank if played else None,
                evaluation=evaluation,
                competitor=competitor,
                linked=can_see_competitor(user, competitor),
            )
        )
    return rows


def get_own_entrant(user: Visitor, **lookup: object) -> Competitor:
    """One of the visitor's competitors (by ``pk``, or by ``environment`` and ``name``), to
    enter in (or withdraw from) a score competition (``core.services.scores`` says which may be);
    a 404 for anyone else's, as the owner's other pages do."""
    competitor = (
        Competitor.objects.select_related("environment", "owner")
        .filter(owner=user if isinstance(user, User) else None, **lookup)
        .first()
    )
    if competitor is None:
        raise Http404("You have no such competitor.")
    return competitor


def score_entrants_visible(*, user: Visitor, competition: ScoreCompetition) -> list[Competitor]:
    """The online agents and LLM players entered, that the visitor may see, by name."""
    return list(
        competition.entered.filter(competitors_visible(user))
        .select_related("owner", "environment")
        .order_by("name")
    )


@dataclasses.dataclass(frozen=True)
class ScoreEntries:
    """What the visitor may do about entries: their online agents and LLM players of the
    game, those entered and those that could be."""

    entered: list[Competitor]
    enterable: list[Competitor]


def score_entries_of(*, user: Visitor, competition: ScoreCompetition) -> ScoreEntries:
    if not isinstance(user, User):
        return ScoreEntries([], [])
    own = list(
        Competitor.objects.filter(
            owner=user,
            environment=competition.environment,
            kind__in=ENTERED_KINDS,
            is_disabled=False,
        ).order_by("name")
    )
    entered = set(competition.entered.filter(owner=user).values_list("pk", flat=True))
    return ScoreEntries(
        entered=[competitor for competitor in own if competitor.pk in entered],
        enterable=[competitor for competitor in own if competitor.pk not in entered],
    )


@dataclasses.dataclass(frozen=True)
class ScoreCompetitionPage:
    competition: ScoreCompetition
    rows: list[ScoreRow]
    #: Online agents and LLM players entered (those the visitor may see).
    entrants: list[Competitor]
    #: The visitor's own, entered or not.
    entries: ScoreEntries

    @property
    def is_running(self) -> bool:
        pending = {DuelStatus.QUEUED, DuelStatus.RUNNING}
        return any(row.evaluation.status in pending for row in self.rows)


def score_competition_page(*, user: Visitor, competition: ScoreCompetition) -> ScoreCompetitionPage:
    return ScoreCompetitionPage(
        competition=competition,
        rows=score_leaderboard(user=user, competition=competition),
        entrants=score_entrants_visible(user=user, competition=competition),
        entries=score_entries_of(user=user, competition=competition),
    )


def environment_score_competitions(
    *, user: Visitor, environment: Environment
) -> list[ScoreCompetition]:
    return list(visible_score_competitions(user).filter(environment=environment))


def episode_document(evaluation: Evaluation, index: int) -> dict[str, Any]:
    for episode in evaluation.episodes:
        if episode.get("index") == index:
            return dict(episode)
    raise Http404("No such episode")


@dataclasses.dataclass(frozen=True)
class EpisodeReplay:
    """An episode recomputed from its seed and actions, for the replay viewer
    (``web/static/web/replay.js``), as a match's replay is."""

    #: The picture of each state, the start included (``Environment.view``).
    views: list[dict[str, Any]]
    #: The state shown first, and its HTML, for a browser without JavaScript.
    step: int
    html: str
    #: Set when the stored actions no longer replay, or the game is gone.
    error: str
    assets: BoardAssets = dataclasses.field(default_factory=BoardAssets)

    @property
    def final_step(self) -> int:
        return len(self.views) - 1


def episode_replay(game: str, episode: dict[str, Any], step: int | None = None) -> EpisodeReplay:
    """The replay of ``episode`` of the game named ``game``, shown first at ``step`` (the
    final state if None or past it; the first if negative)."""
    try:
        environment = make_environment(game)
        assets = board_assets(load_info(game))
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        return EpisodeReplay([], 0, "", NOT_INSTALLED)
    actions = episode.get("actions") or []
    wanted = len(actions) if step is None else max(step, 0)
    environment.reset(int(episode["seed"]))
    views = [environment.view()]
    shown = environment.render_html() if wanted == 0 else ""
    error = ""
    for number, action in enumerate(actions, start=1):
        try:
            environment.step({0: action[0]})
        except (IllegalAction, IndexError, KeyError, TypeError, ValueError) as problem:
            error = str(ReplayBroken(number, problem))
            break
        views.append(environment.view())
        if number == wanted:
            shown = environment.render_html()
    if wanted >= len(views):
        # Asked past the end, or the episode stops early: the last state it reached.
        shown = environment.render_html()
    return EpisodeReplay(views, min(wanted, len(views) - 1), shown, error, assets)


def evaluation_has_conversations(evaluation: Evaluation) -> bool:
    """Whether an LLM seat played it (each episode keeps its conversation)."""
    return any("conversation" in episode for episode in evaluation.episodes)


def evaluation_conversations_jsonl(evaluation: Evaluation) -> Iterator[bytes]:
    """An LLM seat's conversations, one JSON object per line and turn, episode by episode,
    as a duel's downloads give a match's (the caller checks the visitor may read them, as
    the agent's log)."""
    for episode in evaluation.episodes:
        conversation = episode.get("conversation") or {}
        for turn in conversation.get("turns") or []:
            yield (
                orjson.dumps(
                    {
                        "evaluation": evaluation.pk,
                        "episode": episode.get("index"),
                        "step": turn.get("step"),
                        "model": conversation.get("model"),
                        "harness_version": conversation.get("harness_version"),
                        "harness_hash": conversation.get("harness_hash"),
                        "turn": turn,
                    }
                )
                + b"\n"
            )
