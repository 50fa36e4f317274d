"""What the LLM pages (and the API's LLM endpoints) read: players' statistics per model,
computed from their conversations (``MatchConversation``), and conversations as the
replay viewer and the downloads show them.

A statistic counts the matches of succeeded duels (a failed duel stores no match), each
from the side of the LLM player that played it:

- games, wins, losses, draws: its matches and their results, by its rank in the match
  (first, alone or sharing it with some, is a win; behind anyone, a loss);
- illegal and unparseable shares: of its answers (requests to the model), how many named
  an illegal move or could not be parsed; retries: answers it was asked again for;
- forfeits: matches ended by a fault charged to it (its retries ran out, its time);
- median latency: of its moves, over every match;
- cost: its tokens at the prices the organizers set for the player (per million tokens).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

import orjson
from django.db.models import Count, Q, QuerySet, Sum

from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelResult,
    Match,
    MatchConversation,
)
from core.models.llm import SUMMARY_COUNTERS
from reads.access import Visitor, can_see_competitor, can_see_logs, competitors_visible
from reads.replays import frame_of_step

MILLION = Decimal(1_000_000)
_ENVIRONMENT = "match__duel__environment__name"
_NOT_WON = (DuelResult.DRAW, DuelResult.ERROR)


class AnswerShares:
    """The shares of a record's answers (``requests``) that were refused."""

    requests: int
    illegal: int
    unparseable: int

    @property
    def illegal_share(self) -> float:
        return self.illegal / self.requests if self.requests else 0.0

    @property
    def unparseable_share(self) -> float:
        return self.unparseable / self.requests if self.requests else 0.0


@dataclasses.dataclass(frozen=True)
class PlayerStats(AnswerShares):
    """One LLM player's record with one model in one environment."""

    model: str
    environment: str
    competitor: Competitor | None
    #: False for a private player the visitor may not open: its name shows, unlinked.
    linked: bool
    games: int
    wins: int
    losses: int
    draws: int
    forfeits: int
    moves: int
    requests: int
    illegal: int
    unparseable: int
    too_long: int
    retries: int
    provider_retries: int
    prompt_tokens: int
    completion_tokens: int
    median_latency_ms: float | None
    cost: Decimal

    @property
    def name(self) -> str:
        return self.competitor.name if self.competitor else "(deleted)"


def player_stats(
    *, user: Visitor, model: str | None = None, competitor: Competitor | None = None
) -> list[PlayerStats]:
    """Every LLM player's statistics (of one model, or one player), by model, environment
    and name. Three queries: the counts, the latencies, the players."""
    conversations = MatchConversation.objects.all()
    if model is not None:
        conversations = conversations.filter(model=model)
    if competitor is not None:
        conversations = conversations.filter(competitor=competitor)
    keys = ("model", _ENVIRONMENT, "competitor_id")
    rows = (
        conversations.order_by()
        .values(*keys)
        .annotate(
            games=Count("pk"),
            # By its rank, in a game of two or more: first (alone, or sharing it with
            # some but not all) is a win, behind anyone a loss; a match not scored is none.
            wins=Count("pk", filter=Q(rank=1) & ~Q(match__result__in=_NOT_WON)),
            losses=Count("pk", filter=Q(rank__gt=1) & ~Q(match__result=DuelResult.ERROR)),
            draws=Count("pk", filter=Q(match__result=DuelResult.DRAW)),
            forfeits=Count("pk", filter=Q(forfeited=True)),
            **{f"total_{counter}": Sum(counter) for counter in SUMMARY_COUNTERS},
        )
    )
    latencies: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for *key, values in conversations.values_list(*keys, "latencies_ms").iterator():
        latencies[tuple(key)].extend(float(value) for value in values or [])
    competitors = Competitor.objects.select_related("environment", "owner", "llm").in_bulk(
        {row["competitor_id"] for row in rows if row["competitor_id"] is not None}
    )
    stats = []
    for row in rows:
        key = tuple(row[name] for name in keys)
        player = competitors.get(row["competitor_id"])
        totals = {counter: row[f"total_{counter}"] or 0 for counter in SUMMARY_COUNTERS}
        stats.append(
            PlayerStats(
                model=row["model"],
                environment=row[_ENVIRONMENT],
                competitor=player,
                linked=player is not None and can_see_competitor(user, player),
                games=row["games"],
                wins=row["wins"],
                losses=row["losses"],
                draws=row["draws"],
                forfeits=row["forfeits"],
                median_latency_ms=statistics.median(latencies[key]) if latencies[key] else None,
                cost=_cost(player, totals["prompt_tokens"], totals["completion_tokens"]),
                **totals,
            )
        )
    return sorted(stats, key=lambda entry: (entry.model, entry.environment, entry.name))


