"""API tests: request rates counted afresh for each test. Tokens with chosen scopes are
the ``bearer`` fixture (``tests.support.tokens``)."""

from __future__ import annotations

import pytest

from api.rates import rates_reset


@pytest.fixture(autouse=True)
def fresh_rate_counts() -> None:
    """Request rates are counted per process (or in Redis): each test starts from zero."""
    rates_reset()
