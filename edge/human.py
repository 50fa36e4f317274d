"""A person's seat, driven by their browser: the page's two endpoints.

The site drives the seat exactly as an online agent's client drives its own
(``sandboxes.seat_gateway``): one stream of the seat's events, one request per reply.
The browser is authenticated by its session cookie, and a reply also by Django's CSRF
token (the ``X-CSRFToken`` header); never by a token in a URL. A reply is checked before
it reaches the referee: it must answer what the referee waits for, and an action must be
one of the legal actions it was offered (a person's misclick is refused, not charged).

- ``GET /api/v1/online/human/{duel}/events``: server-sent events, one per message of the
  seat (``docs/protocol.md``: ``duel``, ``hello``, ``start``, ``act``, ``end``, ``bye``)
  with its ``seq`` as the event's ``id`` (a browser resumes after it by itself). Each
  ``act`` also carries ``choices`` (every legal action with its text and its ``parts``,
  what it means on the board) and ``view`` (the person's board, drawn from their own
  observation: ``Environment.observation_view``); an ``end``, the final ``view``.
- ``POST /api/v1/online/human/{duel}/reply``: the reply line, ``{"type": "ready"}`` or
  ``{"type": "action", "id": N, "action": A}``; 202 when handed to the referee.
- ``POST /api/v1/online/human/{duel}/resign``: the person gives the game up, whenever it
  is (``SeatBus.resign``); ``.../abort``: a game the person has not moved in yet is
  cancelled, with no result (``human_game_abort``).

Each game has a seat of its own on the bus (``Competitor.seat_in``): two games at once,
in two tabs, never see or answer each other's requests.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable
from typing import Any

import orjson
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from api.errors import error_body, retry_after_header
from api.presence import presence_start
from api.rates import rate_wait
from core.models import Duel, DuelSeat, DuelStatus, User
from core.services.human import human_duel_seat, human_game_abort, human_opponent
from core.services.online import seat_bus
from environments.base import Environment
from environments.registry import make_environment
from reads.human import faults_in_words
from reads.replays import show_action
from sandboxes.seat_gateway import ReplyRefused, event_lines, reply_parse, reply_submit, seq_check


def _refusal(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status)


def _too_many(user: User) -> JsonResponse | None:
    """A 429 past ``ARENA_ONLINE_RATE`` requests of this user's page, as for a model."""
    wait = rate_wait("ARENA_ONLINE_RATE", f"human:{user.pk}")
    if wait is None:
        return None
    response = _refusal(429, "rate_limited", f"Too many requests. Retry in {wait:.0f} s.")
    response["Retry-After"] = retry_after_header(wait)
    return response


def _seat_of(user: User, duel_id: int) -> tuple[DuelSeat, Duel] | None:
    duel = Duel.objects.with_seats().filter(pk=duel_id).first()
    if duel is None:
        return None
    seat = human_duel_seat(user=user, duel=duel)
    return None if seat is None else (seat, duel)


def _bus_seat(seat: DuelSeat, duel: Duel) -> str:
    return seat.revision.competitor.seat_in(duel.pk)


_NOT_YOURS = "There is no game {} of yours: start one from an agent's page."
_LOG_IN = "Log in to play: this uses your session on the site."


def _with_choices(message: dict[str, Any], game: Environment, player: int) -> dict[str, Any]:
    """An ``act`` (or ``end``) with what the page draws: ``view``, the person's board from
    their own observation alone, and ``choices``, each legal action with its text and what
    it means on that board (``Environment.choice_parts``)."""
    legal = list(message.get("legal_actions") or [])
    observation = message.get("observation")
    seen = observation if isinstance(observation, dict) else {}
    parts = game.choice_parts(seen, player, legal) if seen else [{} for _action in legal]
    choices: dict[tuple[str, bytes], dict[str, Any]] = {}
    for action, part in zip(legal, parts, strict=True):
        text = game.describe_action(action)
        # One button a move: two actions the game names and draws alike are one move to a
        # person (OpenSpiel's backgammon has an id for each order of the dice; both lead to
        # the same position), and the first of them is played.
        key = (text, orjson.dumps(part, option=orjson.OPT_SORT_KEYS))
        choices.setdefault(key, {"action": action, "text": text, "parts": part})
    message["choices"] = list(choices.values())
    if seen:
        message["view"] = game.observation_view(seen, player)
    return message


async def _human_lines(
    seat: str, environment: str, after: str | None, you: int, opponent: str
) -> AsyncGenerator[bytes, None]:
    game = make_environment(environment)
    player = 0
    # This gateway counts as alive while the person is away (a reloaded page comes back).
    presence_start()
    yield b"retry: 2000\n\n"
    async for chunk in event_lines(
        seat_bus(), seat, after=after, max_seconds=settings.ARENA_ONLINE_STREAM_SECONDS
    ):
        out = []
        for line in chunk.splitlines():
            message = orjson.loads(line)
            kind = message.get("type")
            if kind == "ping":
                out.append(b": ping\n\n")
                continue
            if kind == "start":
                player = int(message.get("player", 0))
            if kind in ("act", "end"):
                message = _with_choices(message, game, player)
            if kind == "end":
                message["words"] = faults_in_words(message.get("faults") or [], you, opponent)
            head = f"id: {message['seq']}\n".encode() if "seq" in message else b""
            out.append(head + b"data: " + orjson.dumps(message) + b"\n\n")
        yield b"".join(out)


