"""Who may call what: the one rule for every operation of the API and of the gateway.

A request comes from one of three kinds of caller:

- **anonymous** (no ``Authorization`` header): reads of what is public;
- a **user token** (made on the profile page): what its scopes allow, as its user:
  ``read`` (what the user may see), ``submit`` (uploads, deletions, LLM players),
  ``play`` (register and manage the user's online models);
- a **model token** (made when an online model is registered): it speaks for that one
  model. It plays it (``/api/v1/online/status``, ``queue``, ``next``, ``events``,
  ``reply``) and reads what the public may read; nothing else. It is the credential most
  likely to leak (it lives on whatever machine runs the model), so it can never act as
  its owner: register or change models, make tokens, upload.

Every operation declares one ``Access`` (``ArenaRouter`` refuses one that does not, so
that no operation is added without saying who may call it); ``refusal`` is the rule, and
both the Django operations and the gateway's own endpoints call it. Tokens go in the
``Authorization: Bearer`` header only; a token that is sent must be valid, so a typo
never silently turns a request anonymous. Only a token's hash is stored
(``core.models.ApiToken``); a revoked token is refused like an unknown one.

The rate each request counts against is decided here too (``api.rates``): per token
holder for tokens, per address for anonymous requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from ninja import Router
from ninja.constants import NOT_SET
from ninja.errors import AuthenticationError, AuthorizationError, Throttled
from ninja.security import HttpBearer

from api.rates import rate_wait, rate_wait_async
from core.models import ApiToken, TokenScope
from core.models.accounts import hash_token
from core.online import seat_bus

#: ``last_used_at`` is written at most this often per token (not on every request).
LAST_USED_PRECISION = timedelta(minutes=1)
#: How often every model token a gateway process holds a stream or a recent request of
#: is checked again (one query for all): a token revoked, or its model disabled or
#: deleted, stops working, and its streams close, within this.
TOKEN_RECHECK_SECONDS = 1.0
#: A token no request or stream has used for this long is forgotten by the process.
TOKEN_FORGET_SECONDS = 60.0


class Access(enum.Enum):
    """What an operation needs of its caller (the OpenAPI document says it as
    ``x-arena-access``)."""

    #: Anyone; a user token needs ``read``; a model token reads as the public does.
    READ = "read"
    #: A user token with ``submit``.
    SUBMIT = "submit"
    #: A user token with ``play``: register and manage one's online models.
    MODELS = "models"
    #: A model token: play its model.
    PLAY = "play"


@dataclass(frozen=True)
class Holder:
    """What a valid token speaks for."""

    token_id: int
    digest: str
    user_id: int
    scopes: frozenset[str]
    #: A model token's online competitor; None for a user token.
    competitor_id: int | None = None
    #: Its seat on the seat bus.
    seat: str = ""
    #: Its competitor is disabled by the organizers.
    disabled: bool = False

    @property
    def is_model(self) -> bool:
        return self.competitor_id is not None


class Refusal(Exception):
    """A request refused before it reached anything: status, stable code, message."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


# --- the rule -----------------------------------------------------------------------------

_SCOPE_NEEDED = {
    Access.READ: TokenScope.READ,
    Access.SUBMIT: TokenScope.SUBMIT,
    Access.MODELS: TokenScope.PLAY,
}
_USER_TOKEN_NEEDED = {
    Access.SUBMIT: "This needs a user token with the 'submit' scope: create one on your "
    "profile page and send 'Authorization: Bearer <token>'.",
    Access.MODELS: "This needs a user token with the 'play' scope: create one on your "
    "profile page and send 'Authorization: Bearer <token>'.",
}
MODEL_TOKEN_ONLY_PLAYS = (
    "A model token speaks for its model alone: it plays it (/api/v1/online/status, queue, "
    "next, events, reply) and reads what is public. For this, use a user token from your "
    "profile page."
)


