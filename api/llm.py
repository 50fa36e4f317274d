"""LLM players (``/api/v1/llm/``): a model behind an OpenAI-compatible server, played by
Arena's harness; their statistics per model; the conversations of their matches.

Registering and changing a player takes a token with the ``submit`` scope. Its API key is
write-only: answers say only whether one is stored (``key``). A private player is a 404
to everyone but its owner and the organizers, as on the site (``reads.access``); the
conversations of a match follow the same rule as an agent's log. The statistics are the
per-model page's (``reads.llm``), number for number.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db.models import Max, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Field, FilterLookup, FilterSchema, Query, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import field_validator

from api import auth
from api.environments import environment_named
from api.errors import documented
from api.pagination import paginated
from api.params import PRINTABLE, Id, Number, Slug
from core.models import Competitor, LLMPlayer, MatchConversation, User
from core.models.llm import (
    MAX_TOKENS_RANGE,
    MODEL_NAME_MAX,
    MODEL_NAME_PATTERN,
    REQUEST_TIMEOUT_RANGE,
    TEMPERATURE_RANGE,
    TOP_P_RANGE,
)
from core.models.submissions import PUBLIC_BY_DEFAULT
from core.secrets import SECRET_REF_HELP, SECRET_REF_PATTERN
from core.services.llm import llm_player_register, llm_player_update, llm_settings
from llm.prompts import SUPPORTED_HARNESS_VERSIONS
from reads.access import AuthenticatedHttpRequest, get_duel_for_user, get_match_for_user, is_owner
from reads.llm import (
    PlayerStats,
    conversations_jsonl,
    conversations_visible,
    duel_matches,
    llm_players,
    model_page,
)

#: Reads take ``auth.read`` (a ``read`` token, or none at all); writes (registering and
#: changing players) a ``submit`` token.
router = auth.ArenaRouter(tags=["LLM players"])

JSONL = "application/x-ndjson"
_JSONL_RESPONSE = {
    "responses": {
        "200": {
            "description": "One JSON object per line and turn: `duel`, `match`, `step`, "
            "`player`, `model`, `harness_version`, `harness_hash` and the `turn` (every "
            "attempt's messages, raw answer, verdict, parsed action, tokens and latency).",
            "content": {JSONL: {"schema": {"type": "string"}}},
        }
    }
}

#: What the schema says of a base URL; the server checks it further (a valid host).
URL_PATTERN = r"^https?://[^\s/?#]+\S*$"
#: A model's name as registered: printable characters.
ModelName = Annotated[
    str, Field(min_length=1, max_length=MODEL_NAME_MAX, pattern=MODEL_NAME_PATTERN)
]
Temperature = Annotated[float, Field(ge=TEMPERATURE_RANGE[0], le=TEMPERATURE_RANGE[1])]
TopP = Annotated[float, Field(ge=TOP_P_RANGE[0], le=TOP_P_RANGE[1])]
MaxTokens = Annotated[int, Field(ge=MAX_TOKENS_RANGE[0], le=MAX_TOKENS_RANGE[1])]
Timeout = Annotated[float, Field(ge=REQUEST_TIMEOUT_RANGE[0], le=REQUEST_TIMEOUT_RANGE[1])]
Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
HarnessVersion = Literal[SUPPORTED_HARNESS_VERSIONS]  # type: ignore[valid-type]
ApiKey = Annotated[str, Field(max_length=1000, pattern=PRINTABLE)]
ApiKeyRef = Annotated[str, Field(max_length=300)]


def _checked_url(url: str | None) -> str | None:
    if url is None:
        return None
    if any(ord(character) < 32 or ord(character) == 127 for character in url):
        raise ValueError("the URL holds control characters")
    try:
        URLValidator(schemes=["http", "https"])(url)
    except DjangoValidationError:
        raise ValueError("not an http:// or https:// URL") from None
    return url


def _checked_reference(reference: str | None) -> str | None:
    if reference and not SECRET_REF_PATTERN.match(reference):
        raise ValueError(f"write {SECRET_REF_HELP}")
    return reference


# --- schemas ------------------------------------------------------------------------


class _Settings(Schema):
    @field_validator("base_url", check_fields=False)
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _checked_url(value)

    @field_validator("api_key_ref", check_fields=False)
    @classmethod
    def _reference(cls, value: str | None) -> str | None:
        return _checked_reference(value)


class LLMPlayerIn(_Settings):
    environment: Slug = Field(description="The environment's name, e.g. `tic_tac_toe`.")
    name: Slug = Field(description="Its name on the leaderboard (letters, digits, - and _).")
    base_url: str = Field(
        max_length=500,
        pattern=URL_PATTERN,
        description="An OpenAI-compatible base URL (http or https), e.g. "
        "`http://127.0.0.1:8000/v1`.",
    )
    model: ModelName = Field(description="The model's name, as its server knows it.")
    api_key: ApiKey = Field("", description="Stored encrypted; never shown back.")
    api_key_ref: ApiKeyRef = Field(
        "", description=f"Instead of a key: {SECRET_REF_HELP}, read when it plays."
    )
    temperature: Temperature | None = None
    top_p: TopP | None = None
    max_tokens: MaxTokens = 512
    seed: Seed | None = None
    request_timeout: Timeout = Field(60.0, description="Seconds one request may take.")
    harness_version: HarnessVersion | None = Field(None, description="The newest by default.")
    public: bool = Field(
        PUBLIC_BY_DEFAULT,
        description="Whether anyone may see it and its settings (never its key); its "
        "conversations too once its owner shares its logs (`share_logs`). Private by "
        "default, as every competitor.",
    )


class LLMPlayerPatch(_Settings):
    """Only what is sent changes; a change of what plays makes a new revision."""

    base_url: str | None = Field(None, max_length=500, pattern=URL_PATTERN)
    model: ModelName | None = None
    api_key: ApiKey | None = Field(None, description="A new key; absent or empty keeps it.")
    api_key_ref: ApiKeyRef | None = Field(None, description="Empty drops the reference.")
    temperature: Temperature | None = None
    top_p: TopP | None = None
    max_tokens: MaxTokens | None = None
    seed: Seed | None = None
    request_timeout: Timeout | None = None
    harness_version: HarnessVersion | None = None
    public: bool | None = None


class LLMPlayerOut(Schema):
    id: int
    environment: str = Field(alias="environment.name")
    name: str
    owner: str = Field(alias="owner.display_name")
    public: bool = Field(alias="is_public")
    is_disabled: bool
    #: Its current version (revision); each change of what plays makes one.
    version: int
    base_url: str = Field(alias="llm.base_url")
    model: str = Field(alias="llm.model")
    temperature: float | None = Field(alias="llm.temperature")
    top_p: float | None = Field(alias="llm.top_p")
    max_tokens: int = Field(alias="llm.max_tokens")
    seed: int | None = Field(alias="llm.seed")
    request_timeout: float = Field(alias="llm.request_timeout")
    harness_version: str = Field(alias="llm.harness_version")
    #: Where its key comes from: `stored` (encrypted), `reference` (a secret of the
    #: workers) or `none`. The key itself is never shown.
    key: Literal["stored", "reference", "none"]
    price_input_per_million: float = Field(alias="llm.price_input_per_million")
    price_output_per_million: float = Field(alias="llm.price_output_per_million")
    created_at: datetime

    @staticmethod
    def resolve_version(competitor: Competitor) -> int:
        return competitor.latest_version or 0  # type: ignore[attr-defined]

    @staticmethod
    def resolve_key(competitor: Competitor) -> str:
        player: LLMPlayer = competitor.llm
        if player.api_key_ref:
            return "reference"
        return "stored" if player.api_key_encrypted else "none"


class PlayerStatsOut(Schema):
    """An LLM player's record with one model in one environment (``reads.llm``)."""

    environment: str
    player: str = Field(alias="name")
    games: int
    wins: int
    losses: int
    draws: int
    #: Matches lost by a fault charged to it.
    forfeits: int
    moves: int
    #: Answers asked of the model, retries included.
    requests: int
    illegal: int
    unparseable: int
    too_long: int
    #: Shares of its answers.
    illegal_share: float
    unparseable_share: float
    retries: int
    provider_retries: int
    prompt_tokens: int
    completion_tokens: int
    median_latency_ms: float | None
    #: Its tokens at the organizers' prices per million tokens.
    cost: float


