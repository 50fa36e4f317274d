"""Request rates, counted per whoever is asking, with the ``limits`` library.

Every request is counted under one key, by who sends it (``api.auth`` decides who):

- a user token: ``user:<id>``, at ``ARENA_API_TOKEN_RATE``, whichever of the user's
  tokens it is;
- a model token on the REST API's reads: ``model-reads:<competitor id>``, at the token
  rate, apart from its owner's (a leaked model token cannot use the owner's up);
- a model token playing (``/api/v1/online/...``): ``model:<competitor id>``, at
  ``ARENA_ONLINE_RATE`` (every move is a request);
- a person's game page: ``human:<user id>``, at ``ARENA_ONLINE_RATE``;
- anonymous requests: ``address:<client>``, at ``ARENA_API_ANONYMOUS_RATE`` (the client
  of an address: ``api.connections.client_key``, an IPv6 client is its /64);
- tokens that turned out unknown: ``bad-token:<client address>``, at the anonymous rate,
  so that guessing tokens costs the guesser, not the users behind the same address.

So one holder's flood never makes another's request answer 429, even behind one address
(a NAT, a university, a cloud's egress). The counts live where ``ARENA_RATES_URL`` says:
Redis in production (by default the seat bus's, ``ARENA_ONLINE_BUS_URL``), so that
every gateway and web process shares them; this process's memory otherwise (the
embedded default, one process). If the store fails, requests are let through and the
failure logged: a rate limit protects the service, it never stops it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time

from django.conf import settings
from limits import (
    RateLimitItem,
    RateLimitItemPerDay,
    RateLimitItemPerHour,
    RateLimitItemPerMinute,
    RateLimitItemPerSecond,
)
from limits.aio.strategies import MovingWindowRateLimiter as AsyncMovingWindowRateLimiter
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

logger = logging.getLogger(__name__)

_RATE = re.compile(r"\s*(\d+)\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*")
_ITEMS: dict[str, type[RateLimitItem]] = {
    "s": RateLimitItemPerSecond,
    "m": RateLimitItemPerMinute,
    "h": RateLimitItemPerHour,
    "d": RateLimitItemPerDay,
}
#: Every key is under this namespace in the store.
NAMESPACE = "arena-rate"


def parse_rate(rate: str) -> RateLimitItem:
    """``"50/s"``, ``"600/min"``, ``"10/hour"``: requests allowed per window."""
    found = _RATE.fullmatch(rate)
    if found is None:
        raise ValueError(f"{rate!r} is not a rate such as '50/s' or '600/min'")
    return _ITEMS[found.group(2)[0]](int(found.group(1)), namespace=NAMESPACE)


class _Limiters:
    """This process's limiter, and for Redis one per event loop for the async side (a
    connection belongs to the loop it was made on). In memory there is only the
    synchronous one: it does no I/O, so the event loop may call it too, and the site's
    and the gateway's requests share its counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sync: tuple[str, MovingWindowRateLimiter] | None = None
        self._async: dict[asyncio.AbstractEventLoop, tuple[str, AsyncMovingWindowRateLimiter]] = {}

    def sync(self) -> MovingWindowRateLimiter:
        url = settings.ARENA_RATES_URL or "memory://"
        with self._lock:
            if self._sync is None or self._sync[0] != url:
                self._sync = (url, MovingWindowRateLimiter(storage_from_string(url)))
            return self._sync[1]

    def for_loop(self) -> AsyncMovingWindowRateLimiter:
        url = settings.ARENA_RATES_URL
        loop = asyncio.get_running_loop()
        found = self._async.get(loop)
        if found is None or found[0] != url:
            for closed in [other for other in self._async if other.is_closed()]:
                del self._async[closed]
            # redis-py's asyncio client, the one the seat bus uses (not coredis).
            storage = storage_from_string(f"async+{url}", implementation="redispy")
            found = self._async[loop] = (url, AsyncMovingWindowRateLimiter(storage))
        return found[1]


_limiters = _Limiters()


def _wait(reset_at: float) -> float:
    return max(0.001, reset_at - time.time())


def rate_wait(setting: str, key: str) -> float | None:
    """Count one request of ``key`` against the rate in ``setting``: None if it is
    allowed, else the seconds until it would be."""
    item = parse_rate(getattr(settings, setting))
    limiter = _limiters.sync()
    try:
        if limiter.hit(item, key):
            return None
        return _wait(limiter.get_window_stats(item, key).reset_time)
    except Exception:
        logger.exception("The rate store failed; the request is let through")
        return None


async def rate_wait_async(setting: str, key: str) -> float | None:
    """``rate_wait`` for an event loop (the gateway), without blocking it."""
    if not settings.ARENA_RATES_URL:
        return rate_wait(setting, key)
    item = parse_rate(getattr(settings, setting))
    limiter = _limiters.for_loop()
    try:
        if await limiter.hit(item, key):
            return None
        return _wait((await limiter.get_window_stats(item, key)).reset_time)
    except Exception:
        logger.exception("The rate store failed; the request is let through")
        return None


def rates_reset() -> None:
    """Forget every count (tests, and an operator after changing the rates)."""
    _limiters.sync().storage.reset()
