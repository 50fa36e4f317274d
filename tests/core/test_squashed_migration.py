"""The squashed migration makes the schema that the 40 migrations it replaces make: a new
database (which takes it) and an old deployment's (which went through the originals)
have the same tables, columns, constraints and indexes, so that every later migration
meets the same database."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from tests.support.database import database_url
from tests.support.require import require

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def through_the_originals() -> Iterator[BaseDatabaseWrapper]:
    """A database of its own on the test database's server, migrated from nothing through
    the original migrations, one by one, as an old deployment's was: by a process of its
    own, whose default database it is (their data migrations use the default one)."""
    require(
        connection.vendor == "postgresql",
        "PostgreSQL is missing: the schemas are read from its catalogs",
    )
    # Named after the test database, which is this test process's own (pytest-xdist's
    # processes may share a server).
    name = f"{connection.settings_dict['NAME']}_originals"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    database = type(connections["default"])({**connection.settings_dict, "NAME": name}, alias=name)
    try:
        subprocess.run(
            [sys.executable, "-c", MIGRATE_THROUGH_THE_ORIGINALS],
            env={
                **os.environ,
                "DATABASE_URL": database_url(name),
                "DJANGO_SETTINGS_MODULE": "core.settings",
            },
            cwd=settings.BASE_DIR,
            check=True,
            timeout=600,
        )
        yield database
    finally:
        database.close()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")


MIGRATE_THROUGH_THE_ORIGINALS = """
import django
django.setup()
from tests.support.migrations import migrate, latest
migrate(latest())
"""


def schema(database: BaseDatabaseWrapper) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's columns, constraints and indexes, as PostgreSQL describes them. The
    names that Django derives from a table and its columns are left out (a renamed column
    keeps its index's first name in an old database); the names chosen in the models
    (their ``Meta.constraints`` and ``Meta.indexes``) are kept."""
    chosen = {
        item.name
        for model in apps.get_models()
        for item in [*model._meta.constraints, *model._meta.indexes]
    }

    def name(found: str) -> str:
        return found if found in chosen else "(derived)"

    with database.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, data_type, character_maximum_length,"
            " numeric_precision, numeric_scale, is_nullable, column_default, is_identity"
            " FROM information_schema.columns WHERE table_schema = 'public'"
        )
        columns = cursor.fetchall()
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)"
            " FROM pg_constraint WHERE connamespace = 'public'::regnamespace"
        )
        constraints = [
            (table, name(found), kind, text) for table, found, kind, text in cursor.fetchall()
        ]
        cursor.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
        )
        indexes = [
            (table, name(found), re.sub(r"INDEX \S+ ON", "INDEX ON", text))
            for table, found, text in cursor.fetchall()
        ]
        cursor.execute("SELECT app, name FROM django_migrations")
        applied = cursor.fetchall()
    return {
        "columns": sorted(columns, key=repr),
        "constraints": sorted(constraints, key=repr),
        "indexes": sorted(indexes, key=repr),
        "originals applied": sorted(
            (app, migration) for app, migration in applied if "_squashed_" not in migration
        ),
    }


def test_a_new_database_has_the_schema_of_one_migrated_through_the_originals(
    through_the_originals,
):
    new, old = schema(connection), schema(through_the_originals)
    assert len(new["columns"]) > 200 and len(new["constraints"]) > 100
    for part in new:
        assert new[part] == old[part], part
