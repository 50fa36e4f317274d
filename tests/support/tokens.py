"""Pytest plugin: API tokens for the tests that call the REST API as a user (``bearer``),
wherever they are (``tests/api``, ``tests/reads``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.models import ApiToken, User
from tests.factories import ApiTokenFactory

Bearer = Callable[..., dict[str, str]]


@pytest.fixture
def bearer() -> Bearer:
    """``bearer(user, "read", "submit")``: the headers of a new token of ``user`` with
    those scopes (read only by default)."""

    def bearer(user: User, *scopes: str) -> dict[str, str]:
        # One secret per token, however many a test makes for a user.
        secret = "arena_" + "x" * 20 + str(ApiToken.objects.count()) + user.email
        ApiTokenFactory(user=user, secret=secret, scopes=" ".join(scopes or ("read",)))
        return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}

    return bearer
