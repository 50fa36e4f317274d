"""Test duels, or requested duels (``Duel.requested_by``): an owner plays their agent
against an agent of their choice, at once and unrated (Botzone's "create a match",
CodinGame's "Play"), to see how it does before a ladder rates it. The duel is queued as
any duel (``core.jobs``) and kept with its replays; it has no tournament, so nothing rates
it. A user may start ``ARENA_TEST_DUELS_PER_HOUR`` an hour.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.jobs.lifecycle import jobs_queue
from core.models import Competitor, Duel, JobKind, Revision, User

HOUR = timedelta(hours=1)


def requested_duel_revision(competitor: Competitor) -> Revision:
    """The revision of ``competitor`` a test duel plays: its newest validated one."""
    revision = (
        Revision.objects.validated().filter(competitor=competitor).order_by("-version").first()
    )
    if revision is None:
        raise ArenaError(f"{competitor.name} has no validated revision to play yet")
    return revision


def _playable(competitor: Competitor, whose: str) -> None:
    if competitor.is_disabled:
        raise ArenaError(competitor.disabled_message)
    if competitor.has_seat:
        raise ArenaError(
            f"{whose} {competitor.name} plays over the network (its client or a person): "
            "a test duel plays uploaded agents and LLM players"
        )


def requested_duel_create(*, user: User, competitor: Competitor, opponent: Competitor) -> Duel:
    """A duel of the user's ``competitor`` (seat 1) against ``opponent`` (seat 2), each's
    newest validated revision, of the game's usual length, queued now. The caller checked
    that the user owns ``competitor`` and may see ``opponent``. ArenaError says why not."""
    if not competitor.is_managed_by(user):
        raise ArenaError(f"{competitor.name} is not yours: test duels play your own agents")
    environment = competitor.environment
    if opponent.environment_id != environment.pk:
        raise ArenaError(f"{opponent.name} plays another game than {environment.title}")
    if opponent.pk == competitor.pk:
        raise ArenaError("pick another agent than itself: self-play is its validation")
    if environment.players != 2:
        raise ArenaError(
            f"{environment.title} is played by {environment.players}: a test duel seats "
            "your agent against one other, in a two-player game"
        )
    _playable(competitor, "your")
    _playable(opponent, "the opponent")
    if opponent.is_llm and opponent.owner_id != user.pk:
        raise ArenaError(
            f"{opponent.name} is another user's LLM player: its duels spend its owner's "
            "tokens, so test duels play it only for its owner"
        )
    seats = [requested_duel_revision(competitor), requested_duel_revision(opponent)]
    limit = settings.ARENA_TEST_DUELS_PER_HOUR
    with transaction.atomic():
        # The user's row lock: two requests at once cannot both pass the count.
        User.objects.select_for_update().get(pk=user.pk)
        since = timezone.now() - HOUR
        recent = Duel.objects.filter(requested_by=user, created_at__gte=since)
        if recent.count() >= limit:
            oldest = recent.order_by("created_at").values_list("created_at", flat=True)[0]
            next_at = timezone.localtime(oldest + HOUR)
            raise ArenaError(
                f"you started {limit} test duel{'' if limit == 1 else 's'} in the past hour, "
                "the most; the next one "
                f"can start at {next_at:%H:%M} ({next_at:%Z})"
            )
        duel = Duel.objects.seated(
            seats,
            environment=environment,
            num_matches=environment.matches_per_duel,
            seed=random.SystemRandom().randrange(2**31),
            requested_by=user,
        )
        jobs_queue(kind=JobKind.DUEL, subject_ids=[duel.pk])
    return duel
