"""openskill ratings (Plackett-Luce, mu 25, sigma 25/3), updated from every match."""

from __future__ import annotations

from django.db import transaction
from openskill.models import PlackettLuce

from core.models import Competitor, Duel, Match, Rating, RatingChange
from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA

_MODEL = PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)


def rating_for(competitor: Competitor) -> Rating:
    rating, _ = Rating.objects.get_or_create(competitor=competitor)
    return rating


def _ranks(match: Match) -> list[int]:
    if match.player_1_score > match.player_2_score:
        return [1, 2]
    if match.player_2_score > match.player_1_score:
        return [2, 1]
    return [1, 1]


def ratings_update_from_duel(*, duel: Duel) -> None:
    """Rate every match of a finished duel in order, logging each change.

    Self-play and duels between two revisions of one competitor change nothing.
    """
    first = duel.revision_1.competitor
    second = duel.revision_2.competitor
    if first.pk == second.pk:
        return
    with transaction.atomic():
        ratings = {
            rating.competitor_id: rating
            for rating in Rating.objects.select_for_update().filter(
                competitor__in=[rating_for(first).competitor, rating_for(second).competitor]
            )
        }
        one, two = ratings[first.pk], ratings[second.pk]
        changes = []
        for match in duel.matches.order_by("index"):
            before = [(one.mu, one.sigma), (two.mu, two.sigma)]
            [[new_one], [new_two]] = _MODEL.rate(
                [
                    [_MODEL.rating(mu=one.mu, sigma=one.sigma)],
                    [_MODEL.rating(mu=two.mu, sigma=two.sigma)],
                ],
                ranks=_ranks(match),
            )
            one.mu, one.sigma, two.mu, two.sigma = (
                new_one.mu,
                new_one.sigma,
                new_two.mu,
                new_two.sigma,
            )
            one.games += 1
            two.games += 1
            for rating, (mu, sigma) in ((one, before[0]), (two, before[1])):
                changes.append(
                    RatingChange(
                        rating=rating,
                        duel=duel,
                        match=match,
                        mu_before=mu,
                        sigma_before=sigma,
                        mu_after=rating.mu,
                        sigma_after=rating.sigma,
                    )
                )
        one.save()
        two.save()
        RatingChange.objects.bulk_create(changes)


def ratings_reset(*, environment_id: int | None = None) -> int:
    """Back to mu 25, sigma 25/3, logged as a reset; returns how many ratings changed."""
    ratings = Rating.objects.all()
    if environment_id is not None:
        ratings = ratings.filter(competitor__environment_id=environment_id)
    count = 0
    with transaction.atomic():
        for rating in ratings.select_for_update():
            RatingChange.objects.create(
                rating=rating,
                reason="reset",
                mu_before=rating.mu,
                sigma_before=rating.sigma,
                mu_after=DEFAULT_MU,
                sigma_after=DEFAULT_SIGMA,
            )
            rating.mu, rating.sigma, rating.games = DEFAULT_MU, DEFAULT_SIGMA, 0
            rating.save()
            count += 1
    return count
