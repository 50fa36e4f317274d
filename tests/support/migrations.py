"""A database made by the code before a migration, for the tests of that migration.

A new database takes the squashed migration (``core/migrations/0001_squashed_*``); these
tests go by the original files it replaces, so that they can reach a state between them.
Each test has a database of its own (``database_at``): a copy of a database made from
nothing through the original migrations up to the test's state, as an old deployment's
was. Each state is made once per test process, as a template on the test database's
server, from the nearest earlier state this process has made. (They were copies of the
test database migrated back instead: Django works out the state before every migration
it undoes, from the first one on. The ten tests of ``tests/core/test_*_migration.py``
took 119 s of a test process that way, 68 s this way, one after the other on the same
machine.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

Targets = list[tuple[str, str]]


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


def migrate(targets: Targets) -> Any:
    """The database at ``targets``; returns the apps (historical models) of that state."""
    return _migrated(targets).project_state(targets).apps


def _migrated(targets: Targets) -> OriginalMigrations:
    """The database migrated to ``targets``; returns the graph it went by."""
    executor = MigrationExecutor(connection)
    executor.loader = OriginalMigrations()
    executor.migrate(targets)
    return executor.loader


def latest() -> Targets:
    """The newest migration of every app: where the code's models are."""
    return list(OriginalMigrations().graph.leaf_nodes())


#: The states this test process has made: the migrations each one has applied, by the
#: name of its template database.
_made: dict[str, frozenset[tuple[str, str]]] = {}


def state_prefix() -> str:
    """The names of this test process's states begin with this (and are dropped with its
    test database, ``tests.support.database``)."""
    return f"{connection.settings_dict['NAME']}_at_"


@contextmanager
def _connected_to(name: str) -> Iterator[None]:
    """The default connection on the database ``name`` of the test database's server,
    then on the test database again."""
    settings = connection.settings_dict
    test_database = settings["NAME"]
    connection.close()
    settings["NAME"] = name
    try:
        yield
    finally:
        # A database can be copied only while no one is connected to it.
        connection.close()
        settings["NAME"] = test_database
        # Content types looked up meanwhile were the other database's rows.
        ContentType.objects.clear_cache()


def _state(targets: Targets) -> str:
    """The template database at ``targets``, made now if this process has not made it
    yet: a copy of the nearest earlier state made (or a new, empty database) migrated
    forward through the original migrations."""
    graph = OriginalMigrations().graph
    applied = frozenset(node for target in targets for node in graph.forwards_plan(target))
    for name, made in _made.items():
        if made == applied:
            return name
    earlier = max(
        (name for name, made in _made.items() if made < applied),
        key=lambda name: len(_made[name]),
        default=None,
    )
    name = _created(f"{state_prefix()}{len(_made)}", earlier)
    with _connected_to(name):
        # Its apps are not rendered here: ``database_at`` renders those it yields.
        _migrated(targets)
    _made[name] = applied
    return name


def _created(name: str, template: str | None) -> str:
    """A new database ``name`` on the test database's server, a copy of ``template`` (or
    empty), in place of any left by an earlier run; returns ``name``."""
    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")
        cursor.execute(
            f"CREATE DATABASE {quote(name)}"
            + (f" TEMPLATE {quote(template)}" if template is not None else "")
        )
    return name


@contextmanager
def database_at(targets: Targets) -> Iterator[Any]:
    """The test's default connection on a database of its own at ``targets``, a copy of
    a database made through the original migrations (``_state``); yields the apps of
    ``targets``. Afterwards the connection is the test database's again, and the copy is
    dropped. For tests with ``transaction=True`` (the connection changes database).
    On SQLite (a machine without PostgreSQL): the test database, migrated back, then
    forward again."""
    if connection.vendor != "postgresql":
        try:
            yield migrate(targets)
        finally:
            migrate(latest())
        return
    name = _created(f"{state_prefix()}test", _state(targets))
    quote = connection.ops.quote_name
    try:
        with _connected_to(name):
            yield OriginalMigrations().project_state(targets).apps
    finally:
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {quote(name)} WITH (FORCE)")