async def human_events(request: HttpRequest, pk: int) -> HttpResponseBase:
    if request.method != "GET":
        response = _refusal(405, "method_not_allowed", "Use GET here.")
        response["Allow"] = "GET"
        return response
    user = await request.auser()
    if not user.is_authenticated:
        return _refusal(401, "unauthorized", _LOG_IN)
    limited = await sync_to_async(_too_many)(user)
    if limited is not None:
        return limited
    found = await sync_to_async(_seat_of)(user, pk)
    if found is None:
        return _refusal(404, "not_found", _NOT_YOURS.format(pk))
    seat, duel = found
    try:
        after = seq_check(request.headers.get("Last-Event-ID") or None)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    opponent = str(human_opponent(duel).revision)
    stream = StreamingHttpResponse(
        _human_lines(_bus_seat(seat, duel), duel.environment.game, after, seat.number, opponent),
        content_type="text/event-stream",
    )
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return stream


async def _offered(seat: str, key: str) -> list[Any] | None:
    """The legal actions of the ``act`` the reply ``key`` answers, if it is in the seat's
    current duel."""
    bus = seat_bus()
    events = await bus.events_after(seat, await bus.start_point(seat), 0)
    for _seq, line in reversed(events):
        message = orjson.loads(line)
        if message.get("type") == "act" and f"act:{message.get('id')}" == key:
            return list(message.get("legal_actions") or [])
    return None


def _same(action: Any, legal: list[Any]) -> bool:
    wanted = orjson.dumps(action, option=orjson.OPT_SORT_KEYS)
    return any(orjson.dumps(item, option=orjson.OPT_SORT_KEYS) == wanted for item in legal)


async def _submit(seat: str, body: bytes) -> str:
    key, line = reply_parse(body)
    reply = orjson.loads(line)
    if reply.get("type") == "action":
        legal = await _offered(seat, key)
        if legal is not None and not _same(reply["action"], legal):
            raise ReplyRefused(
                400,
                "illegal_action",
                f"{show_action(reply['action'])[:80]} is not one of the moves offered: "
                "choose one of them.",
            )
    return await reply_submit(seat_bus(), seat, body)


def _posted_game(request: HttpRequest, pk: int) -> tuple[DuelSeat, Duel] | JsonResponse:
    """The person's seat and game a page's POST is about, or the refusal to answer: wrong
    method, no session, too many requests, no CSRF token, not their game."""
    if request.method != "POST":
        response = _refusal(405, "method_not_allowed", "Use POST here.")
        response["Allow"] = "POST"
        return response
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        return _refusal(401, "unauthorized", _LOG_IN)
    limited = _too_many(user)
    if limited is not None:
        return limited
    # process_view reads only the view's csrf_exempt flag: None is a view without it (the
    # views have it from _game_post, for the check to happen here).
    csrf = CsrfViewMiddleware(HttpResponse).process_view(request, None, (), {})  # type: ignore[arg-type]
    if csrf is not None:
        return _refusal(
            403,
            "forbidden",
            "The CSRF check failed: send the page's token in the X-CSRFToken header.",
        )
    found = _seat_of(user, pk)
    if found is None:
        return _refusal(404, "not_found", _NOT_YOURS.format(pk))
    return found


def _game_post(
    view: Callable[[HttpRequest, DuelSeat, Duel], HttpResponse],
) -> Callable[[HttpRequest, int], HttpResponse]:
    """A page's POST about the person's own game: ``view`` gets their seat and the game
    once ``_posted_game``'s checks pass; a failed one is answered in JSON."""

    @csrf_exempt  # checked in _posted_game, to answer a failure in JSON
    @functools.wraps(view)
    def checked(request: HttpRequest, pk: int) -> HttpResponse:
        found = _posted_game(request, pk)
        if isinstance(found, JsonResponse):
            return found
        seat, duel = found
        return view(request, seat, duel)

    return checked


@_game_post
def human_reply(request: HttpRequest, seat: DuelSeat, duel: Duel) -> HttpResponse:
    try:
        accepted = async_to_sync(_submit)(_bus_seat(seat, duel), request.body)
    except ReplyRefused as refused:
        return _refusal(refused.status, refused.code, refused.message)
    return JsonResponse({"accepted": accepted}, status=202)


@_game_post
def human_resign(request: HttpRequest, seat: DuelSeat, duel: Duel) -> HttpResponse:
    if not async_to_sync(seat_bus().resign)(_bus_seat(seat, duel)):
        return _refusal(409, "not_playing", "This game is not being played: nothing to resign.")
    return JsonResponse({"resigned": True}, status=202)


async def _moved(seat: str) -> bool:
    """Whether the person has answered a request to move in the seat's current game."""
    bus = seat_bus()
    pending = set(await bus.pending(seat))
    events = await bus.events_after(seat, await bus.start_point(seat), 0)
    for _seq, line in events:
        message = orjson.loads(line)
        if message.get("type") == "act" and f"act:{message.get('id')}" not in pending:
            return True
    return False


@_game_post
def human_abort(request: HttpRequest, seat: DuelSeat, duel: Duel) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    bus_seat = _bus_seat(seat, duel)
    if duel.status == DuelStatus.RUNNING and async_to_sync(_moved)(bus_seat):
        return _refusal(
            409, "already_moved", "You have moved already: resign instead, to end the game."
        )
    if not human_game_abort(user=user, duel=duel):
        return _refusal(409, "not_playing", "This game is over already: nothing to abort.")
    # A referee playing it already stops at once (it could no longer record it anyway).
    async_to_sync(seat_bus().resign)(bus_seat)
    return JsonResponse({"aborted": True}, status=202)
