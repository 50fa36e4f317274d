"""Online play (``/api/v1/online/``): agents that connect over the network.

Two kinds of token. With a user token that has the ``play`` scope, register a model for
an environment (its name on the leaderboard) and get a **model token**, which speaks for
that model alone. With the model token, the client joins the queue, holds the stream of
events (``GET /online/events``, newline-delimited JSON; or long-polls ``/online/next``),
and answers each request of the referee with one ``POST /online/reply`` carrying the
protocol's reply (``docs/protocol.md``). The clocks are the server's; see
``sandboxes/remote.py`` for the network allowance, the grace period and what leaving costs.

These views are async: the gateway (``manage.py run_gateway``, an ASGI server) holds
thousands of idle streams on one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_slug
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Field, Header, Query, Router, Schema
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, Throttled
from ninja.security import HttpBearer

from api import auth
from api.errors import error_body
from api.throttles import AnonymousThrottle, OnlineThrottle
from core.errors import ArenaError
from core.models import ApiToken, Competitor, Environment, OnlineSeat, TokenScope
from core.models.accounts import hash_token
from core.online import (
    model_token_create,
    online_model_register,
    online_queue_join,
    online_queue_leave,
    online_revision_create,
    online_seen,
    running_ladders,
    seat_bus,
)
from sandboxes.seat_gateway import (
    ReplyRefused,
    event_lines,
    reply_submit,
    seq_check,
)

router = Router(tags=["online play"])

#: How long a model token's check is reused: a revoked token stops working within this.
TOKEN_CACHE_SECONDS = 1.0
#: The longest a long poll (``/online/next``) may wait.
MAX_POLL_SECONDS = 60


# --- model tokens ------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSeat:
    """What a model token speaks for."""

    competitor_id: int
    seat: str
    token_id: int


def _model_seat(digest: str) -> ModelSeat | str:
    """The model a token speaks for, or why it speaks for none (a user-facing reason)."""
    token = (
        ApiToken.objects.active()
        .select_related("competitor")
        .filter(token_hash=digest, user__is_active=True)
        .first()
    )
    if token is None:
        return "unknown"
    if token.competitor is None:
        return "not a model token"
    if TokenScope.PLAY not in token.scope_set:
        return "no play scope"
    if token.competitor.is_disabled:
        return "disabled"
    return ModelSeat(token.competitor_id, token.competitor.seat, token.pk)


_checked: dict[str, tuple[float, ModelSeat | str]] = {}


class ModelTokenAuth(HttpBearer):
    """A model token (``Authorization: Bearer <token>``), checked at most once a second
    per token in each gateway process: every move is a request."""

    async def __call__(self, request: HttpRequest) -> ModelSeat:  # type: ignore[override]
        value = request.headers.get("Authorization", "")
        scheme, _, secret = value.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise AuthenticationError(
                message="This needs a model token: send 'Authorization: Bearer <token>'."
            )
        digest = hash_token(secret.strip())
        now = time.monotonic()
        cached = _checked.get(digest)
        if cached is None or cached[0] < now:
            # Each look-up is a query: a flood of made-up tokens is limited per address.
            misses = AnonymousThrottle()
            if not misses.allow_request(request):
                raise Throttled(wait=misses.wait())
            found = await sync_to_async(_model_seat)(digest)
            if len(_checked) > 10_000:
                _checked.clear()
            _checked[digest] = (now + TOKEN_CACHE_SECONDS, found)
            cached = _checked[digest]
        found = cached[1]
        if isinstance(found, ModelSeat):
            request.model_seat = found  # type: ignore[attr-defined]
            return found
        if found == "unknown":
            raise AuthenticationError(message="The token is unknown or revoked.")
        reasons = {
            "not a model token": "This is a user token; online play needs the model token "
            "you got when you registered the model (POST /api/v1/online/models).",
            "no play scope": "This token lacks the 'play' scope.",
            "disabled": "This model is disabled by the organizers.",
        }
        raise AuthorizationError(message=reasons[found])

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        raise NotImplementedError  # __call__ does the whole check


model_token = ModelTokenAuth()


def _seat(request: HttpRequest) -> ModelSeat:
    seat: ModelSeat = request.model_seat  # type: ignore[attr-defined]
    return seat


# --- presence ------------------------------------------------------------------------------

#: The models whose client holds a stream on this process, counted per stream.
_streaming: Counter[int] = Counter()
_presence_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
GATEWAY_NAME = f"{socket.gethostname()}:{os.getpid()}"


async def _presence_loop() -> None:
    """Tell the database who is connected (matchmaking reads it), and the seat bus that
    this gateway is alive, every third of the presence window."""
    bus = seat_bus()
    every = max(1.0, settings.ARENA_ONLINE_PRESENCE_SECONDS / 3)
    while True:
        with contextlib.suppress(Exception):
            await bus.gateway_heartbeat(GATEWAY_NAME)
            await sync_to_async(online_seen)(competitor_ids=list(_streaming))
        await asyncio.sleep(every)


def presence_start() -> None:
    """Start this event loop's presence task (the gateway does at start-up; a stream
    does if it was not)."""
    loop = asyncio.get_running_loop()
    task = _presence_tasks.get(loop)
    if task is None or task.done():
        _presence_tasks[loop] = loop.create_task(_presence_loop())


async def _stream(seat: ModelSeat, after: str | None) -> AsyncIterator[bytes]:
    presence_start()
    _streaming[seat.competitor_id] += 1
    try:
        await sync_to_async(online_seen)(competitor_ids=[seat.competitor_id])
        async for chunk in event_lines(seat_bus(), seat.seat, after=after):
            yield chunk
    finally:
        _streaming[seat.competitor_id] -= 1
        if _streaming[seat.competitor_id] <= 0:
            del _streaming[seat.competitor_id]


# --- schemas ------------------------------------------------------------------------------


class ModelIn(Schema):
    environment: str = Field(description="The environment's name, e.g. `connect_four`.")
    name: str = Field(
        min_length=1,
        max_length=64,
        description="The model's name on the leaderboard (letters, digits, - and _).",
    )
    public: bool = Field(True, description="Whether anyone may see the model and its games.")


class ModelOut(Schema):
    environment: str
    name: str
    version: int
    public: bool
    queued: bool
    connected: bool
    duels_played: int


class ModelRegistered(Schema):
    model: ModelOut
    token: str = Field(description="The model token: shown once, only its hash is kept.")


class TokenOut(Schema):
    token: str = Field(description="A new model token: shown once.")


class DuelState(Schema):
    id: int
    first_seq: str = Field(description="The seq of the duel's first event.")


class StatusOut(Schema):
    model: ModelOut
    state: str = Field(description="`idle` (not in the queue), `queued` or `playing`.")
    duel: DuelState | None
    pending: list[str] = Field(
        description="What the referee waits for: `ready`, or `act:<id>` for request <id>."
    )
    ladders: list[str] = Field(description="The running ladders the queue leads to.")
    last_seq: str | None


class EventsOut(Schema):
    events: list[dict[str, Any]] = Field(
        description="Events in order: the same lines as the stream's, parsed."
    )
    last_seq: str = Field(description="Send it back as `after` for the next events.")


class ReplyIn(Schema):
    type: str = Field(description="`ready`, `action` or `error`.")
    id: int | None = Field(None, description="The request answered (action, error).")
    action: Any = Field(None, description="One of the request's `legal_actions`.")
    message: str | None = Field(None, description="With `error`: what went wrong.")


class ReplyAccepted(Schema):
    accepted: str = Field(description="What was answered: `ready` or `act:<id>`.")


class Problem(Schema):
    code: str
    message: str
    details: list[Any]


class ErrorOut(Schema):
    error: Problem


ERRORS: dict[int, Any] = {code: ErrorOut for code in (400, 401, 403, 404, 409, 413, 422, 429)}


# --- helpers -------------------------------------------------------------------------------


def _refusal(status: int, code: str, message: str) -> HttpResponse:
    return HttpResponse(
        _json(error_body(code, message)), status=status, content_type="application/json"
    )


def _json(value: object) -> bytes:
    return orjson.dumps(value)


def _model_out(competitor: Competitor, seat: OnlineSeat | None) -> ModelOut:
    latest = competitor.revisions.order_by("-version").values_list("version", flat=True).first()
    return ModelOut(
        environment=competitor.environment.name,
        name=competitor.name,
        version=latest or 0,
        public=competitor.is_public,
        queued=bool(seat and seat.is_queued),
        connected=bool(seat and seat.is_connected()),
        duels_played=seat.duels_played if seat else 0,
    )


def _own_model(request: HttpRequest, environment: str, name: str) -> Competitor:
    competitor = (
        Competitor.objects.select_related("environment")
        .filter(environment__name=environment, name=name, owner=request.user, kind="online")
        .first()
    )
    if competitor is None:
        raise Http404(f"You have no online model named {name!r} in {environment!r}.")
    return competitor


def _competitor_and_seat(competitor_id: int) -> tuple[Competitor, OnlineSeat]:
    competitor = Competitor.objects.select_related("environment").get(pk=competitor_id)
    seat, _ = OnlineSeat.objects.get_or_create(competitor=competitor)
    return competitor, seat


# --- registering models (user tokens) -------------------------------------------------------


@router.post(
    "/models",
    auth=auth.play,
    response={201: ModelRegistered, **ERRORS},
    summary="Register an online model and get its token",
)
def model_register(request: HttpRequest, payload: ModelIn) -> tuple[int, ModelRegistered]:
    environment = Environment.objects.filter(name=payload.environment).first()
    if environment is None:
        raise Http404(f"No environment named {payload.environment!r}.")
    try:
        validate_slug(payload.name)
    except DjangoValidationError:
        raise HttpError(
            422, "A model's name may hold only letters, digits, hyphens and underscores."
        ) from None
    competitor, secret = online_model_register(
        owner=request.user, environment=environment, name=payload.name, is_public=payload.public
    )
    return 201, ModelRegistered(model=_model_out(competitor, competitor.online_seat), token=secret)


@router.get(
    "/models", auth=auth.play, response={200: list[ModelOut], **ERRORS}, summary="Your models"
)
def models_list(request: HttpRequest) -> list[ModelOut]:
    competitors = (
        Competitor.objects.filter(owner=request.user, kind="online")
        .select_related("environment", "online_seat")
        .order_by("environment__name", "name")
    )
    return [
        _model_out(competitor, getattr(competitor, "online_seat", None))
        for competitor in competitors
    ]


@router.post(
    "/models/{environment}/{name}/tokens",
    auth=auth.play,
    response={201: TokenOut, **ERRORS},
    summary="Another token for one of your models",
)
def model_token_new(request: HttpRequest, environment: str, name: str) -> tuple[int, TokenOut]:
    competitor = _own_model(request, environment, name)
    count = competitor.model_tokens.count() + 1
    _, secret = model_token_create(competitor=competitor, name=f"{name} model token {count}")
    return 201, TokenOut(token=secret)


@router.post(
    "/models/{environment}/{name}/versions",
    auth=auth.play,
    response={201: ModelOut, **ERRORS},
    summary="A new version of one of your models",
    description="Say that the model changed: its leaderboard entry starts afresh, as after "
    "an upload; its ratings carry on.",
)
def model_version_new(request: HttpRequest, environment: str, name: str) -> tuple[int, ModelOut]:
    competitor = _own_model(request, environment, name)
    online_revision_create(competitor=competitor, created_by=request.user)
    return 201, _model_out(competitor, getattr(competitor, "online_seat", None))


# --- playing (model tokens) ------------------------------------------------------------------


async def _status(seat: ModelSeat) -> StatusOut:
    competitor, online_seat = await sync_to_async(_competitor_and_seat)(seat.competitor_id)
    bus = seat_bus()
    duel = await bus.current_duel(seat.seat)
    ladders = await sync_to_async(running_ladders)(competitor.environment)
    model = await sync_to_async(_model_out)(competitor, online_seat)
    if duel is not None:
        state = "playing"
    elif online_seat.is_queued:
        state = "queued"
    else:
        state = "idle"
    return StatusOut(
        model=model,
        state=state,
        duel=DuelState(id=duel.duel, first_seq=duel.first_seq) if duel else None,
        pending=await bus.pending(seat.seat),
        ladders=[ladder.name for ladder in ladders],
        last_seq=await bus.last_seq(seat.seat),
    )


@router.get(
    "/status",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={200: StatusOut, **ERRORS},
    summary="Where your model stands",
)
async def status(request: HttpRequest) -> StatusOut:
    return await _status(_seat(request))


def _join(competitor_id: int) -> None:
    online_queue_join(
        competitor=Competitor.objects.select_related("environment").get(pk=competitor_id)
    )


@router.post(
    "/queue",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={200: StatusOut, **ERRORS},
    summary="Join the matchmaking queue",
    description="Your model is paired as soon as a good opponent is free, while its stream "
    "is open. 409 when no ladder runs in its environment.",
)
async def queue_join(request: HttpRequest) -> StatusOut | HttpResponse:
    seat = _seat(request)
    try:
        await sync_to_async(_join)(seat.competitor_id)
    except ArenaError as error:
        return _refusal(409, "no_ladder", error.message)
    return await _status(seat)


@router.delete(
    "/queue",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={200: StatusOut, **ERRORS},
    summary="Leave the matchmaking queue",
    description="No new duel starts; a duel in play goes on, and leaving it loses it.",
)
async def queue_leave(request: HttpRequest) -> StatusOut:
    seat = _seat(request)
    competitor = await sync_to_async(Competitor.objects.get)(pk=seat.competitor_id)
    await sync_to_async(online_queue_leave)(competitor=competitor)
    return await _status(seat)


STREAM_DOC = {
    "responses": {
        "200": {
            "description": "Newline-delimited JSON events, one object per line, for as long "
            "as the connection stays open: `welcome`, `duel`, the protocol's messages, "
            "`ping`.",
            "content": {
                "application/x-ndjson": {
                    "schema": {"type": "string", "description": "One JSON object per line."}
                }
            },
        }
    }
}


@router.get(
    "/events",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={**ERRORS},
    summary="The stream of events (newline-delimited JSON)",
    description="Hold it open while your model plays. Every event has a `seq`: after a "
    "drop, reconnect with `Last-Event-ID: <the last seq you handled>` and nothing is lost or "
    "repeated. Without it, you get the current duel from its beginning (answers to requests "
    "already answered are refused with 409, which a client may ignore).",
    openapi_extra=STREAM_DOC,
)
async def events(
    request: HttpRequest,
    last_event_id: str | None = Header(None, alias="Last-Event-ID"),
) -> HttpResponse:
    try:
        after = seq_check(last_event_id)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    response = StreamingHttpResponse(
        _stream(_seat(request), after), content_type="application/x-ndjson"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each line on at once
    return response


@router.get(
    "/next",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={200: EventsOut, **ERRORS},
    summary="The next events (long poll)",
    description="For clients that cannot hold a stream: the events after `after` (or, "
    "without it, as the stream would start), waiting up to `wait` seconds for one. Your "
    "model counts as connected for 15 s after each poll.",
)
async def events_next(
    request: HttpRequest,
    after: str | None = Query(None, max_length=41),
    wait: float = Query(25.0, ge=0, le=MAX_POLL_SECONDS),
) -> EventsOut | HttpResponse:
    seat = _seat(request)
    try:
        cursor = seq_check(after)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    bus = seat_bus()
    presence_start()
    await bus.connection_open(seat.seat, f"poll-{seat.token_id}")
    await sync_to_async(online_seen)(competitor_ids=[seat.competitor_id])
    if cursor is None:
        cursor = await bus.start_point(seat.seat)
    found = await bus.events_after(seat.seat, cursor, wait)
    events = []
    for seq, line in found:
        message = orjson.loads(line)
        events.append({"seq": seq, **message})
    return EventsOut(events=events, last_seq=found[-1][0] if found else cursor)


@router.post(
    "/reply",
    auth=model_token,
    throttle=[OnlineThrottle()],
    response={202: ReplyAccepted, **ERRORS},
    summary="Answer the referee",
    description="The protocol's reply, as the body: `ready` to a `hello`, `action` (or "
    "`error`) with the `id` of an `act`. 409 when the referee does not wait for that "
    "reply (out of turn, answered already, too late, no duel): nothing is changed.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": ReplyIn.model_json_schema()}},
        }
    },
)
async def reply(request: HttpRequest) -> tuple[int, ReplyAccepted] | HttpResponse:
    try:
        key = await reply_submit(seat_bus(), _seat(request).seat, request.body)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    return 202, ReplyAccepted(accepted=key)
