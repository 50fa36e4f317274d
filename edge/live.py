"""Watching a running duel: ``GET /api/v1/online/live/{duel}``, a stream of server-sent
events served by the gateway (``edge.gateway``), which nginx passes on unbuffered.

Each stream looks for the duel's new events every ``ARENA_LIVE_POLL_SECONDS`` (one
indexed query), applies them to its own copy of the game (``reads.live.Spectator``) and
sends what the page shows:

- ``frame`` (``id:`` the last stored batch it includes): the board as the game renders
  it, the last moves, the match results so far. The first one on every connection is the
  current state; with ``Last-Event-ID`` (a browser's ``EventSource`` sends it when it
  reconnects) the stream resumes after that batch instead, losing and repeating nothing;
- ``end``: the duel is over: its result, its page and the replays of its matches; the
  stream closes;
- a comment line (``: ping``) every 15 s without another event.

Open to anyone for a duel whose replays are public, and to nobody else (404, as for a
duel that does not exist). ``ARENA_LIVE_WATCHERS`` streams per process and
``ARENA_LIVE_WATCHERS_PER_ADDRESS`` per client address (429 beyond).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings

from reads.live import (
    LIVE_PREFIX,
    LiveDuel,
    Spectator,
    live_duel,
    live_ending,
    live_events_after,
)

LIVE_PATH = re.compile(re.escape(LIVE_PREFIX) + r"([0-9]{1,18})")
PING_SECONDS = 15.0
#: A browser's EventSource waits this long before it reconnects.
RETRY_MILLISECONDS = 2000


class LiveRefused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


_watchers: collections.Counter[str] = collections.Counter()


@contextlib.contextmanager
def watcher_slot(address: str) -> Iterator[None]:
    """One stream of this process for ``address``; raises ``LiveRefused`` (429) past
    the limits."""
    if _watchers.total() >= settings.ARENA_LIVE_WATCHERS:
        raise LiveRefused(
            429,
            "too_many_watchers",
            "This server holds as many live streams as it may: try again in a minute, "
            "or watch the replay once the duel is over.",
        )
    if _watchers[address] >= settings.ARENA_LIVE_WATCHERS_PER_ADDRESS:
        raise LiveRefused(
            429,
            "too_many_watchers",
            f"Your address holds {_watchers[address]} live streams already, the most "
            "allowed: close one first.",
        )
    _watchers[address] += 1
    try:
        yield
    finally:
        _watchers[address] -= 1
        if _watchers[address] <= 0:
            del _watchers[address]


def last_event_id(value: str) -> int | None:
    """The batch a reconnecting client saw last; raises ``LiveRefused`` (400) for
    anything else."""
    if value == "":
        return None
    if not value.isdigit() or len(value) > 18:
        raise LiveRefused(
            400, "bad_request", "Last-Event-ID must be the id of an event this stream sent."
        )
    return int(value)


async def live_open(duel_id: int) -> LiveDuel:
    """The duel to watch; raises ``LiveRefused`` (404) when it does not exist or is not
    public."""
    duel = await sync_to_async(live_duel, thread_sensitive=False)(duel_id)
    if duel is None:
        raise LiveRefused(
            404, "not_found", f"There is no public duel {duel_id} to watch (or it is private)."
        )
    return duel


def _event(kind: str, body: object, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: ".encode() + orjson.dumps(body) + b"\n\n"


async def live_lines(
    duel: LiveDuel,
    *,
    after: int | None,
    poll_seconds: float,
    max_seconds: float,
    ping_seconds: float = PING_SECONDS,
) -> AsyncGenerator[bytes, None]:
    """The stream of one spectator, in the server-sent events format."""
    fetch = sync_to_async(live_events_after, thread_sensitive=False)
    ending = sync_to_async(live_ending, thread_sensitive=False)
    spectator = Spectator(duel)
    yield f"retry: {RETRY_MILLISECONDS}\n\n".encode()
    # Catch up silently to where the client is (everything, for a new one).
    cursor = 0
    for pk, events in await fetch(duel.pk, 0):
        if after is not None and pk > after:
            break
        spectator.take(events, show=False)
        cursor = pk
    if after is None:
        yield _event("frame", spectator.frame(), cursor)
    loop = asyncio.get_running_loop()
    ends_at = loop.time() + max_seconds
    quiet_since = loop.time()
    while loop.time() < ends_at:
        batches = await fetch(duel.pk, cursor)
        if batches:
            frames: list[dict[str, Any]] = []
            for pk, events in batches:
                frames.extend(spectator.take(events))
                cursor = pk
            yield b"".join(_event("frame", frame, cursor) for frame in frames[-2:])
            quiet_since = loop.time()
        else:
            end = await ending(duel.pk)
            if end is not None:
                yield _event("end", end)
                return
            if loop.time() - quiet_since >= ping_seconds:
                yield b": ping\n\n"
                quiet_since = loop.time()
        await asyncio.sleep(poll_seconds)
