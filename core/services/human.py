"""People playing agents in the browser.

A person plays through a seat of their own per environment: a competitor of kind
``human`` (created on their first game there), whose seat on the seat bus the site
drives, exactly as an online agent's client drives its own (``sandboxes.remote``). The
referee, its checks and its faults are the same as for any seat; only the clock is a
person's (``ARENA_HUMAN_MOVE_SECONDS`` a move, ``ARENA_HUMAN_TIME_BANK_SECONDS`` a
match). Such games are outside every tournament: never rated, in no standings and on no
leaderboard (a human seat is not ``Revision.objects.validated()``), and kept, with their
replays, like any duel.
"""

from __future__ import annotations

import random

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from core.errors import ArenaError
from core.jobs.lifecycle import jobs_queue
from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelStatus,
    Environment,
    JobKind,
    Revision,
    User,
)
from core.services.revisions import competitor_create_unbuilt, revision_create_unbuilt
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment

HUMAN_BUILD_LOG = "A person playing in the browser: there is nothing to build."
HUMAN_VALIDATION_LOG = (
    "A person playing in the browser: not validated. Every move is checked by the referee."
)
#: A game in the browser is one match: the person moves first.
HUMAN_GAME_MATCHES = 1


def human_seat_name(user: User) -> str:
    """The name of the user's seat in every environment (``ada-human-12``)."""
    return f"{slugify(user.display_name)[:40] or 'player'}-human-{user.pk}"


def human_revision(*, user: User, environment_id: int) -> Revision:
    """The user's seat in the environment: created with its first game there."""
    competitor = Competitor.objects.filter(
        owner=user, environment_id=environment_id, kind=CompetitorKind.HUMAN
    ).first()
    if competitor is None:
        competitor = competitor_create_unbuilt(
            owner=user,
            environment=Environment.objects.get(pk=environment_id),
            name=human_seat_name(user),
            is_public=True,
            kind=CompetitorKind.HUMAN,
        )
    revision = competitor.revisions.order_by("-version").first()
    if revision is None:
        revision = revision_create_unbuilt(
            competitor=competitor,
            created_by=user,
            build_log=HUMAN_BUILD_LOG,
            validation_log=HUMAN_VALIDATION_LOG,
        )
    return revision


def human_games_open(user: User) -> int:
    """The user's games queued or running."""
    return (
        Duel.objects.filter(
            seats__number=1,
            seats__revision__competitor__owner=user,
            seats__revision__competitor__kind=CompetitorKind.HUMAN,
        )
        .filter(status__in=[DuelStatus.QUEUED, DuelStatus.RUNNING])
        .count()
    )


def human_game_create(*, user: User, opponent: Revision) -> Duel:
    """A game of ``user`` (player 1, moving first) against the agent ``opponent``,
    queued for a referee; raises ``ArenaError`` when it may not be played."""
    environment = opponent.competitor.environment
    if not Revision.objects.validated().filter(pk=opponent.pk).exists():
        raise ArenaError(f"{opponent} cannot be played: only validated agents can")
    if opponent.competitor.has_seat:
        raise ArenaError(f"{opponent} plays over the network: play an uploaded or LLM agent")
    try:
        game = make_environment(environment.game)
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        raise ArenaError(f"{environment.title} is no longer installed") from None
    if game.num_players != 2:
        raise ArenaError(
            f"{environment.title} is played by {game.num_players} players: a game in the "
            "browser seats you against one agent, in a two-player game"
        )
    if game.simultaneous:
        raise ArenaError(
            f"{environment.title} is played with simultaneous moves: only turn-based games "
            "can be played in the browser"
        )
    limit = settings.ARENA_HUMAN_GAMES_PER_USER
    with transaction.atomic():
        # The user's row lock: two games started at once cannot both pass the count.
        User.objects.select_for_update().get(pk=user.pk)
        if human_games_open(user) >= limit:
            raise ArenaError(
                f"You have {limit} games going already, the most at once: finish one first."
            )
        seat = human_revision(user=user, environment_id=environment.pk)
        duel = Duel.objects.seated(
            [seat, opponent],
            environment=environment,
            num_matches=HUMAN_GAME_MATCHES,
            seed=random.SystemRandom().randrange(2**31),
        )
        # A duel with a seat on the seat bus: refereed where the bus is reached.
        jobs_queue(kind=JobKind.DUEL, subject_ids=[duel.pk])
    return duel


def human_duel_seat(*, user: User, duel: Duel) -> Competitor | None:
    """The user's seat in ``duel``, if they play in it."""
    competitor = duel.players()[0].revision.competitor
    if competitor.is_human and competitor.owner_id == user.pk:
        return competitor
    return None
