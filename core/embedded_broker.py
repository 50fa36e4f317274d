"""The embedded default's Celery broker: a SQLite file, no server to run.

Why kombu's SQLAlchemy transport and not its filesystem one (both need no server):

- Taking a message is a SQLite transaction (``BEGIN IMMEDIATE``, select, delete, commit),
  so of several worker processes exactly one gets it. The filesystem transport takes a
  message by moving its file to the system's temporary folder: across file systems that is
  a copy then a delete, which two workers can both do (the same task run twice), and it
  takes no lock, so it can take a file another process is still writing (an empty message,
  lost).
- Queues are rows, so the four of ``CELERY_TASK_ROUTES`` live in one file beside the
  database. The price is one pinned dependency, SQLAlchemy.

What neither transport can do, and so this one does not: give back a message whose
worker was killed outright (SIGKILL, a crash of the machine). kombu's SQLAlchemy transport
hides a taken message for good, with no visibility timeout as Redis has. Everything else
of late acknowledgement holds: a pool process that dies has its task put back by the
worker (``CELERY_TASK_REJECT_ON_WORKER_LOST``), and a worker stopped by a signal puts back
the messages it took and had not finished. A killed worker's work is recovered by the
job watchdog (``core/jobs/watchdog.py``), as in production: the lease of its job (a build,
validation, publication, duel or evaluation) runs out and the watchdog queues it again and
sends a new message; a job still queued whose message was lost any other way (a power loss
included, see ``_configure_connection``) is sent again after ``ARENA_RESEND_AFTER_SECONDS``.

Three changes to kombu's transport, each for several processes on one SQLite file:

- write-ahead logging and a 30 s busy timeout, so readers never wait for the writer and a
  writer waits for the other instead of failing with "database is locked" (and the switch
  of a new file to write-ahead logging asked again while another process makes it);
- an engine per process: a SQLite connection must never cross a fork (Celery's pool);
- a taken message is deleted, where kombu keeps it forever, hidden and never read again,
  so the file would grow by every task ever run.

It polls the queues every ``polling_interval`` seconds when they are empty.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from json import loads
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.transport import sqlalchemy
from kombu.transport.sqlalchemy.models import metadata
from kombu.utils.encoding import bytes_to_str
from sqlalchemy import create_engine, event, make_url, select, text
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import sessionmaker

#: Seconds a writer waits for another one before it gives up.
BUSY_TIMEOUT_SECONDS = 30

# (process id, database URL) -> (engine, session factory)
_ENGINES: dict[tuple[int, str], tuple[Any, Any]] = {}
_ENGINES_LOCK = threading.Lock()


def _configure_connection(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    try:
        _write_ahead_logging(cursor)
        # With write-ahead logging a commit is durable once checkpointed; a power loss may
        # undo the last few messages (the watchdog sends them again), never corrupt
        # the file.
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _write_ahead_logging(cursor: Any) -> None:
    """The file in write-ahead logging mode. A new file is switched by the first connection;
    while it does, SQLite refuses another connection's switch at once ("database is
    locked", without the busy timeout's wait), which the web process, the worker and its
    pool opening a new broker file together met: asked again until the file is in it."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal":
                return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
        if time.monotonic() >= deadline:
            raise sqlite3.OperationalError("the broker's file could not be put in WAL mode")
        time.sleep(0.01)


class Channel(sqlalchemy.Channel):
    def _open(self) -> tuple[Any, Any]:
        # The broker URL's "host" is the SQLAlchemy URL of the file (kombu's transport).
        client = self.connection.client
        assert client is not None and client.hostname is not None
        url = client.hostname
        key = (os.getpid(), url)
        with _ENGINES_LOCK:
            if key not in _ENGINES:
                database = make_url(url).database
                if database:
                    Path(database).parent.mkdir(parents=True, exist_ok=True)
                engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_SECONDS})
                event.listen(engine, "connect", _configure_connection)
                with engine.begin() as connection:
                    # One process at a time: of several creating the tables of a new
                    # file at once, the others would fail ("table already exists").
                    connection.exec_driver_sql("BEGIN IMMEDIATE")
                    metadata.create_all(connection)
                _ENGINES[key] = engine, sessionmaker(bind=engine)
            return _ENGINES[key]

    def _get_or_create(self, queue: str) -> Any:
        """The queue's row; two processes creating it at once both get it."""
        found = self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).first()
        if found is not None:
            return found
        self.session.execute(
            insert(self.queue_cls.__table__).values(name=queue).on_conflict_do_nothing()
        )
        self.session.commit()
        return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    def _queue_id(self, queue: str) -> int:
        """The queue's row id, asked once per channel (queue rows are never deleted)."""
        known: dict[str, int] = self.__dict__.setdefault("_queue_ids", {})
        if queue not in known:
            known[queue] = self._get_or_create(queue).id
        return known[queue]

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        """Take the queue's oldest message: deleted in the transaction that reads it."""
        queue_id = self._queue_id(queue)
        message = self.message_cls
        session = self.session
        # An idle worker polls every queue a few times a second: a look without the write
        # lock first (readers never wait in WAL mode), the lock only for a message.
        waiting = session.execute(
            select(message.id).where(message.queue_id == queue_id).limit(1)
        ).first()
        session.rollback()
        if waiting is None:
            raise Empty()
        try:
            # The write lock first: a read that turns into a write later fails at once
            # when another process wrote in between.
            session.execute(text("BEGIN IMMEDIATE"))
            row = session.execute(
                select(message.id, message.payload)
                .where(message.queue_id == queue_id)
                .order_by(message.sent_at, message.id)
                .limit(1)
            ).first()
            if row is not None:
                session.execute(message.__table__.delete().where(message.id == row.id))
            session.commit()
        except BaseException:
            session.rollback()
            raise
        if row is None:  # another process took it meanwhile
            raise Empty()
        return loads(bytes_to_str(row.payload))


class Transport(sqlalchemy.Transport):
    Channel = Channel
    polling_interval = 0.2

    # celery-types describes kombu's base Transport (**kwargs), not the virtual transport
    # this subclasses, whose drain_events takes timeout.
    def drain_events(  # type: ignore[override]
        self, connection: Any, timeout: float | None = None
    ) -> None:
        # Celery's worker waits up to 2 s here before it looks at its signals: a stop
        # would wait that long for nothing.
        super().drain_events(connection, timeout=min(timeout, 0.5) if timeout else timeout)