def _cost(competitor: Competitor | None, prompt_tokens: int, completion_tokens: int) -> Decimal:
    player = getattr(competitor, "llm", None) if competitor is not None else None
    if player is None:
        return Decimal(0)
    return (
        prompt_tokens * player.price_input_per_million
        + completion_tokens * player.price_output_per_million
    ) / MILLION


@dataclasses.dataclass(frozen=True)
class ModelSummary(AnswerShares):
    """A model's totals over every player and environment (the /llm/ page)."""

    model: str
    players: int
    games: int
    wins: int
    losses: int
    draws: int
    requests: int
    illegal: int
    unparseable: int
    cost: Decimal


def model_summaries(stats: Iterable[PlayerStats]) -> list[ModelSummary]:
    by_model: dict[str, list[PlayerStats]] = defaultdict(list)
    for entry in stats:
        by_model[entry.model].append(entry)
    return [
        ModelSummary(
            model=model,
            players=len({entry.competitor for entry in entries}),
            games=sum(entry.games for entry in entries),
            wins=sum(entry.wins for entry in entries),
            losses=sum(entry.losses for entry in entries),
            draws=sum(entry.draws for entry in entries),
            requests=sum(entry.requests for entry in entries),
            illegal=sum(entry.illegal for entry in entries),
            unparseable=sum(entry.unparseable for entry in entries),
            cost=sum((entry.cost for entry in entries), Decimal(0)),
        )
        for model, entries in sorted(by_model.items())
    ]


def llm_players(*, user: Visitor) -> QuerySet[Competitor]:
    """The LLM players the visitor may see, with their settings."""
    return (
        Competitor.objects.filter(competitors_visible(user), kind=CompetitorKind.LLM)
        .select_related("environment", "owner", "llm")
        .order_by("environment__name", "name", "pk")
    )


@dataclasses.dataclass(frozen=True)
class LLMIndexPage:
    models: list[ModelSummary]
    players: list[Competitor]


def llm_index_page(*, user: Visitor) -> LLMIndexPage:
    return LLMIndexPage(
        models=model_summaries(player_stats(user=user)), players=list(llm_players(user=user))
    )


@dataclasses.dataclass(frozen=True)
class ModelPage:
    model: str
    stats: list[PlayerStats]
    summary: ModelSummary | None


def model_page(*, user: Visitor, model: str) -> ModelPage:
    stats = player_stats(user=user, model=model)
    summaries = model_summaries(stats)
    return ModelPage(model=model, stats=stats, summary=summaries[0] if summaries else None)


# --- conversations --------------------------------------------------------------------


def conversations_visible(user: Visitor, match: Match) -> QuerySet[MatchConversation]:
    """The match's conversations the visitor may read, by player: an LLM player's are its
    agent's log (``can_see_logs``)."""
    duel = match.duel
    players = [
        player
        for player, revision in enumerate(duel.revisions(), start=1)
        if can_see_logs(user, revision.competitor, finished=duel.is_finished)
    ]
    return (
        MatchConversation.objects.filter(match=match, player__in=players)
        .select_related("competitor")
        .order_by("player")
    )


def turns_by_frame(
    conversations: Iterable[MatchConversation], *, labels: dict[int, str], final_step: int
) -> dict[int, list[dict[str, Any]]]:
    """The replay viewer's conversation panels: for each frame, the turns of the LLM seats
    that chose its move (the state after step ``s`` is frame ``s + 1``). A turn whose move
    was refused (the match ended on it) shows with the final state, where the fault does."""
    frames: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for conversation in conversations:
        for turn in conversation.turns:
            step = turn.get("step")
            if not isinstance(step, int) or step < 0:
                continue
            frames[frame_of_step(step, final_step)].append(
                {
                    "player": conversation.player,
                    "label": labels.get(conversation.player, f"player {conversation.player}"),
                    "model": conversation.model,
                    "turn": turn,
                }
            )
    return dict(frames)


def _turn_lines(conversation: MatchConversation, *, duel_id: int, index: int) -> Iterator[bytes]:
    for turn in conversation.turns:
        yield (
            orjson.dumps(
                {
                    "duel": duel_id,
                    "match": index,
                    "step": turn.get("step"),
                    "player": conversation.player,
                    "model": conversation.model,
                    "harness_version": conversation.harness_version,
                    "harness_hash": conversation.harness_hash,
                    "turn": turn,
                }
            )
            + b"\n"
        )


def conversations_jsonl(*, user: Visitor, matches: Iterable[Match]) -> Iterator[bytes]:
    """One JSON object per line and turn, match by match: what the downloads serve."""
    for match in matches:
        for conversation in conversations_visible(user, match):
            yield from _turn_lines(conversation, duel_id=match.duel_id, index=match.index)


def duel_matches(duel: Duel) -> QuerySet[Match]:
    return duel.matches.order_by("index")