class ModelStatsOut(Schema):
    model: str
    games: int
    wins: int
    losses: int
    draws: int
    players: list[PlayerStatsOut]


class ConversationOut(Schema):
    player: int
    competitor: str | None
    model: str
    harness_version: str
    harness_hash: str
    moves: int
    requests: int
    illegal: int
    unparseable: int
    too_long: int
    retries: int
    provider_retries: int
    prompt_tokens: int
    completion_tokens: int
    latencies_ms: list[float]
    forfeited: bool
    #: Every move's attempts: messages, raw answer, verdict, parsed action, tokens, latency.
    turns: list[dict[str, Any]]

    @staticmethod
    def resolve_competitor(conversation: MatchConversation) -> str | None:
        competitor = conversation.competitor
        return competitor.name if competitor else None


# --- helpers --------------------------------------------------------------------------


class LLMPlayerFilters(FilterSchema):
    environment: Annotated[Slug | None, FilterLookup("environment__name")] = None
    model: Annotated[ModelName | None, FilterLookup("llm__model")] = None


def _players(request: HttpRequest) -> QuerySet[Competitor]:
    return llm_players(user=request.user).annotate(latest_version=Max("revisions__version"))


def _visible_player(request: HttpRequest, player_id: int) -> Competitor:
    competitor = _players(request).filter(pk=player_id).first()
    if competitor is None:
        raise Http404(f"No LLM player with id {player_id}.")
    return competitor


