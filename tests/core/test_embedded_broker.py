"""The embedded broker (``core/embedded_broker.py``): a SQLite file several processes send
to and take from at once. Processes opening a new file together all get it; every
message is delivered once; late acknowledgement holds
while the taking process lives; a message whose consumer was killed outright is not given
back (the job watchdog recovers that work once its lease runs out, see
``tests/edge/test_embedded_server.py``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection, Message, Queue

import core.celery  # noqa: F401 - registers the embedded broker's scheme with kombu
from core import embedded_broker
from core.embedded_worker import routed_queues
from tests.support.workers import ROOT, wait_for

QUEUES = routed_queues()


@pytest.fixture
def broker(tmp_path: Path) -> str:
    return f"arena-sqlite+sqlite:///{tmp_path / 'broker.sqlite3'}"


def clients(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.broker_clients", *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored_messages(broker: str) -> int:
    path = broker.removeprefix("arena-sqlite+sqlite:///")
    with sqlite3.connect(path) as database:
        return database.execute("SELECT count(*) FROM kombu_message").fetchone()[0]


def take(connection: Connection, queue: str, within: float = 60.0) -> Message | None:
    """One message of the queue, not acknowledged; None if none came ``within`` seconds
    (a message that is there comes at once: only the checks that none is wait it out)."""
    taken: list[Message] = []
    consumer = connection.Consumer(
        [Queue(queue, routing_key=queue)],
        callbacks=[lambda body, message: taken.append(message)],
        accept=["json"],
        prefetch_count=1,
    )
    with consumer:
        deadline = time.monotonic() + within
        while not taken and time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                connection.drain_events(timeout=0.5)
    return taken[0] if taken else None


def send(broker: str, queue: str, message_id: str) -> None:
    with Connection(broker) as connection:
        connection.Producer(serializer="json").publish(
            {"id": message_id}, exchange="", routing_key=queue
        )


def _connect_at_once(path: str, start: Any, errors: Any) -> None:
    """In a forked process: a connection to the broker's file, made as the broker makes
    its own, once ``start`` lets every process go; any error goes to ``errors``."""
    try:
        start.wait(60)
        connection = sqlite3.connect(path, timeout=embedded_broker.BUSY_TIMEOUT_SECONDS)
        embedded_broker._configure_connection(connection, None)
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
        connection.close()
        if mode != "wal":
            errors.put(f"journal mode {mode}")
    except BaseException as error:  # reported to the test, whatever it is
        errors.put(repr(error))


def test_processes_opening_a_new_broker_file_together_all_get_it(tmp_path):
    # The web process, the worker and its pool may open a new file at the same moment;
    # the first switches it to write-ahead logging, and SQLite refused the others' switch
    # at once ("database is locked"): in about one try in three here, with eight processes.
    context = multiprocessing.get_context("fork")
    errors = context.Queue()
    for attempt in range(40):
        path = str(tmp_path / f"broker-{attempt}.sqlite3")
        start = context.Barrier(8)
        processes = [
            context.Process(target=_connect_at_once, args=(path, start, errors)) for _ in range(8)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(120)
        assert [process.exitcode for process in processes] == [0] * 8
        reported = []
        while not errors.empty():
            reported.append(errors.get())
        assert reported == [], f"attempt {attempt}: {reported}"


def test_it_delivers_every_message_once_to_several_processes_at_once(broker, tmp_path):
    received = tmp_path / "received.txt"
    # Each stops once the three have written the 400 ids, or after a minute without one.
    consumers = [
        clients("consume", broker, ",".join(QUEUES), str(received), "60", "400") for _ in "abc"
    ]
    producers = [clients("produce", broker, ",".join(QUEUES), "200", name) for name in "xy"]

    outcomes = [process.communicate(timeout=120) for process in producers + consumers]

    assert [process.returncode for process in producers + consumers] == [0] * 5, outcomes
    assert not any("database is locked" in err for _, err in outcomes), outcomes
    ids = received.read_text().split()
    assert len(ids) == 400  # none twice
    assert set(ids) == {f"{name}-{number}" for name in "xy" for number in range(200)}
    assert stored_messages(broker) == 0  # taken messages are not kept


def test_a_message_taken_but_not_acknowledged_goes_back_when_its_consumer_stops(broker):
    send(broker, "duels", "duel-1")

    with Connection(broker) as connection:
        assert take(connection, "duels") is not None
    # As when a worker stops by a signal (a warm or cold shutdown) before the task ended.

    with Connection(broker) as connection:
        message = take(connection, "duels")
        assert message is not None and message.payload == {"id": "duel-1"}
        message.ack()
    with Connection(broker) as connection:
        assert take(connection, "duels", within=2) is None


def test_a_rejected_message_goes_back_to_its_queue(broker):
    send(broker, "build", "build-1")

    with Connection(broker) as connection:
        message = take(connection, "build")
        assert message is not None
        # What a worker does with the task of a pool process that died.
        message.reject(requeue=True)
        again = take(connection, "build")
        assert again is not None and again.payload == {"id": "build-1"}
        again.ack()
    assert stored_messages(broker) == 0


def test_a_message_whose_consumer_was_killed_is_not_given_back(broker, tmp_path):
    """What the transport cannot do, unlike Redis after its visibility timeout: the job
    watchdog queues the work again once its lease runs out instead."""
    send(broker, "duels", "duel-1")
    held = tmp_path / "held.txt"
    holder = clients("hold", broker, "duels", str(held))
    try:
        wait_for(held.exists, timeout=30, what="the consumer to take the message")
    finally:
        holder.kill()
        holder.wait(timeout=10)

    with Connection(broker) as connection:
        assert take(connection, "duels", within=2) is None
    assert stored_messages(broker) == 0
