"""Pytest plugin: request rates (``api.rates``) counted afresh for each test, whether it
asks the API, the site's pages or the gateway (a pytest plugin, loaded by the root
``conftest.py`` when Django is installed)."""

from __future__ import annotations

import pytest

from api.rates import rates_reset


@pytest.fixture(autouse=True)
def fresh_rate_counts() -> None:
    """Request rates are counted per process (or in Redis): each test starts from zero, so
    no test is refused for what an earlier one asked."""
    rates_reset()
