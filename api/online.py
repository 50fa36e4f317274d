"""Online play (``/api/v1/online/``): agents that connect over the network.

Two kinds of token. With a user token that has the ``play`` scope, register a model for
an environment (its name on the leaderboard) and get a **model token**, which speaks for
that model alone. With the model token, the client joins the queue, holds the stream of
events (``GET /online/events``, newline-delimited JSON; or long-polls ``/online/next``),
and answers each request of the referee with one ``POST /online/reply`` carrying the
protocol's reply (``docs/protocol.md``). The clocks are the server's; see
``sandboxes/remote.py`` for the network allowance, the grace period and what leaving costs.

The stream and the replies, one per move, are served by ``edge.gateway`` in front of
Django; the views here are async too: the gateway (``manage.py run_gateway``, an ASGI
server) holds thousands of idle clients on one event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Max
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Field, Query, Schema
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.responses import Status

from api import auth
from api.auth import ArenaRouter
from api.environments import environment_named
from api.errors import documented, error_body
from api.online_docs import SEQ_DESCRIPTION
from api.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, Pagination
from api.params import Slug
from api.presence import presence_seen, stopped_refusal
from api.tokens import Holder, poll_connection, token_checks
from core.errors import ArenaError
from core.models import Competitor, OnlineSeat, Revision
from core.models.submissions import PUBLIC_BY_DEFAULT
from core.services.online import (
    model_token_create,
    online_duels_played,
    online_model_register,
    online_present,
    online_queue_join,
    online_queue_leave,
    online_revision_create,
    running_ladders,
    seat_bus,
)
from reads.access import AuthenticatedHttpRequest
from sandboxes.seat_bus import SEQ_PATTERN
from sandboxes.seat_gateway import ReplyRefused, seq_check

router = ArenaRouter(tags=["online play"])

#: The longest a long poll (``/online/next``) may wait.
MAX_POLL_SECONDS = 60


def _holder(request: HttpRequest) -> Holder:
    holder: Holder = request.holder  # type: ignore[attr-defined]
    return holder


# --- schemas ------------------------------------------------------------------------------


class ModelIn(Schema):
    environment: Slug = Field(description="The environment's name, e.g. `connect_four`.")
    name: Slug = Field(
        description="The model's name on the leaderboard (letters, digits, - and _)."
    )
    public: bool = Field(
        PUBLIC_BY_DEFAULT,
        description="Whether anyone may see the model's page (its name, results and replays "
        "in public tournaments show either way). Private by default, as every competitor.",
    )


class ModelOut(Schema):
    """An online competitor and its queue entry (made by ``_model_out``)."""

    environment: str
    name: str
    version: int = Field(description="Its current version (revision).")
    public: bool
    queued: bool = Field(description="In the matchmaking queue.")
    connected: bool = Field(
        description="A client of it holds the event stream now (or long-polled in the last "
        "15 s): only then is it paired."
    )
    duels_played: int = Field(description="Duels it has played to the end.")


class PagedModelOut(Schema):
    count: int
    next: str | None
    previous: str | None
    items: list[ModelOut]


def _seat_of(competitor: Competitor) -> OnlineSeat | None:
    return getattr(competitor, "online_seat", None)


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
    message: str = Field(description="Where the model stands, and what it waits for, in words.")
    duel: DuelState | None
    evaluation: DuelState | None = Field(
        None, description="The score competition's evaluation it plays, if any (not a duel)."
    )
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


# --- helpers -------------------------------------------------------------------------------


def _refusal(status: int, code: str, message: str) -> HttpResponse:
    return HttpResponse(
        _json(error_body(code, message)), status=status, content_type="application/json"
    )


def _json(value: object) -> bytes:
    return orjson.dumps(value)


def _models_out(competitors: list[Competitor]) -> list[ModelOut]:
    present = online_present(competitors)
    played = online_duels_played(competitors)
    versions = dict(
        Revision.objects.filter(competitor__in=competitors)
        .order_by()
        .values_list("competitor")
        .annotate(latest=Max("version"))
    )
    out = []
    for competitor in competitors:
        seat = _seat_of(competitor)
        out.append(
            ModelOut(
                environment=competitor.environment.name,
                name=competitor.name,
                version=versions.get(competitor.pk, 0),
                public=competitor.is_public,
                queued=bool(seat and seat.is_queued),
                connected=competitor.pk in present,
                duels_played=played[competitor.pk],
            )
        )
    return out


def _model_out(competitor: Competitor) -> ModelOut:
    return _models_out([competitor])[0]


def _own_model(request: AuthenticatedHttpRequest, environment: str, name: str) -> Competitor:
    competitor = (
        Competitor.objects.select_related("environment")
        .filter(environment__name=environment, name=name, owner=request.user, kind="online")
        .first()
    )
    if competitor is None:
        raise Http404(f"You have no online model named {name!r} in {environment!r}.")
    return competitor


def _competitor_and_seat(competitor_id: int) -> tuple[Competitor, OnlineSeat]:
    competitor = Competitor.objects.select_related("environment", "online_seat").get(
        pk=competitor_id
    )
    seat = _seat_of(competitor)
    if seat is None:
        seat = competitor.online_seat = OnlineSeat.objects.create(competitor=competitor)
    return competitor, seat


# --- registering models (user tokens) -------------------------------------------------------

#: One of your models, in the paths of its operations.
MODEL = "/models/{environment}/{name}"


@router.post("/models", auth=auth.models, response=documented({201: ModelRegistered}, 400, 404))
def model_register(request: AuthenticatedHttpRequest, payload: ModelIn) -> Status[ModelRegistered]:
    """Register an online model and get its token"""
    competitor, secret = online_model_register(
        owner=request.user,
        environment=environment_named(payload.environment),
        name=payload.name,
        is_public=payload.public,
    )
    return Status(
        201,
        ModelRegistered(model=_model_out(competitor), token=secret),
    )


@router.get("/models", auth=auth.models, response=documented({200: PagedModelOut}))
def models_list(
    request: AuthenticatedHttpRequest,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> dict[str, Any]:
    """Your models"""
    models = (
        Competitor.objects.filter(owner=request.user, kind="online")
        .select_related("environment", "online_seat")
        .order_by("environment__name", "name", "pk")
    )
    page = Pagination().paginate_queryset(
        models, Pagination.Input(limit=limit, offset=offset), request
    )
    return {**page, "items": _models_out(list(page["items"]))}


@router.post(f"{MODEL}/tokens", auth=auth.models, response=documented({201: TokenOut}, 404))
def model_token_new(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug
) -> Status[TokenOut]:
    """Another token for one of your models"""
    competitor = _own_model(request, environment, name)
    count = competitor.model_tokens.count() + 1
    _, secret = model_token_create(competitor=competitor, name=f"{name} model token {count}")
    return Status(201, TokenOut(token=secret))


@router.post(f"{MODEL}/versions", auth=auth.models, response=documented({201: ModelOut}, 404))
def model_version_new(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug
) -> Status[ModelOut]:
    """A new version of one of your models

    Say that the model changed: its leaderboard entry starts afresh, as after an upload; its
    ratings carry on.
    """
    competitor = _own_model(request, environment, name)
    online_revision_create(competitor=competitor, created_by=request.user)
    return Status(201, _model_out(competitor))


# --- playing (model tokens) ------------------------------------------------------------------


def _state(*, playing: bool, queued: bool, connected: bool, ladders: list[str]) -> tuple[str, str]:
    if playing:
        return "playing", "Playing a duel: answer each request on the event stream."
    if not queued:
        return "idle", "Not in the queue: join it (POST /api/v1/online/queue) to be paired."
    if not ladders:
        return "queued", "In the queue, but no ladder runs in this environment now."
    if not connected:
        return "queued", (
            "In the queue, but not connected, so it is not paired: hold the event stream "
            "open (GET /api/v1/online/events), or long-poll /api/v1/online/next."
        )
    return "queued", "In the queue and connected: it is paired as soon as an opponent is free."


async def _status(holder: Holder) -> StatusOut:
    assert holder.competitor_id is not None
    competitor, _ = await sync_to_async(_competitor_and_seat)(holder.competitor_id)
    bus = seat_bus()
    duel = await bus.current_duel(holder.seat)
    ladders = [
        ladder.name for ladder in await sync_to_async(running_ladders)(competitor.environment)
    ]
    model = await sync_to_async(_model_out)(competitor)
    state, message = _state(
        playing=duel is not None, queued=model.queued, connected=model.connected, ladders=ladders
    )
    if duel is not None and duel.evaluation is not None:
        message = "Playing an evaluation: answer each request on the event stream."
    return StatusOut(
        model=model,
        state=state,
        message=message,
        duel=DuelState(id=duel.duel, first_seq=duel.first_seq)
        if duel and duel.duel is not None
        else None,
        evaluation=DuelState(id=duel.evaluation, first_seq=duel.first_seq)
        if duel and duel.evaluation is not None
        else None,
        pending=await bus.pending(holder.seat),
        ladders=ladders,
        last_seq=await bus.last_seq(holder.seat),
    )


@router.get("/status", auth=auth.play, response=documented({200: StatusOut}))
async def status(request: HttpRequest) -> StatusOut:
    """Where your model stands"""
    return await _status(_holder(request))


def _join(competitor_id: int) -> None:
    online_queue_join(
        competitor=Competitor.objects.select_related("environment").get(pk=competitor_id)
    )


@router.post("/queue", auth=auth.play, response=documented({200: StatusOut}, 409))
async def queue_join(request: HttpRequest) -> StatusOut | HttpResponse:
    """Join the matchmaking queue

    Your model is paired as soon as a good opponent is free, while its stream is open. 409
    when no ladder runs in its environment.
    """
    holder = _holder(request)
    try:
        await sync_to_async(_join)(holder.model_id)
    except ArenaError as error:
        return _refusal(409, "no_ladder", error.message)
    return await _status(holder)


@router.delete("/queue", auth=auth.play_unrated, response=documented({200: StatusOut}))
async def queue_leave(request: HttpRequest) -> StatusOut:
    """Leave the matchmaking queue

    No new duel starts; a duel in play goes on, and leaving it loses it. Never refused for
    the request rate, so that a client can always stop.
    """
    holder = _holder(request)
    competitor = await sync_to_async(Competitor.objects.get)(pk=holder.competitor_id)
    await sync_to_async(online_queue_leave)(competitor=competitor)
    return await _status(holder)


@router.get("/next", auth=auth.play, response=documented({200: EventsOut}, 400))
async def events_next(
    request: HttpRequest,
    after: str | None = Query(
        None, pattern=f"^{SEQ_PATTERN.pattern}$", description=SEQ_DESCRIPTION
    ),
    wait: float = Query(25.0, ge=0, le=MAX_POLL_SECONDS),
) -> EventsOut | HttpResponse:
    """The next events (long poll)

    For clients that cannot hold a stream: the events after `after` (or, without it, as the
    stream would start), waiting up to `wait` seconds for one (at most the server's
    `ARENA_ONLINE_POLL_SECONDS`, 60 by default). Your model counts as connected during a
    poll and for 15 s after it. A poll whose token stops playing (revoked, its model
    disabled or deleted) is answered 401 within a second.
    """
    holder = _holder(request)
    try:
        cursor = seq_check(after)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    bus = seat_bus()
    connection = poll_connection(holder)
    await bus.connection_open(holder.seat, connection)
    await presence_seen(holder)
    if cursor is None:
        cursor = await bus.start_point(holder.seat)
    waited = min(wait, settings.ARENA_ONLINE_POLL_SECONDS)
    async with token_checks().watch(holder.digest) as stopped:
        polled = asyncio.ensure_future(bus.events_after(holder.seat, cursor, waited))
        halted = asyncio.ensure_future(stopped.wait())
        try:
            await asyncio.wait({polled, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            halted.cancel()
            if not polled.done():
                polled.cancel()
            await asyncio.gather(polled, halted, return_exceptions=True)
    if stopped.is_set():
        # The token no longer plays: the model is absent from now on.
        await bus.connection_close(holder.seat, connection)
        stopped_by = stopped_refusal(holder)
        if stopped_by.status == 403:
            raise AuthorizationError(message=stopped_by.message)
        raise AuthenticationError(message=stopped_by.message)
    found = polled.result()
    events = []
    for seq, line in found:
        message = orjson.loads(line)
        events.append({"seq": seq, **message})
    return EventsOut(events=events, last_seq=found[-1][0] if found else cursor)