def _jsonl(lines: Any) -> HttpResponse:
    return HttpResponse(b"".join(lines), content_type=JSONL)


# --- players --------------------------------------------------------------------------


@router.post("/llm/players", auth=auth.submit, response=documented({201: LLMPlayerOut}, 400, 404))
def llm_player_create(
    request: AuthenticatedHttpRequest, payload: LLMPlayerIn
) -> Status[Competitor]:
    """Register an LLM player

    A competitor whose moves a model chooses, prompted by Arena's harness through its
    OpenAI-compatible server. It plays in ladders and tournaments like any agent; nothing is
    uploaded, built or self-played.
    """
    environment = environment_named(payload.environment)
    if payload.api_key and payload.api_key_ref:
        raise _invalid("give api_key or api_key_ref, not both")
    competitor = llm_player_register(
        owner=request.user,
        environment=environment,
        name=payload.name,
        is_public=payload.public,
        **llm_settings(payload.dict()),
    )
    return Status(201, _visible_player(request, competitor.pk))


def _invalid(message: str) -> HttpError:
    return HttpError(422, message[0].upper() + message[1:] + ".")


@router.get("/llm/players", auth=auth.read, response=documented({200: list[LLMPlayerOut]}))
@paginated
def llm_players_list(
    request: HttpRequest, filters: Query[LLMPlayerFilters], mine: bool = False
) -> QuerySet[Competitor]:
    """LLM players you may see

    Public ones and your own; every one for organizers.
    """
    players = _players(request)
    if mine:
        players = (
            players.filter(owner=request.user) if isinstance(request.user, User) else players.none()
        )
    return filters.filter(players)


@router.get(
    "/llm/players/{player_id}", auth=auth.read, response=documented({200: LLMPlayerOut}, 404)
)
def llm_player_detail(request: HttpRequest, player_id: Id) -> Competitor:
    """One LLM player"""
    return _visible_player(request, player_id)


