"""A database made by the code before a migration, for the tests of that migration.

A new database takes the squashed migration (``core/migrations/0001_squashed_*``); these
tests go by the original files it replaces, so that they can reach a state between them.
Each test has a database of its own (``database_at``), a copy of the test database as
made, migrated back to its state: the test database is left as it is, so nothing has to
migrate it forward again afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from tests.support.database import as_made


class OriginalMigrations(MigrationLoader):
    """The migration graph without squashed migrations: a migration that depends on one
    follows the last of the migrations it replaces instead, as an old deployment's
    database does."""

    def __init__(self) -> None:
        super().__init__(connection, replace_migrations=False)

    def build_graph(self) -> None:
        super().build_graph()
        for key, squashed in self.replacements.items():
            self.graph.remove_replacement_node(key, squashed.replaces)


def migrate(targets: list[tuple[str, str]]) -> Any:
    """The database at ``targets``; returns the apps (historical models) of that state."""
    executor = MigrationExecutor(connection)
    executor.loader = OriginalMigrations()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest() -> list[tuple[str, str]]:
    """The newest migration of every app: where the code's models are."""
    return list(OriginalMigrations().graph.leaf_nodes())


@contextmanager
def database_at(targets: list[tuple[str, str]]) -> Iterator[Any]:
    """The test's default connection on a database of its own, a copy of the test
    database as made, migrated back through the original files to ``targets``; yields
    their apps. Afterwards the connection is the test database's again, and the copy is
    dropped. For tests with ``transaction=True`` (the connection changes database).
    On SQLite (a machine without PostgreSQL): the test database, migrated back, then
    forward again."""
    if connection.vendor != "postgresql":
        try:
            yield migrate(targets)
        finally:
            migrate(latest())
        return
    settings = connection.settings_dict
    test_database, name = settings["NAME"], f"{settings['NAME']}_migrated"
    quoted = connection.ops.quote_name(name)
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {quoted} TEMPLATE {connection.ops.quote_name(as_made())}")
    connection.close()
    settings["NAME"] = name
    try:
        yield migrate(targets)
    finally:
        connection.close()
        settings["NAME"] = test_database
        # Content types looked up meanwhile were the copy's rows.
        ContentType.objects.clear_cache()
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {quoted} WITH (FORCE)")
