"""Two callers at once: the races the conditional UPDATEs decide."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def twice_at_once(action: Callable[[], T], *, timeout: float = 60) -> list[T]:
    """Run ``action`` in two threads (two database connections) released together; their
    results. Fails if either raised."""
    barrier = threading.Barrier(2)
    outcomes: list[T] = []
    failures: list[BaseException] = []

    def caller() -> None:
        try:
            barrier.wait()
            outcomes.append(action())
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not failures, failures
    return outcomes