def refusal(access: Access, holder: Holder | None) -> Refusal | None:
    """Why ``holder`` (None: anonymous) may not call an operation needing ``access``;
    None if it may."""
    if access is Access.PLAY:
        if holder is None:
            return Refusal(
                401,
                "unauthorized",
                "This needs a model token: send 'Authorization: Bearer <token>'.",
            )
        if not holder.is_model:
            return Refusal(
                403,
                "forbidden",
                "This is a user token; online play needs the model token you got when you "
                "registered the model (POST /api/v1/online/models).",
            )
        if TokenScope.PLAY not in holder.scopes:
            return Refusal(403, "forbidden", "This token lacks the 'play' scope.")
        if holder.disabled:
            return Refusal(403, "forbidden", "This model is disabled by the organizers.")
        return None
    if holder is None:
        if access is Access.READ:
            return None
        return Refusal(401, "unauthorized", _USER_TOKEN_NEEDED[access])
    if holder.is_model:
        return None if access is Access.READ else Refusal(403, "forbidden", MODEL_TOKEN_ONLY_PLAYS)
    scope = _SCOPE_NEEDED[access]
    if scope not in holder.scopes:
        return Refusal(
            403,
            "forbidden",
            f"This token lacks the scope(s) {scope}: create a token that has it on your "
            "profile page.",
        )
    return None


# --- who is asking --------------------------------------------------------------------------


def bearer_secret(authorization: str) -> str | None:
    """The token of an ``Authorization`` header; None without a header; raises
    ``Refusal`` for a header that is not ``Bearer <token>``."""
    if not authorization:
        return None
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Refusal(401, "unauthorized", "Send the token as 'Authorization: Bearer <token>'.")
    return secret.strip()


