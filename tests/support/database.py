"""Pytest plugin: the tests' databases run on PostgreSQL, as in production.

- ``DATABASE_URL`` set: the settings already use it; pytest-django creates
  ``test_<name>`` on that server (so its user needs CREATEDB), and ``--reuse-db``
  keeps it between runs.
- Otherwise, when PostgreSQL's binaries are installed: the first test that needs a
  database starts a throwaway cluster (``tests.support.postgres``), which is stopped
  and deleted when the run ends. Runs without database tests never start it.
- Otherwise the tests run on SQLite and the report header says so, unless
  ``ARENA_REQUIRE_ALL=1``: then every database test fails.

After a test with ``transaction=True`` the tables it filled are emptied
(``empty_the_filled_tables``), not all of them truncated and the content types and
permissions made again, as Django's flush does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.test import TransactionTestCase

from tests.support.postgres import find_bindir, start_cluster
from tests.support.require import require_all

MISSING = "PostgreSQL is missing (apt-get install postgresql, or set DATABASE_URL)"


def _bindir() -> Path | None:
    if os.environ.get("DATABASE_URL"):
        return None
    return find_bindir()


def pytest_report_header(config: pytest.Config) -> str:
    from django.conf import settings

    database = settings.DATABASES["default"]
    if os.environ.get("DATABASE_URL"):
        where = f"{str(database['ENGINE']).rsplit('.', 1)[-1]} at {database.get('HOST') or 'local'}"
        return f"database: {where}, from DATABASE_URL"
    bindir = _bindir()
    if bindir:
        return f"database: a throwaway PostgreSQL cluster ({bindir}), started on first use"
    if require_all():
        return f"database: {MISSING}; database tests fail, as ARENA_REQUIRE_ALL=1"
    return f"database: the tests run on SQLite because {MISSING}"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None,
) -> Iterator[None]:
    """Point the default database at a throwaway PostgreSQL cluster when needed.

    pytest-django's ``django_db_setup`` depends on this fixture, so the cluster starts
    just before the test databases are created, and stops after they are dropped.
    """
    if os.environ.get("DATABASE_URL"):
        yield
        return
    bindir = _bindir()
    if bindir is None:
        if require_all():
            pytest.fail(f"{MISSING}, and ARENA_REQUIRE_ALL=1 requires it", pytrace=False)
        yield
        return
    cluster = start_cluster(bindir)
    try:
        _use_database(cluster.url())
        yield
    finally:
        cluster.stop()


def _use_database(url: str) -> None:
    from django.conf import settings
    from django.db import connections

    from core.settings import database_from_url

    # In place: Django's connection handler holds this very dict, with its defaults
    # (TEST, OPTIONS...) already filled in.
    chosen = database_from_url(url)
    # The SQLite options (its lock timeout...) mean nothing to PostgreSQL.
    chosen.setdefault("OPTIONS", {})
    settings.DATABASES["default"].update(chosen)
    # A connection object made before now (by code that touched the database at
    # import time) would still be a SQLite one.
    connections["default"].close()
    del connections["default"]


def database_url(name: str = "") -> str:
    """The URL of the test database (or of ``name`` on its server), for the processes a
    test starts (``DATABASE_URL``; the settings unquote each part)."""
    from django.db import connection

    database = {**connection.settings_dict, **({"NAME": name} if name else {})}
    user, password, host, port, database_name = (
        quote(str(database[key]), safe="") for key in ("USER", "PASSWORD", "HOST", "PORT", "NAME")
    )
    return f"postgres://{user}:{password}@{host}:{port}/{database_name}"


#: How far apart the revision ids of two test processes start (pytest-xdist's workers).
REVISION_IDS_APART = 1_000_000


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's test database; in the second and later of pytest-xdist's test
    processes, with revision ids starting further on; on PostgreSQL, the databases
    that the migrations' tests made beside it dropped at the end.

    The processes share this machine's Docker engine, and a revision's image is tagged by
    its id and its upload's SHA-256 (``builder.revision_image``): two test databases that
    each build the same example player as revision 1 would tag two images alike, and one
    process's clean-up could take the other's. Each process's images are its own then.
    """
    from django.db import connection

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        start = index * REVISION_IDS_APART + 1
        if index == 0:
            pass  # The first process's ids start at 1.
        elif connection.vendor == "postgresql":
            cursor.execute(f"ALTER SEQUENCE core_revision_id_seq RESTART WITH {start}")
        elif connection.vendor == "sqlite":
            cursor.execute("DELETE FROM sqlite_sequence WHERE name = 'core_revision'")
            cursor.execute("INSERT INTO sqlite_sequence VALUES ('core_revision', %s)", [start - 1])
    yield
    if connection.vendor != "postgresql":
        return
    # The databases that the migrations' tests made (``tests.support.migrations``).
    from tests.support.migrations import state_prefix

    with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [state_prefix()]
        )
        for (name,) in cursor.fetchall():
            cursor.execute(
                f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)} WITH (FORCE)"
            )


#: Rows that the database's creation makes (Django's ``post_migrate``: a content type
#: for each model, four permissions for each) and no test changes.
MADE_WITH_THE_DATABASE = ("django_content_type", "auth_permission")

# Private, so not in django-stubs.
_flush = TransactionTestCase._fixture_teardown  # type: ignore[attr-defined]


def empty_the_filled_tables(test: TransactionTestCase) -> None:
    """After a test with ``transaction=True``: every row it left in a model's table
    deleted, in one transaction, on PostgreSQL (elsewhere, and for tests that ask for
    more, such as ``reset_sequences``, Django's flush).

    Django's flush truncates every table of every model, then sends ``post_migrate``,
    which makes the content types and permissions it has just deleted again: about 0.2 s
    of a test process's and PostgreSQL's CPU after each of about 400 such tests (a
    truncated table gets new files, even an empty one). A test fills a few tables: one
    query finds them, and deleting their rows costs little. Django's foreign keys are
    checked at commit (``DEFERRABLE INITIALLY DEFERRED``), so the order of the deletions
    does not matter; the sequences go on, as after Django's flush."""
    from django.db import connection, transaction

    if (
        connection.vendor != "postgresql"
        or test.available_apps is not None
        or test.serialized_rollback
        or test.reset_sequences
        or test.databases != {"default"}
    ):
        _flush(test)
        return
    tables = [
        table
        for table in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        if table not in MADE_WITH_THE_DATABASE
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        for table in filled_tables(tables):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")


def filled_tables(tables: list[str]) -> set[str]:
    """Those of ``tables`` that have a row, in one query."""
    from django.db import connection

    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            " UNION ALL ".join(
                f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables
            ),
            tables,
        )
        return {table for (table,) in cursor.fetchall()}


def pytest_configure(config: pytest.Config) -> None:
    TransactionTestCase._fixture_teardown = empty_the_filled_tables  # type: ignore[attr-defined]
