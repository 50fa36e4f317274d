"""What the tournament manager does when another app reports something (``core.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from core.models import Duel
from core.signals import duel_finished
from tournament_manager.services import tournament_duel_finished


@receiver(duel_finished, dispatch_uid="tournament_manager.duel_finished")
def rate_and_settle(*, duel: Duel, **_: object) -> None:
    if duel.tournament_id is not None:
        tournament_duel_finished(duel=duel)
