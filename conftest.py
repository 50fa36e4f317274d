"""The test run's plugins. The Django-free layer's tests (referee, sandboxes,
environments, SDK, example players) need only ``tests.support.sandboxes``, so that they
also run where Django is not installed (``scripts/test.sh`` runs them so); everything
else loads with Django: the story fixtures (``tests.support.stories``: alice, bob, carol,
an organizer, an invite), API tokens (``tests.support.tokens``: ``bearer``), request rates
counted afresh for each test (``tests.support.rates``), the database, the browser, the
Celery workers and the embedded default run for real.
"""

from __future__ import annotations

import importlib.util

import pytest

pytest_plugins = ["tests.support.cpu_log", "tests.support.sandboxes", "tests.support.redis"]
if importlib.util.find_spec("django") is not None:
    pytest_plugins += [
        "tests.support.stories",
        "tests.support.tokens",
        "tests.support.dispatch",
        "tests.support.database",
        "tests.support.browser",
        "tests.support.workers",
        "tests.support.gateway",
        "tests.support.embedded",
        "tests.support.page_cache",
        "tests.support.rates",
        "tests.support.fuzzing",
        "tests.support.clock",
    ]


def pytest_addoption(parser: pytest.Parser) -> None:
    if importlib.util.find_spec("pytest_django") is None:
        # pyproject.toml's pytest settings name pytest-django's, which a run without it
        # (the Django-free layer's, in .venv-pure) would warn is unknown.
        parser.addini("DJANGO_SETTINGS_MODULE", "pytest-django's setting (no Django here)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests (``@pytest.mark.slow``) first, each module's in its order: with two
    test processes (``scripts/test.sh``: pytest-xdist, a module to each, in this order),
    a long module started last would keep one process busy alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
