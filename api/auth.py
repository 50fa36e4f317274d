"""Bearer tokens: ``Authorization: Bearer arena_...``, never in a URL.

Only a token's hash is stored (``core.models.ApiToken``); a revoked token is refused like
an unknown one. Reads work without a token too (as the site does, for what is public); a
token that is sent must be valid, so a typo never silently turns a request anonymous.
Scopes (``core.models.TokenScope``): ``read`` for what the user may see, ``submit`` for
uploads, ``play`` for online play.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.utils import timezone
from ninja import Router
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer

from core.models import ApiToken
from core.models.accounts import hash_token

#: ``last_used_at`` is written at most this often per token (not on every request).
LAST_USED_PRECISION = timedelta(minutes=1)


def _token_user(secret: str) -> tuple[Any, frozenset[str]] | None:
    digest = hash_token(secret)
    token = (
        ApiToken.objects.active()
        .select_related("user")
        .filter(token_hash=digest, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token.scope_set


class TokenAuth(HttpBearer):
    """A valid token holding every one of ``scopes``; 401 without one, 403 without the
    scopes."""

    def __init__(self, *scopes: str, optional: bool = False) -> None:
        super().__init__()
        self.scopes = frozenset(scopes)
        self.optional = optional

    def __call__(self, request: HttpRequest) -> Any:
        # Not HttpBearer's: it logs a malformed header whole, which may hold a secret.
        value = request.headers.get(self.header, "")
        if not value:
            if self.optional:
                request.token_scopes = frozenset()
                return AnonymousUser()
            raise AuthenticationError(
                message="This needs an API token: send 'Authorization: Bearer <token>'."
            )
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError(message="Send the token as 'Authorization: Bearer <token>'.")
        return self.authenticate(request, token.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = _token_user(token)
        if found is None:
            raise AuthenticationError(message="The token is unknown or revoked.")
        user, scopes = found
        missing = sorted(self.scopes - scopes)
        if missing:
            raise AuthorizationError(
                message=f"This token lacks the scope(s) {', '.join(missing)}: create a token "
                "that has them on your profile page."
            )
        request.user = user
        request.token_scopes = scopes
        return user


#: Reads: anonymous, or a token with the ``read`` scope.
read = TokenAuth("read", optional=True)
#: Uploads and deletions of one's own submissions.
submit = TokenAuth("submit")
#: Online play.
play = TokenAuth("play")


class ReadRouter(Router):
    """Routes for reads: a token with the ``read`` scope, or none at all. The OpenAPI
    document says both (ninja alone would list the token as required)."""

    def __init__(self, *, tags: list[str]) -> None:
        super().__init__(tags=tags, auth=read)

    def add_api_operation(self, *args: Any, **kwargs: Any) -> None:
        # ninja extends the operation's security list (the token) with this one: an empty
        # requirement, which in OpenAPI means "or no authentication".
        anonymous_too: dict[str, Any] = {"security": [{}]}
        kwargs["openapi_extra"] = {**anonymous_too, **(kwargs.get("openapi_extra") or {})}
        super().add_api_operation(*args, **kwargs)
