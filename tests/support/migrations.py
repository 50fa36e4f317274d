"""Migrating the test database to a state and back, for the tests of a migration on a
database made by the code before it.

A new database takes the squashed migration (``core/migrations/0001_squashed_*``); these
tests go by the original files it replaces, so that they can reach a state between them.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader


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
