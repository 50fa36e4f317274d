"""Pytest plugin: the pages' cache (``web.page_cache``) in a folder of the test run's own,
which the processes the tests start share (they inherit ``ARENA_CACHE_URL``), emptied
before each test: a page kept by one test is never shown to the next, whose rows (and
ids) may be the same."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_FOLDER = tempfile.mkdtemp(prefix="arena-test-pages-")


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    from core.settings import cache_from_url

    os.environ["ARENA_CACHE_URL"] = f"file://{_FOLDER}"
    if settings.configured:
        settings.ARENA_CACHE_URL = os.environ["ARENA_CACHE_URL"]
        settings.CACHES = {"default": cache_from_url(settings.ARENA_CACHE_URL)}


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_FOLDER, ignore_errors=True)


@pytest.fixture(autouse=True)
def _pages_cache_emptied() -> None:
    from django.core.cache import cache

    cache.clear()
