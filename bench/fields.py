"""What several benchmarks write first: a bare two-player environment and validated
revisions for its competitors, in bulk (no build, no upload)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


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


def rated(matches: Iterable[Any], players: Iterable[tuple[Any, Any]], batch_size: int) -> None:
    """A rating change for each player of each match (``players``: the two players' ratings
    of each match, in order), leaving every rating where it was: what makes a match count
    in a fit (the fit reads the matches, not the ratings)."""
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