def client_address(request: HttpRequest) -> str:
    """The client's address: behind the proxy (``ARENA_BEHIND_PROXY``) the one it put
    last in ``X-Forwarded-For``, otherwise the connection's."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.ARENA_BEHIND_PROXY and forwarded:
        return forwarded.split(",")[-1].strip()
    return str(request.META.get("REMOTE_ADDR") or "?")


def _tokens(digests: Iterable[str]) -> list[ApiToken]:
    return list(
        ApiToken.objects.active()
        .select_related("competitor", "user")
        .filter(token_hash__in=list(digests), user__is_active=True)
    )


def _holder(token: ApiToken) -> Holder:
    return Holder(
        token_id=token.pk,
        digest=token.token_hash,
        user_id=token.user_id,
        scopes=token.scope_set,
        competitor_id=token.competitor_id,
        seat=token.competitor.seat if token.competitor else "",
        disabled=bool(token.competitor and token.competitor.is_disabled),
    )


def _holders(digests: Iterable[str]) -> dict[str, Holder]:
    return {token.token_hash: _holder(token) for token in _tokens(digests)}


def _tokens_used(token_ids: Iterable[int]) -> None:
    """Record that these tokens were used now (the profile page's "Last used"), at most
    once every ``LAST_USED_PRECISION`` each."""
    now = timezone.now()
    ApiToken.objects.filter(pk__in=list(token_ids)).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_PRECISION)
    ).update(last_used_at=now)


def _too_many(wait: float) -> Refusal:
    return Refusal(
        429, "rate_limited", f"Too many requests. Retry in {wait:.0f} s.", retry_after=wait
    )


def rate_of(access: Access, holder: Holder | None, address: str) -> tuple[str, str]:
    """The rate setting and key a request counts against."""
    if holder is None:
        return "ARENA_API_ANONYMOUS_RATE", f"address:{address}"
    if access is Access.PLAY:
        return "ARENA_ONLINE_RATE", f"model:{holder.competitor_id}"
    return "ARENA_API_TOKEN_RATE", f"user:{holder.user_id}"


def token_check(
    authorization: str, access: Access, address: str, *, rated: bool = True
) -> ApiToken | None:
    """The token of an ``Authorization`` header (None: anonymous), if it may call an
    operation needing ``access``, within its rate (unless not ``rated``); raises
    ``Refusal``."""
    secret = bearer_secret(authorization)
    token = None
    if secret is not None:
        found = _tokens([hash_token(secret)])
        if not found:
            wait = rate_wait("ARENA_API_ANONYMOUS_RATE", f"bad-token:{address}")
            if wait is not None:
                raise _too_many(wait)
            raise Refusal(401, "unauthorized", "The token is unknown or revoked.")
        token = found[0]
        last = token.last_used_at
        if last is None or timezone.now() - last > LAST_USED_PRECISION:
            _tokens_used([token.pk])
    holder = _holder(token) if token is not None else None
    refused = refusal(access, holder)
    if refused is not None:
        raise refused
    if rated:
        wait = rate_wait(*rate_of(access, holder, address))
        if wait is not None:
            raise _too_many(wait)
    return token


# --- model tokens in the gateway: checked again every second --------------------------------


@dataclass
class _Known:
    holder: Holder | None
    used_at: float
    #: Streams of this token open now: each is told when the token stops being valid.
    watchers: set[asyncio.Event] = field(default_factory=set)


class TokenChecks:
    """The tokens one event loop of a gateway has seen, and what each speaks for: checked
    again every ``TOKEN_RECHECK_SECONDS``, all in one query, by a task that runs while
    any is in use. When a token stops playing (revoked, its model disabled or deleted,
    its user deactivated), its open streams are told at once."""

    def __init__(self) -> None:
        self.known: dict[str, _Known] = {}
        self._task: asyncio.Task[None] | None = None
        self._used: set[int] = set()

    async def holder(self, digest: str, address: str) -> Holder | None:
        """What ``digest`` speaks for now (None: nothing); raises ``Refusal`` (429) for
        an address that keeps sending unknown tokens."""
        now = time.monotonic()
        known = self.known.get(digest)
        if known is None:
            found = (await sync_to_async(_holders)([digest])).get(digest)
            if found is None:
                wait = await rate_wait_async("ARENA_API_ANONYMOUS_RATE", f"bad-token:{address}")
                if wait is not None:
                    raise _too_many(wait)
                return None
            if len(self.known) > 50_000:
                self._forget(now, everything_idle=True)
            known = self.known[digest] = _Known(found, now)
            self._start()
        known.used_at = now
        if known.holder is not None:
            self._used.add(known.holder.token_id)
        return known.holder

    @contextlib.asynccontextmanager
    async def watch(self, digest: str) -> AsyncIterator[asyncio.Event]:
        """An event set when the token stops being valid to play, for as long as a
        stream holds it."""
        known = self.known.setdefault(digest, _Known(None, time.monotonic()))
        stopped = asyncio.Event()
        known.watchers.add(stopped)
        self._start()
        try:
            yield stopped
        finally:
            known.watchers.discard(stopped)
            known.used_at = time.monotonic()

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._recheck_loop())

    def _forget(self, now: float, *, everything_idle: bool = False) -> None:
        for digest, known in list(self.known.items()):
            idle = now - known.used_at >= TOKEN_FORGET_SECONDS
            if not known.watchers and (idle or everything_idle):
                del self.known[digest]

    async def _recheck_loop(self) -> None:
        while self.known:
            await asyncio.sleep(TOKEN_RECHECK_SECONDS)
            with contextlib.suppress(Exception):
                await self.recheck()
            self._forget(time.monotonic())

    async def recheck(self) -> None:
        """Check every known token again; tell the streams of those no longer valid."""
        used, self._used = self._used, set()
        digests = list(self.known)
        fresh = await sync_to_async(_recheck)(digests, used)
        for digest in digests:
            known = self.known.get(digest)
            if known is None:
                continue
            before, known.holder = known.holder, fresh.get(digest)
            if refusal(Access.PLAY, known.holder) is None:
                continue
            for stopped in known.watchers:
                stopped.set()
            if before is not None and refusal(Access.PLAY, before) is None:
                # Its long polls' presence too: the model is absent from now on.
                with contextlib.suppress(Exception):
                    await seat_bus().connection_close(before.seat, poll_connection(before))


def poll_connection(holder: Holder) -> str:
    """A long-polling client's connection on the seat bus (``/api/v1/online/next``)."""
    return f"poll-{holder.token_id}"


def _recheck(digests: list[str], used: set[int]) -> dict[str, Holder]:
    if used:
        _tokens_used(used)
    return _holders(digests)


_checks: dict[asyncio.AbstractEventLoop, TokenChecks] = {}


def token_checks() -> TokenChecks:
    """This event loop's ``TokenChecks``."""
    loop = asyncio.get_running_loop()
    checks = _checks.get(loop)
    if checks is None:
        for closed in [other for other in _checks if other.is_closed()]:
            del _checks[closed]
        checks = _checks[loop] = TokenChecks()
    return checks


async def model_holder(authorization: str, address: str, *, rated: bool = True) -> Holder:
    """The model an ``Authorization`` header's token plays, within its rate (unless not
    ``rated``); raises ``Refusal`` (401 no or bad token, 403 not a model token or the
    model disabled, 429 too many)."""
    secret = bearer_secret(authorization)
    holder = None
    if secret is not None:
        holder = await token_checks().holder(hash_token(secret), address)
        if holder is None:
            raise Refusal(401, "unauthorized", "The token is unknown or revoked.")
    refused = refusal(Access.PLAY, holder)
    if refused is not None:
        raise refused
    assert holder is not None
    if rated:
        wait = await rate_wait_async(*rate_of(Access.PLAY, holder, address))
        if wait is not None:
            raise _too_many(wait)
    return holder


# --- the operations' authentication (django-ninja) ----------------------------------------


def _raise(refused: Refusal) -> None:
    if refused.status == 429:
        raise Throttled(wait=refused.retry_after or 1) from None
    if refused.status == 401:
        raise AuthenticationError(message=refused.message) from None
    raise AuthorizationError(message=refused.message) from None


class TokenAuth(HttpBearer):
    """The REST API's operations: anonymous, a user token or a model token, as
    ``refusal`` says for the operation's ``access``. Sets ``request.holder`` and
    ``request.user`` (anonymous for a model token: it reads as the public)."""

    openapi_description = (
        "A user token (made on your profile page) with the scope the operation needs: "
        "`read`, `submit`, or `play` for registering online models. Reads also take no "
        "token, or a model token (reading as the public). See docs/api.md."
    )

    def __init__(self, access: Access, *, rated: bool = True) -> None:
        super().__init__()
        self.access = access
        self.rated = rated

    def __call__(self, request: HttpRequest) -> Any:
        # Not HttpBearer's: it logs a malformed header whole, which may hold a secret.
        try:
            token = token_check(
                request.headers.get("Authorization", ""),
                self.access,
                client_address(request),
                rated=self.rated,
            )
        except Refusal as refused:
            _raise(refused)
        request.holder = _holder(token) if token is not None else None  # type: ignore[attr-defined]
        if token is not None and token.competitor_id is None:
            request.user = token.user
        else:
            request.user = AnonymousUser()
        return request.user

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        raise NotImplementedError  # __call__ does the whole check


class ModelTokenAuth(HttpBearer):
    """Online play's operations (async): a model token, checked by this event loop's
    ``TokenChecks``. Sets ``request.holder``."""

    access = Access.PLAY
    openapi_description = (
        "The model token of an online model (shown once when it is registered): it plays "
        "that model alone. See docs/api.md."
    )

    def __init__(self, *, rated: bool = True) -> None:
        super().__init__()
        self.rated = rated

    async def __call__(self, request: HttpRequest) -> Holder:  # type: ignore[override]
        try:
            holder = await model_holder(
                request.headers.get("Authorization", ""),
                client_address(request),
                rated=self.rated,
            )
        except Refusal as refused:
            _raise(refused)
        request.holder = holder  # type: ignore[attr-defined]
        return holder

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        raise NotImplementedError  # __call__ does the whole check


#: Reads: anonymous, a token with the ``read`` scope, or a model token (as the public).
read = TokenAuth(Access.READ)
#: Uploads and deletions of one's own submissions; LLM players.
submit = TokenAuth(Access.SUBMIT)
#: Registering and managing one's online models.
models = TokenAuth(Access.MODELS)
#: Playing an online model.
play = ModelTokenAuth()
#: Leaving the queue: never refused for a rate, so that a client can always stop.
play_unrated = ModelTokenAuth(rated=False)

_ArenaAuth = (TokenAuth, ModelTokenAuth)


class ArenaRouter(Router):
    """A router whose every operation says who may call it: its ``auth`` (or the
    router's) must be one of this module's, and the OpenAPI document gets its access as
    ``x-arena-access``; reads also list "no token" as allowed (an empty requirement)."""

    def __init__(self, *, tags: list[str], auth: TokenAuth | ModelTokenAuth | None = None) -> None:
        super().__init__(tags=tags, auth=NOT_SET if auth is None else auth)

    def add_api_operation(self, *args: Any, **kwargs: Any) -> None:
        chosen = kwargs.get("auth")
        if chosen is None or not isinstance(chosen, _ArenaAuth):
            chosen = self.auth
        if not isinstance(chosen, _ArenaAuth):
            raise TypeError(
                f"{args[0]!r}: every operation takes its auth from api.auth (read, submit, "
                "models, play), which says who may call it"
            )
        extra: dict[str, Any] = {"x-arena-access": chosen.access.value}
        if chosen.access is Access.READ:
            # ninja extends the operation's security list (the token) with this one: an
            # empty requirement, which in OpenAPI means "or no authentication".
            extra["security"] = [{}]
        kwargs["openapi_extra"] = {**extra, **(kwargs.get("openapi_extra") or {})}
        super().add_api_operation(*args, **kwargs)
