"""Online play: where an online competitor stands in the matchmaking queue."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.models.submissions import Competitor


class OnlineSeatQuerySet(models.QuerySet["OnlineSeat"]):
    def available(self, now: datetime | None = None) -> OnlineSeatQuerySet:
        """In the queue and connected: what matchmaking may pair."""
        return self.filter(
            queued_at__isnull=False, last_seen_at__gte=_seen_since(now or timezone.now())
        )


def _seen_since(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.ARENA_ONLINE_PRESENCE_SECONDS)


class OnlineSeat(models.Model):
    """An online competitor's queue entry and connection, as the gateway last saw it."""

    competitor = models.OneToOneField(
        Competitor, on_delete=models.CASCADE, related_name="online_seat"
    )
    #: When it joined the matchmaking queue; None while it is not in it.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: When a gateway last held a connection of its client (refreshed while one is open).
    last_seen_at = models.DateTimeField(null=True, blank=True)
    #: Duels it has played online.
    duels_played = models.PositiveIntegerField(default=0)

    objects = OnlineSeatQuerySet.as_manager()

    def __str__(self) -> str:
        return f"online seat of {self.competitor}"

    @property
    def is_queued(self) -> bool:
        return self.queued_at is not None

    def is_connected(self, now: datetime | None = None) -> bool:
        return self.last_seen_at is not None and self.last_seen_at >= _seen_since(
            now or timezone.now()
        )
