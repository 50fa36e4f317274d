"""Skip a test whose prerequisite is missing, unless every test must run."""

from __future__ import annotations

import os

import pytest


def require_all() -> bool:
    """True when ``ARENA_REQUIRE_ALL=1``: a missing prerequisite is a failure (CI sets it)."""
    return os.environ.get("ARENA_REQUIRE_ALL") == "1"


def require(condition: object, reason: str) -> None:
    """Carry on when ``condition`` holds; otherwise skip with ``reason`` or, under
    ``ARENA_REQUIRE_ALL=1``, fail with it.

    ``reason`` says what is missing and what it stops, in one line: "chromium is not
    installed (apt-get install chromium), so browser tests cannot run".
    """
    __tracebackhide__ = True  # reports point at the test, not here
    if condition:
        return
    if require_all():
        pytest.fail(f"{reason}, and ARENA_REQUIRE_ALL=1 requires every test to run", pytrace=False)
    pytest.skip(reason)
