"""The version of what the public pages show, bumped by every write to the data behind them.

The site keeps the pages it shows anonymous visitors in Django's cache (``web.page_cache``),
each under the version current when it was read. Every INSERT, UPDATE or DELETE on the
default database, whoever makes it (a duel's result stored by a worker, a leaderboard
refit, a rating, the admin, a bulk update that sends no signal), bumps the version once
its transaction commits: a database execute wrapper on every connection sees each
statement (``watch_writes``), so no write path can forget it. A page read after the
commit misses the pages kept before it and is read again from the database; a page
read before the commit, and stored after it, is stored under the old version, which no
one reads any more. A connection whose transaction holds uncommitted writes reads no
cached page (``has_uncommitted_writes``): what it would see differs from what others see.

The version lives in the cache itself (Redis in production, shared by every process);
when it is missing (a new cache, an eviction) it starts again from the clock in
nanoseconds, never at a number an older page was stored under.

Writes to the tables no cached page reads leave the version alone (``UNWATCHED_TABLES``):
a running duel's job heartbeat, its live events, sessions, API tokens' last use.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

VERSION_KEY = "arena:pages:version"
#: Tables whose writes leave the kept pages alone: no cached page reads them
#: (``tests/web/test_page_cache.py`` checks the pages' queries), but for a duel's job, read
#: for its times and error, which change only in the transactions that also write the
#: duel's status (watched); its heartbeats change neither.
UNWATCHED_TABLES = frozenset(
    {"django_session", "core_job", "core_liveevent", "core_apitoken", "core_onlineseat"}
)
_WRITE = re.compile(r'\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)', re.IGNORECASE)


def pages_version() -> int:
    """The current version (set from the clock when the cache has none)."""
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, time.time_ns(), timeout=None)
        version = cache.get(VERSION_KEY)
    return int(version)


def pages_version_bump() -> None:
    """Make every page kept so far stale. A cache that cannot be reached is logged, not
    raised: the write it follows has committed; the pages kept there expire after
    ARENA_PAGE_CACHE_SECONDS."""
    try:
        try:
            cache.incr(VERSION_KEY)
        except ValueError:  # no version yet: one from the clock is newer than any
            cache.add(VERSION_KEY, time.time_ns(), timeout=None)
    except Exception:
        logger.exception("the pages' version could not be bumped")


def has_uncommitted_writes(connection: BaseDatabaseWrapper) -> bool:
    """Whether this connection's open transaction wrote to the pages' tables."""
    return connection.in_atomic_block and any(
        # Each entry: the savepoints it belongs to, the callback, and (Django 5) robust.
        entry[1] is pages_version_bump
        for entry in connection.run_on_commit
    )


def watch_writes(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """A database execute wrapper: a write to a watched table bumps the pages' version
    once its transaction commits (at once outside a transaction), once per transaction."""
    result = execute(sql, params, many, context)
    write = _WRITE.match(sql)
    if write is not None and write.group(1) not in UNWATCHED_TABLES:
        connection = context["connection"]
        if not has_uncommitted_writes(connection):
            transaction.on_commit(pages_version_bump, using=connection.alias, robust=True)
    return result


def watch_connection(sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """``connection_created``: watch the default database's writes."""
    if connection.alias == DEFAULT_DB_ALIAS and watch_writes not in connection.execute_wrappers:
        connection.execute_wrappers.append(watch_writes)
