"""Migrating the test database to a state and back, for the tests of a migration on a
database made by the code before it."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets: list[tuple[str, str]]) -> Any:
    """The database at ``targets``; returns the apps (historical models) of that state."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest() -> list[tuple[str, str]]:
    """The newest migration of every app: where the code's models are."""
    return list(MigrationExecutor(connection).loader.graph.leaf_nodes())
