"""Online play: where an online competitor stands in the matchmaking queue."""

from __future__ import annotations

from django.db import models

from core.models.submissions import Competitor


class OnlineSeatQuerySet(models.QuerySet["OnlineSeat"]):
    def queued(self) -> OnlineSeatQuerySet:
        """In the matchmaking queue (it is paired only while its client is connected:
        ``core.services.online.online_present``)."""
        return self.filter(queued_at__isnull=False)


class OnlineSeat(models.Model):
    """An online competitor's queue entry and connection, as the gateway last saw it."""

    competitor = models.OneToOneField(
        Competitor, on_delete=models.CASCADE, related_name="online_seat"
    )
    #: When it joined the matchmaking queue; None while it is not in it.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: When a gateway last held a connection of its client (refreshed while one is open;
    #: shown on the site; whether it is connected now is the seat bus's to say).
    last_seen_at = models.DateTimeField(null=True, blank=True)

    objects = OnlineSeatQuerySet.as_manager()

    def __str__(self) -> str:
        return f"online seat of {self.competitor}"

    @property
    def is_queued(self) -> bool:
        return self.queued_at is not None
