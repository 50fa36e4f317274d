"""The gateway's connections to PostgreSQL (``edge/asgi.py``): under ASGI each request runs
in a thread of its own, so a connection kept for the next request would never be reused
and every request would open one. The gateway takes them from a pool instead."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import EnvironmentFactory
from tests.support.gateway import Gateway

pytestmark = pytest.mark.django_db(transaction=True)


def backends() -> set[int]:
    """The database's other sessions now (the gateway's among them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {pid for (pid,) in cursor.fetchall()}


def test_requests_after_requests_reuse_the_same_few_connections(gateway: Gateway):
    EnvironmentFactory(name="connect_four")
    assert gateway.request("GET", "/api/v1/environments/connect_four")[0] == 200
    before = backends()

    opened: set[int] = set()
    for _ in range(20):
        status, body, _ = gateway.request("GET", "/api/v1/environments/connect_four")
        assert status == 200, body
        opened |= backends() - before

    # The pool's: the one each request takes back and forth, and one more at most for
    # the token checks of a request that overlaps them.
    assert len(opened) <= 2, f"20 requests opened {len(opened)} connections"
