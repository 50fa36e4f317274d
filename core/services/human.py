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
from core.jobs.lifecycle import jobs_cancel, jobs_queue
from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelSeat,
    DuelStatus,
    Environment,
    Job,
    JobKind,
    Revision,
    User,
)
from core.models.tournaments import DuelQuerySet
from core.services.revisions import competitor_create_unbuilt, revision_create_unbuilt
from environments.base import Environment as GameEnvironment
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment
from referee.results import match_seed

HUMAN_BUILD_LOG = "A person playing in the browser: there is nothing to build."
HUMAN_VALIDATION_LOG = (
    "A person playing in the browser: not validated. Every move is checked by the referee."
)
#: A game in the browser is one match.
HUMAN_GAME_MATCHES = 1


class TooManyGames(ArenaError):
    """The person has ``ARENA_HUMAN_GAMES_PER_USER`` games going already."""


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


#: Which side a person takes: the one that moves first in the game, the other, or either
#: at random (``human_game_create``).
SIDES = ("first", "second", "random")


def human_games(user: User) -> DuelQuerySet:
    """Every game of ``user`` in the browser, newest first."""
    return (
        Duel.objects.filter(
            seats__revision__competitor__owner=user,
            seats__revision__competitor__kind=CompetitorKind.HUMAN,
        )
        .distinct()
        .order_by("-created_at", "-pk")
    )


def human_games_open(user: User) -> int:
    """The user's games queued or running."""
    return human_games(user).filter(status__in=[DuelStatus.QUEUED, DuelStatus.RUNNING]).count()


def _first_seat(game: GameEnvironment, seed: int) -> int:
    """The seat of the game's one match that moves first (in chess, White: the second)."""
    first = game.first_to_move(match_seed(seed, 0))
    return 0 if first is None else first


def human_game_create(*, user: User, opponent: Revision, side: str = "first") -> Duel:
    """A game of ``user`` against the agent ``opponent``, queued for a referee, the person
    on ``side`` (``SIDES``: moving first, second, or either at random); raises
    ``ArenaError`` when it may not be played."""
    if side not in SIDES:
        raise ArenaError(f"{side!r} is no side: choose first, second or random")
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
    chance = random.SystemRandom()
    seed = chance.randrange(2**31)
    moves_first = side == "first" if side != "random" else chance.random() < 0.5
    # The one match seats duel player 1 first (``seat_rotation``): the person takes the
    # duel seat of the side they chose.
    first = _first_seat(game, seed)
    person_number = first + 1 if moves_first else 2 - first
    limit = settings.ARENA_HUMAN_GAMES_PER_USER
    with transaction.atomic():
        # The user's row lock: two games started at once cannot both pass the count.
        User.objects.select_for_update().get(pk=user.pk)
        if human_games_open(user) >= limit:
            raise TooManyGames(
                f"You have {limit} games going already, the most at once: finish or resign "
                "one first (My games lists them)."
            )
        seat = human_revision(user=user, environment_id=environment.pk)
        revisions = [seat, opponent] if person_number == 1 else [opponent, seat]
        duel = Duel.objects.seated(
            revisions,
            environment=environment,
            num_matches=HUMAN_GAME_MATCHES,
            seed=seed,
        )
        # A duel with a seat on the seat bus: refereed where the bus is reached.
        jobs_queue(kind=JobKind.DUEL, subject_ids=[duel.pk])
    return duel


def human_duel_seat(*, user: User, duel: Duel) -> DuelSeat | None:
    """The user's seat in ``duel``, if they play in it."""
    for seat in duel.players():
        competitor = seat.revision.competitor
        if competitor.is_human and competitor.owner_id == user.pk:
            return seat
    return None


def human_opponent(duel: Duel) -> DuelSeat:
    """The agent's seat in a person's game."""
    return next(seat for seat in duel.players() if not seat.revision.competitor.is_human)


def human_game_rematch(*, user: User, duel: Duel) -> Duel:
    """A new game against the same agent (its newest validated revision), sides swapped."""
    mine = human_duel_seat(user=user, duel=duel)
    if mine is None:
        raise ArenaError(f"There is no game {duel.pk} of yours")
    competitor = human_opponent(duel).revision.competitor
    opponent = Revision.objects.validated().filter(competitor=competitor).order_by("-version")
    newest = opponent.first()
    if newest is None or competitor.is_disabled:
        raise ArenaError(f"{competitor.name} can no longer be played")
    game = make_environment(duel.environment.game)
    moved_first = _first_seat(game, duel.seed) + 1 == mine.number
    return human_game_create(user=user, opponent=newest, side="second" if moved_first else "first")


def human_game_abort(*, user: User, duel: Duel) -> bool:
    """Cancel a game that has not begun for the person: no result is kept (the referee,
    if it plays it already, can no longer record it). False if it was over already."""
    name = user.display_name or "the player"
    return bool(
        jobs_cancel(
            jobs=Job.objects.of(JobKind.DUEL, duel.pk),
            why=f"Aborted by {name} before their first move: no result.",
            running=True,
        )
    )
