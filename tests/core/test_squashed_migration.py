"""The squashed migration makes the schema that the 40 migrations it replaces make: a new
database (which takes it) and an old deployment's (which went through the originals)
have the same tables, columns, constraints and indexes, so that every later migration
meets the same database. The old deployment's database is the migrations' tests' own
(``tests.support.migrations.database_at``), made from nothing through the originals."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

from tests.support.migrations import database_at, latest
from tests.support.require import require

pytestmark = pytest.mark.django_db(transaction=True)


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


def test_a_new_database_has_the_schema_of_one_migrated_through_the_originals():
    require(
        connection.vendor == "postgresql",
        "PostgreSQL is missing: the schemas are read from its catalogs",
    )
    new = schema(connection)
    with database_at(latest()):
        old = schema(connection)
    assert len(new["columns"]) > 200 and len(new["constraints"]) > 100
    for part in new:
        assert new[part] == old[part], part
