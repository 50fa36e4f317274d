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

import enum
import inspect
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from ninja import Router
from ninja.constants import NOT_SET
from ninja.errors import AuthenticationError, AuthorizationError, Throttled
from ninja.security import HttpBearer

from api.connections import client_key
from api.rates import rate_wait, rate_wait_async
from api.tokens import Holder, holder_of, token_checks, token_used, tokens_of
from core.errors import sentence
from core.models import ApiToken, TokenScope
from core.models.accounts import hash_token


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
        if holder.plays:
            return None
        if not holder.is_model:
            return Refusal(
                403,
                "forbidden",
                "This is a user token; online play needs the model token you got when you "
                "registered the model (POST /api/v1/online/models).",
            )
        if TokenScope.PLAY not in holder.scopes:
            return Refusal(403, "forbidden", "This token lacks the 'play' scope.")
        return Refusal(403, "forbidden", sentence(holder.disabled))
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


def _too_many(wait: float) -> Refusal:
    return Refusal(
        429, "rate_limited", f"Too many requests. Retry in {wait:.0f} s.", retry_after=wait
    )


def rate_of(access: Access, holder: Holder | None, address: str) -> tuple[str, str]:
    """The rate setting and key a request counts against: its holder's, or without a
    token its client's (``client_key``: an IPv6 client is its /64)."""
    if holder is None:
        return "ARENA_API_ANONYMOUS_RATE", f"address:{client_key(address)}"
    if access is Access.PLAY:
        return "ARENA_ONLINE_RATE", f"model:{holder.competitor_id}"
    if holder.is_model:
        # Apart from its owner's count: a leaked model token cannot use it up.
        return "ARENA_API_TOKEN_RATE", f"model-reads:{holder.competitor_id}"
    return "ARENA_API_TOKEN_RATE", f"user:{holder.user_id}"


def _guessed(address: str) -> str:
    return f"bad-token:{client_key(address)}"


def token_check(
    authorization: str, access: Access, address: str, *, rated: bool = True
) -> ApiToken | None:
    """The token of an ``Authorization`` header (None: anonymous), if it may call an
    operation needing ``access``, within its rate (unless not ``rated``); raises
    ``Refusal``."""
    secret = bearer_secret(authorization)
    token = None
    if secret is not None:
        found = tokens_of([hash_token(secret)])
        if not found:
            wait = rate_wait("ARENA_API_ANONYMOUS_RATE", _guessed(address))
            if wait is not None:
                raise _too_many(wait)
            raise Refusal(401, "unauthorized", "The token is unknown or revoked.")
        token = found[0]
        token_used(token)
    holder = holder_of(token) if token is not None else None
    refused = refusal(access, holder)
    if refused is not None:
        raise refused
    if rated:
        wait = rate_wait(*rate_of(access, holder, address))
        if wait is not None:
            raise _too_many(wait)
    return token


async def model_holder(authorization: str, address: str, *, rated: bool = True) -> Holder:
    """The model an ``Authorization`` header's token plays, within its rate (unless not
    ``rated``); raises ``Refusal`` (401 no or bad token, 403 not a model token or the
    model disabled, 429 too many)."""
    secret = bearer_secret(authorization)
    holder = None
    if secret is not None:
        holder = await token_checks().holder(hash_token(secret))
        if holder is None:
            wait = await rate_wait_async("ARENA_API_ANONYMOUS_RATE", _guessed(address))
            if wait is not None:
                raise _too_many(wait)
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
        # ninja annotates ``wait`` as whole seconds; our handler (api/errors.py) takes the
        # float and rounds it up in Retry-After.
        raise Throttled(wait=refused.retry_after or 1) from None  # type: ignore[arg-type]
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
        "token, or a model token (reading as the public). See /docs/api/."
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
        request.holder = holder_of(token) if token is not None else None  # type: ignore[attr-defined]
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
        "that model alone. See /docs/api/."
    )

    def __init__(self, *, rated: bool = True) -> None:
        super().__init__()
        self.rated = rated

    async def __call__(self, request: HttpRequest) -> Holder:
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
    ``x-arena-access``; reads also list "no token" as allowed (an empty requirement).

    Every operation also says what it does, in one place: its function's docstring, whose
    first line is the document's summary and whose paragraphs after it are the
    description (``operation_text``)."""

    def __init__(self, *, tags: list[str], auth: TokenAuth | ModelTokenAuth | None = None) -> None:
        super().__init__(tags=tags, auth=NOT_SET if auth is None else auth)

    def add_api_operation(self, *args: Any, **kwargs: Any) -> None:
        chosen = kwargs.get("auth", NOT_SET)
        if chosen is NOT_SET:
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
        if kwargs.get("summary") or kwargs.get("description"):
            raise TypeError(f"{args[0]!r}: an operation's docstring is its summary and description")
        kwargs["summary"], kwargs["description"] = operation_text(args[0], args[2])
        super().add_api_operation(*args, **kwargs)
        # ninja takes the whole docstring for a missing description: an operation whose
        # docstring is its summary alone has none.
        self.path_operations[args[0]].operations[-1].description = kwargs["description"]


def operation_text(path: str, view: Callable[..., Any]) -> tuple[str, str | None]:
    """An operation's summary, its docstring's first line, and its description, the
    paragraphs after it, each folded onto one line (line breaks are the source's, not the
    text's)."""
    summary, _, rest = inspect.cleandoc(view.__doc__ or "").partition("\n")
    if not summary:
        raise TypeError(f"{path!r}: every operation has a docstring, its summary first")
    paragraphs = [" ".join(paragraph.split("\n")) for paragraph in rest.strip().split("\n\n")]
    return summary, "\n\n".join(paragraphs) or None
