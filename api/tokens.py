"""What a token speaks for: looking tokens up by their hash, recording their use, and the
gateway's own record of the model tokens it holds, checked again every second.

Who may do what with a token is ``api.auth``'s to say; this module only finds out what a
token is now (``Holder``), and tells a gateway's open streams when a model token stops
playing (revoked, its model disabled or deleted, its owner deactivated).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone

from core.models import ApiToken, TokenScope
from core.services.online import seat_bus

logger = logging.getLogger(__name__)

#: ``last_used_at`` is written at most this often per token (not on every request).
LAST_USED_PRECISION = timedelta(minutes=1)
#: How often every model token a gateway process holds a stream or a recent request of
#: is checked again (one query for all): a token revoked, or its model disabled or
#: deleted, stops working, and its streams close, within this.
TOKEN_RECHECK_SECONDS = 1.0
#: A token no request or stream has used for this long is forgotten by the process.
TOKEN_FORGET_SECONDS = 60.0


@dataclass(frozen=True)
class Holder:
    """What a valid token speaks for."""

    token_id: int
    digest: str
    user_id: int
    scopes: frozenset[str]
    #: A model token's online competitor; None for a user token.
    competitor_id: int | None = None
    #: Its seat on the seat bus.
    seat: str = ""
    #: Why its competitor does not play ("" when it does): disabled by its owner or the
    #: organizers (``Competitor.disabled_message``).
    disabled: str = ""

    @property
    def is_model(self) -> bool:
        return self.competitor_id is not None

    @property
    def model_id(self) -> int:
        """A model token's online competitor: online play's operations take no other
        token."""
        assert self.competitor_id is not None
        return self.competitor_id

    @property
    def plays(self) -> bool:
        """A model token that may play its model now."""
        return self.is_model and TokenScope.PLAY in self.scopes and not self.disabled


def tokens_of(digests: Iterable[str]) -> list[ApiToken]:
    """The active tokens with these hashes, of active users."""
    return list(
        ApiToken.objects.active()
        .select_related("competitor", "user")
        .filter(token_hash__in=list(digests), user__is_active=True)
    )


def holder_of(token: ApiToken) -> Holder:
    return Holder(
        token_id=token.pk,
        digest=token.token_hash,
        user_id=token.user_id,
        scopes=token.scope_set,
        competitor_id=token.competitor_id,
        seat=token.competitor.seat if token.competitor else "",
        disabled=(
            token.competitor.disabled_message
            if token.competitor and token.competitor.is_disabled
            else ""
        ),
    )


def holders_of(digests: Iterable[str]) -> dict[str, Holder]:
    return {token.token_hash: holder_of(token) for token in tokens_of(digests)}


def tokens_used(token_ids: Iterable[int]) -> None:
    """Record that these tokens were used now (the profile page's "Last used"), at most
    once every ``LAST_USED_PRECISION`` each."""
    now = timezone.now()
    ApiToken.objects.filter(pk__in=list(token_ids)).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_PRECISION)
    ).update(last_used_at=now)


def token_used(token: ApiToken) -> None:
    """``tokens_used`` for one token already read, without a query when it is recent."""
    last = token.last_used_at
    if last is None or timezone.now() - last > LAST_USED_PRECISION:
        tokens_used([token.pk])


def poll_connection(holder: Holder) -> str:
    """A long-polling client's connection on the seat bus (``/api/v1/online/next``)."""
    return f"poll-{holder.token_id}"


@dataclass
class _Known:
    holder: Holder | None
    used_at: float
    #: Streams of this token open now: each is told when the token stops playing.
    watchers: set[asyncio.Event] = field(default_factory=set)


def _recheck(digests: list[str], used: set[int]) -> dict[str, Holder]:
    # A gateway that only holds streams and takes replies never runs Django's request
    # signals: a connection the database dropped (a restart) is replaced here.
    close_old_connections()
    if used:
        tokens_used(used)
    return holders_of(digests)


class TokenChecks:
    """The tokens one event loop of a gateway has seen, and what each speaks for: checked
    again every ``TOKEN_RECHECK_SECONDS``, all in one query, by a task that runs while
    any is in use. When a model token stops playing, its open streams are told at once
    and its long polls' presence ends."""

    def __init__(self) -> None:
        self.known: dict[str, _Known] = {}
        self._task: asyncio.Task[None] | None = None
        self._used: set[int] = set()

    async def holder(self, digest: str) -> Holder | None:
        """What ``digest`` speaks for now (None: nothing)."""
        now = time.monotonic()
        known = self.known.get(digest)
        if known is None:
            found = (await sync_to_async(holders_of)([digest])).get(digest)
            if found is None:
                return None
            if len(self.known) > 50_000:
                self._forget(now, everything_idle=True)
            known = self.known[digest] = _Known(found, now)
            self._start()
        known.used_at = now
        if known.holder is not None:
            self._used.add(known.holder.token_id)
        return known.holder

    @contextlib.asynccontextmanager
    async def watch(self, digest: str) -> AsyncIterator[asyncio.Event]:
        """An event set when the token stops playing, for as long as a stream holds it."""
        known = self.known.setdefault(digest, _Known(None, time.monotonic()))
        stopped = asyncio.Event()
        known.watchers.add(stopped)
        self._start()
        try:
            yield stopped
        finally:
            known.watchers.discard(stopped)
            known.used_at = time.monotonic()

    def now(self, digest: str) -> Holder | None:
        """What ``digest`` was found to speak for at the last check."""
        known = self.known.get(digest)
        return known.holder if known is not None else None

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._recheck_loop())

    def _forget(self, now: float, *, everything_idle: bool = False) -> None:
        for digest, known in list(self.known.items()):
            idle = now - known.used_at >= TOKEN_FORGET_SECONDS
            if not known.watchers and (idle or everything_idle):
                del self.known[digest]

    async def _recheck_loop(self) -> None:
        while self.known:
            await asyncio.sleep(TOKEN_RECHECK_SECONDS)
            try:
                await self.recheck()
            except Exception:
                # Tried again in a second; the streams stay open meanwhile (the database
                # being away stops every game anyway).
                logger.exception("Checking the gateway's tokens again failed")
            self._forget(time.monotonic())

    async def recheck(self) -> None:
        """Check every known token again; tell the streams of those that stopped playing."""
        used, self._used = self._used, set()
        digests = list(self.known)
        fresh = await sync_to_async(_recheck)(digests, used)
        for digest in digests:
            known = self.known.get(digest)
            if known is None:
                continue
            before, known.holder = known.holder, fresh.get(digest)
            if known.holder is not None and known.holder.plays:
                continue
            for stopped in known.watchers:
                stopped.set()
            if before is not None and before.plays:
                # Its long polls' presence too: the model is absent from now on.
                with contextlib.suppress(Exception):
                    await seat_bus().connection_close(before.seat, poll_connection(before))


_checks: dict[asyncio.AbstractEventLoop, TokenChecks] = {}


def token_checks() -> TokenChecks:
    """This event loop's ``TokenChecks``."""
    loop = asyncio.get_running_loop()
    checks = _checks.get(loop)
    if checks is None:
        for closed in [other for other in _checks if other.is_closed()]:
            del _checks[closed]
        checks = _checks[loop] = TokenChecks()
    return checks
