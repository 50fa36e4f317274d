"""Producers and consumers of the embedded broker, as processes of their own, for tests
of several processes on one broker file (``tests/core/test_embedded_broker.py``).

    python -m tests.support.broker_clients produce URL QUEUES COUNT PREFIX
    python -m tests.support.broker_clients consume URL QUEUES OUT_FILE IDLE_SECONDS [LINES]
    python -m tests.support.broker_clients hold URL QUEUE OUT_FILE

``produce`` sends COUNT messages ``PREFIX-<n>`` round the comma-separated QUEUES;
``consume`` acknowledges every message it gets, writing its id to OUT_FILE, until the
queues stay empty for IDLE_SECONDS or OUT_FILE (which several consumers may share) holds
LINES ids; ``hold`` takes one message, writes its id and waits,
never acknowledging it, until it is killed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from kombu import Connection, Message, Queue

import core.celery  # noqa: F401 - registers the embedded broker's scheme with kombu


def produce(url: str, queues: list[str], count: int, prefix: str) -> None:
    with Connection(url) as connection:
        producer = connection.Producer(serializer="json")
        for number in range(count):
            producer.publish(
                {"id": f"{prefix}-{number}"}, exchange="", routing_key=queues[number % len(queues)]
            )


def consume(
    url: str, queues: list[str], out_file: Path, idle_seconds: float, lines: int | None = None
) -> None:
    with Connection(url) as connection, out_file.open("a") as out:

        def received(body: dict[str, Any], message: Message) -> None:
            out.write(body["id"] + "\n")
            out.flush()
            message.ack()

        consumer = connection.Consumer(
            [Queue(name, routing_key=name) for name in queues],
            callbacks=[received],
            accept=["json"],
            prefetch_count=1,
        )
        with consumer:
            last = time.monotonic()
            while time.monotonic() - last < idle_seconds and (
                lines is None or out_file.read_text().count("\n") < lines
            ):
                try:
                    connection.drain_events(timeout=0.5)
                    last = time.monotonic()
                except TimeoutError:
                    pass


def hold(url: str, queue: str, out_file: Path) -> None:
    with Connection(url) as connection:

        def received(body: dict[str, Any], message: Message) -> None:
            out_file.write_text(body["id"] + "\n")
            time.sleep(3600)

        with connection.Consumer(
            [Queue(queue, routing_key=queue)], callbacks=[received], accept=["json"]
        ):
            while True:
                with contextlib.suppress(TimeoutError):
                    connection.drain_events(timeout=1)


if __name__ == "__main__":
    command, url, queues = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    if command == "produce":
        produce(url, queues, int(sys.argv[4]), sys.argv[5])
    elif command == "consume":
        lines = int(sys.argv[6]) if len(sys.argv) > 6 else None
        consume(url, queues, Path(sys.argv[4]), float(sys.argv[5]), lines)
    elif command == "hold":
        hold(url, queues[0], Path(sys.argv[4]))
    else:
        raise SystemExit(f"unknown command {command!r}")
