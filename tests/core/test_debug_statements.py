"""With ARENA_DEBUG on (the embedded default), Django logs each connection's statements
until a request starts. A worker's task and a daemon's pass forget them as a request
does, so a long-running worker or manager does not hold 9,000 of them per connection
(found by ``bench/bench_soak.py``: the worker's memory rose for half an hour)."""

from __future__ import annotations

import logging
import threading

import pytest
from celery.signals import task_prerun
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.management.daemon import serve
from core.models import Environment

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_pass_of_a_daemon_starts_with_no_statements_logged(settings):
    settings.DEBUG = True
    stopping = threading.Event()
    logged: list[int] = []

    def one_pass() -> bool:
        logged.append(len(connection.queries_log))
        for _ in range(5):
            Environment.objects.count()
        if len(logged) == 3:
            stopping.set()
        return True

    serve([one_pass], stopping=stopping, interval=0, logger=logging.getLogger(__name__))

    assert logged == [0, 0, 0]


def test_a_task_starts_with_no_statements_logged_unless_a_test_counts_them(settings):
    settings.DEBUG = True
    Environment.objects.count()
    assert connection.queries_log

    task_prerun.send(sender=None, task_id="a-task", task=None, args=(), kwargs={})

    assert not connection.queries_log
    with CaptureQueriesContext(connection) as captured:
        Environment.objects.count()
        task_prerun.send(sender=None, task_id="a-task", task=None, args=(), kwargs={})
        Environment.objects.count()
    assert len(captured) == 2
