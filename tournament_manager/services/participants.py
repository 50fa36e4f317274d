"""A participant taken out of its tournament."""

from __future__ import annotations

from django.db import transaction

from core.models import Duel, Participant, Tournament
from tournament_manager.services.scheduling import duels_cancel_queued
from tournament_manager.services.settlement import tournament_settle


def participant_withdraw(*, participant: Participant, reason: str = "withdrew") -> bool:
    """Take a participant out (its revision was disabled or, in a ladder, replaced).

    Its queued duels are cancelled; the ones it played stay in the standings, where it
    ranks last. Returns False if it had already withdrawn.
    """
    with transaction.atomic():
        # The tournament's row first, as in every writer of its participants' standings.
        tournament = Tournament.objects.select_for_update().get(pk=participant.tournament_id)
        withdrawn = Participant.objects.filter(pk=participant.pk, withdrawn=False).update(
            withdrawn=True
        )
        if not withdrawn:
            return False
        revision = participant.revision_id
        duels_cancel_queued(
            Duel.objects.filter(tournament_id=participant.tournament_id).of_revision(revision),
            f"{participant.revision} {reason}",
        )
        tournament_settle(tournament=tournament, rerank=True)
    participant.withdrawn = True
    return True