@router.patch(
    "/llm/players/{player_id}", auth=auth.submit, response=documented({200: LLMPlayerOut}, 400, 404)
)
def llm_player_change(
    request: AuthenticatedHttpRequest, player_id: Id, payload: LLMPlayerPatch
) -> Competitor:
    """Change one of your LLM players

    A change of what plays (server, model, sampling, limits, harness version, key) makes a
    new version, whose leaderboard entry starts afresh.
    """
    competitor = _visible_player(request, player_id)
    if not is_owner(request.user, competitor):
        raise Http404(f"You have no LLM player with id {player_id}.")
    changes = payload.dict(exclude_unset=True)
    if changes.get("api_key") and changes.get("api_key_ref"):
        raise _invalid("give api_key or api_key_ref, not both")
    if "public" in changes:
        changes["is_public"] = changes.pop("public")
    for required in ("base_url", "model", "max_tokens", "request_timeout", "harness_version"):
        if required in changes and changes[required] is None:
            raise _invalid(f"{required} may not be null")
    llm_player_update(competitor=competitor, changed_by=request.user, **changes)
    return _visible_player(request, player_id)


# --- statistics ------------------------------------------------------------------------


@router.get(
    "/llm/models/{path:model}", auth=auth.read, response=documented({200: ModelStatsOut}, 404)
)
def llm_model_stats(request: HttpRequest, model: ModelName) -> dict[str, Any]:
    """A model's statistics, per environment and player

    From the conversations of every match its players played: games, wins, losses, draws,
    shares of illegal and unparseable answers, retries, forfeits, tokens, median latency and
    cost (at the organizers' prices). The same numbers as the site's page of the model.
    """
    page = model_page(user=request.user, model=model)
    if page.summary is None and not LLMPlayer.objects.filter(model=model).exists():
        raise Http404(f"No LLM player plays a model named {model!r}.")
    summary = page.summary
    return {
        "model": model,
        "games": summary.games if summary else 0,
        "wins": summary.wins if summary else 0,
        "losses": summary.losses if summary else 0,
        "draws": summary.draws if summary else 0,
        "players": [_stats_out(entry) for entry in page.stats],
    }


def _stats_out(entry: PlayerStats) -> dict[str, Any]:
    fields = set(PlayerStatsOut.model_fields) - {"player", "cost"}
    return {
        **{name: getattr(entry, name) for name in fields},
        "name": entry.name,
        "cost": float(entry.cost),
    }


# --- conversations ---------------------------------------------------------------------

MATCH = "/duels/{duel_id}/matches/{index}"


@router.get(
    f"{MATCH}/conversations", auth=auth.read, response=documented({200: list[ConversationOut]}, 404)
)
@paginated
def match_conversations(
    request: HttpRequest, duel_id: Id, index: Number
) -> QuerySet[MatchConversation]:
    """A match's LLM conversations, by player

    For each LLM seat whose logs you may read (its conversations are its agent's log), every
    request and answer of every move.
    """
    match = get_match_for_user(request.user, duel_id, index)
    return conversations_visible(request.user, match)


@router.get(
    f"{MATCH}/conversations.jsonl",
    response=documented({}, 404),
    auth=auth.read,
    openapi_extra=_JSONL_RESPONSE,
)
def match_conversations_jsonl(request: HttpRequest, duel_id: Id, index: Number) -> HttpResponse:
    """A match's LLM conversations, as JSON lines"""
    match = get_match_for_user(request.user, duel_id, index)
    return _jsonl(conversations_jsonl(user=request.user, matches=[match]))


@router.get(
    "/duels/{duel_id}/conversations.jsonl",
    response=documented({}, 404),
    auth=auth.read,
    openapi_extra=_JSONL_RESPONSE,
)
def duel_conversations_jsonl(request: HttpRequest, duel_id: Id) -> HttpResponse:
    """A duel's LLM conversations, as JSON lines"""
    duel = get_duel_for_user(request.user, duel_id)
    matches = list(duel_matches(duel))
    for match in matches:
        match.duel = duel
    return _jsonl(conversations_jsonl(user=request.user, matches=matches))
