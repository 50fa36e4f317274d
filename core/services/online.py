"""Online play: registering online models, the matchmaking queue, the seat bus.

An online competitor ("model") is registered by its owner for one environment and gets a
model token; its client connects to the gateway with that token, joins the queue, and is
paired by the ladder's matchmaking like any agent. Each version of the model is a
revision, with nothing to build or self-play: it is checked as it plays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    ApiToken,
    Competitor,
    CompetitorKind,
    DuelSeat,
    DuelStatus,
    Environment,
    OnlineSeat,
    Revision,
    TokenScope,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.models.submissions import PUBLIC_BY_DEFAULT
from core.services.accounts import api_token_create
from core.services.revisions import competitor_create_unbuilt, revision_create_unbuilt
from sandboxes.seat_bus import SeatBus
from sandboxes.seat_buses import seat_bus_for

#: What a model token may do: play, and read what its owner may see.
MODEL_TOKEN_SCOPES = (TokenScope.READ, TokenScope.PLAY)
ONLINE_BUILD_LOG = (
    "An online agent: there is nothing to build; its client connects over the network."
)
ONLINE_VALIDATION_LOG = (
    "An online agent: not validated by self-play. Every move it sends is checked by the "
    "referee as it plays, like any agent's."
)


def seat_bus() -> SeatBus:
    """The bus between the gateway and the referees of online duels (the setting
    ``ARENA_ONLINE_BUS_URL``; without one, this process's own)."""
    return seat_bus_for(settings.ARENA_ONLINE_BUS_URL or None)


def online_revision_create(*, competitor: Competitor, created_by: User) -> Revision:
    """The model's next version: a revision with nothing to build or validate. Its
    leaderboard entry starts afresh, as an upload's does."""
    return revision_create_unbuilt(
        competitor=competitor,
        created_by=created_by,
        build_log=ONLINE_BUILD_LOG,
        validation_log=ONLINE_VALIDATION_LOG,
    )


def online_model_register(
    *, owner: User, environment: Environment, name: str, is_public: bool = PUBLIC_BY_DEFAULT
) -> tuple[Competitor, str]:
    """A new online competitor, its first version and a model token; returns the
    competitor and the token's secret (shown once)."""
    with transaction.atomic():
        competitor = competitor_create_unbuilt(
            owner=owner,
            environment=environment,
            name=name,
            is_public=is_public,
            kind=CompetitorKind.ONLINE,
            taken_hint="for a new token of your own model, ask for one on the model",
        )
        OnlineSeat.objects.create(competitor=competitor)
        online_revision_create(competitor=competitor, created_by=owner)
        _, secret = model_token_create(competitor=competitor, name=f"{name} model token")
    return competitor, secret


def model_token_create(*, competitor: Competitor, name: str) -> tuple[ApiToken, str]:
    """Another token for an online competitor (its owner's; shown once)."""
    if not competitor.is_online:
        raise ArenaError(f"{competitor.name} is a hosted agent: it has no model tokens")
    return api_token_create(
        user=competitor.owner, name=name, scopes=MODEL_TOKEN_SCOPES, competitor=competitor
    )


def model_token_renew(*, competitor: Competitor, name: str) -> tuple[ApiToken, str]:
    """A new token for an online competitor, its earlier ones revoked (shown once)."""
    with transaction.atomic():
        ApiToken.objects.filter(competitor=competitor).active().update(revoked_at=timezone.now())
        return model_token_create(competitor=competitor, name=name)


def running_ladders(environment: Environment) -> list[Tournament]:
    """The game's running ladders that new agents join (not a competition's final)."""
    return list(
        Tournament.objects.filter(
            environment=environment,
            format=TournamentFormat.LADDER,
            status=TournamentStatus.RUNNING,
            open_entry=True,
            entrants__isnull=True,
        )
    )


def online_queue_join(*, competitor: Competitor) -> OnlineSeat:
    """Put the model in the matchmaking queue of its environment's running ladder."""
    if competitor.is_disabled:
        raise ArenaError(competitor.disabled_message)
    if not running_ladders(competitor.environment):
        raise ArenaError(
            f"No ladder is running in {competitor.environment.title}, so there is no one to "
            "play: ask the organizers to start one, then join again."
        )
    now = timezone.now()
    seat, _ = OnlineSeat.objects.get_or_create(competitor=competitor)
    OnlineSeat.objects.filter(pk=seat.pk, queued_at__isnull=True).update(queued_at=now)
    OnlineSeat.objects.filter(pk=seat.pk).update(last_seen_at=now)
    seat.refresh_from_db()
    return seat


def online_queue_leave(*, competitor: Competitor) -> None:
    """Out of the queue: no new duel. A duel in play goes on (leaving it loses it)."""
    OnlineSeat.objects.filter(competitor=competitor).update(queued_at=None)


def online_present(competitors: Iterable[Competitor]) -> set[int]:
    """The online competitors whose client holds its event stream now (or long-polled
    within the last seconds): the only ones matchmaking pairs. Presence is the stream, as
    the seat bus sees it; the moment the last one closes, the model is absent."""
    by_seat = {competitor.seat: competitor.pk for competitor in competitors}
    return {by_seat[seat] for seat in seat_bus().present(list(by_seat))}


def online_duels_played(competitors: Iterable[Competitor]) -> dict[int, int]:
    """How many duels each of these competitors has finished (played to the end): one
    grouped count, whatever the number of competitors."""
    ids = [competitor.pk for competitor in competitors]
    counts = dict.fromkeys(ids, 0)
    grouped = (
        DuelSeat.objects.filter(
            duel__status=DuelStatus.SUCCEEDED,
            duel__is_validation=False,
            revision__competitor__in=ids,
        )
        .order_by()
        .values_list("revision__competitor")
        .annotate(played=Count("duel", distinct=True))
    )
    for competitor_id, played in grouped:
        counts[competitor_id] = played
    return counts


def online_seen(*, competitor_ids: Iterable[int]) -> int:
    """The gateway holds a connection of these competitors' clients now (the site shows
    when a model was last seen)."""
    ids = list(competitor_ids)
    if not ids:
        return 0
    return OnlineSeat.objects.filter(competitor_id__in=ids).update(last_seen_at=timezone.now())


class _LocalReferee:
    """Whether this process referees the online games of a bus held in its own memory
    (the embedded default: the gateway process does): ``submit(kind, subject_id)`` hands
    one over, a duel or an evaluation (its job's kind and subject)."""

    def __init__(self) -> None:
        self.submit: Callable[[str, int], bool] | None = None


LOCAL_REFEREE = _LocalReferee()
