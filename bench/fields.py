"""What several benchmarks write first: a bare two-player environment, validated
revisions for its competitors and a rated history, in bulk (no build, no upload, no
referee)."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


def bench_environment(name: str) -> Any:
    """A two-player environment row with minimal limits (its game is never played)."""
    from core.models import Environment

    return Environment.objects.create(
        name=name,
        title=name,
        description="",
        rules="",
        players=2,
        matches_per_duel=2,
        validation_matches=2,
        move_time=1,
        time_bank=1,
        startup_time=1,
        memory_mb=64,
        cpu_seconds=1,
    )


def validated_revisions(competitors: Iterable[Any]) -> list[Any]:
    """A validated first revision of each competitor, uploaded by its owner."""
    from core.models import Revision, StepStatus

    return Revision.objects.bulk_create(
        Revision(
            competitor=competitor,
            version=1,
            uploaded_by=competitor.owner,
            filename="main.py",
            entry_point="main.py",
            source=f"bench/{competitor.name}.py",
            sha256="0" * 64,
            size=1,
            build_status=StepStatus.SUCCEEDED,
            validation_status=StepStatus.SUCCEEDED,
        )
        for competitor in competitors
    )


class BenchField(NamedTuple):
    """A field of ``agents`` competitors (``agent-0``, ...) of one owner in a bare
    environment of its own: each one's validated first revision and fresh rating, in the
    same order."""

    environment: Any
    owner: Any
    revisions: list[Any]
    ratings: list[Any]


def bench_field(name: str, agents: int, *, is_public: bool = False) -> BenchField:
    """The environment ``name``, its owner ``name@example.com`` and its competitors."""
    from core.models import Competitor, Rating
    from core.services.accounts import user_create

    environment = bench_environment(name)
    owner = user_create(
        email=f"{name}@example.com", display_name=name, password="a long bench password 2026"
    )
    competitors = Competitor.objects.bulk_create(
        Competitor(owner=owner, environment=environment, name=f"agent-{i}", is_public=is_public)
        for i in range(agents)
    )
    revisions = validated_revisions(competitors)
    ratings = Rating.objects.bulk_create(Rating(competitor=c) for c in competitors)
    return BenchField(environment, owner, revisions, ratings)


class FinishedDuel(NamedTuple):
    """A duel of a written history: its tournament, its seed, the revisions in seats 1
    and 2, and when it ended (and started, where a page shows it)."""

    tournament: Any
    seed: int
    seats: tuple[Any, Any]
    ended_at: datetime.datetime
    started_at: datetime.datetime | None = None


def finished_duels(environment: Any, duels: Sequence[FinishedDuel]) -> list[Any]:
    """Two-match duels that succeeded, seated, in bulk; their result is a stand-in draw
    (the matches written after them say who won)."""
    from core.models import Duel, DuelResult, DuelStatus

    return Duel.objects.bulk_seated(
        [
            Duel(
                tournament=duel.tournament,
                environment=environment,
                num_matches=2,
                seed=duel.seed,
                status=DuelStatus.SUCCEEDED,
                result=DuelResult.DRAW,
                started_at=duel.started_at,
                ended_at=duel.ended_at,
            )
            for duel in duels
        ],
        [duel.seats for duel in duels],
    )


def rated(matches: Iterable[Any], players: Iterable[tuple[Any, Any]], batch_size: int) -> None:
    """A rating change for each player of each match (``players``: the two players' ratings
    of each match, in order), leaving every rating where it was: what a rated match leaves
    beside its pairing's count (``tallied``), which is what the fit reads."""
    from core.models import RatingChange

    RatingChange.objects.bulk_create(
        (
            RatingChange(
                rating=rating,
                duel_id=match.duel_id,
                match=match,
                mu_before=25,
                sigma_before=8,
                mu_after=25,
                sigma_after=8,
            )
            for match, pair in zip(matches, players, strict=True)
            for rating in pair
        ),
        batch_size=batch_size,
    )


#: Rated pairings as ``tournament_manager.ratings`` counts them when it rates a duel: by
#: (tournament id, seat 1's revision id, seat 2's, first mover), [games, seat 1's wins,
#: draws].
Tally = dict[tuple[int, int, int, int], list[int]]


def tallied(matches: Iterable[Any], seats: Iterable[tuple[Any, Any]], tally: Tally) -> Tally:
    """``tally`` with ``matches`` counted in (``seats``: the revisions in seats 1 and 2 of
    each match's duel, in order); a benchmark writes it once its history is written."""
    for match, (one, two) in zip(matches, seats, strict=True):
        key = (match.duel.tournament_id, one.pk, two.pk, match.first_player)
        counts = tally.setdefault(key, [0, 0, 0])
        counts[0] += 1
        counts[1] += match.scores[0] > match.scores[1]
        counts[2] += match.scores[0] == match.scores[1]
    return tally


def tally_store(tally: Tally, batch_size: int) -> None:
    """The tallied pairings as rows, in the environments' first ratings epoch."""
    from core.models import RatedPairing

    RatedPairing.objects.bulk_create(
        (
            RatedPairing(
                tournament_id=tournament,
                one_id=one,
                two_id=two,
                first_player=first_player,
                epoch=0,
                games=games,
                one_wins=one_wins,
                draws=draws,
            )
            for (tournament, one, two, first_player), (games, one_wins, draws) in tally.items()
        ),
        batch_size=batch_size,
    )
