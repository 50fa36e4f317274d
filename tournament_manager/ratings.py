"""openskill ratings (Plackett-Luce, mu 25, sigma 25/3), updated from every match of two
or more players."""

from __future__ import annotations

from django.db import transaction
from openskill.models import PlackettLuce

from core.models import Competitor, Duel, Rating, RatingChange
from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA
from referee.results import ranks_from_scores

_MODEL = PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)


def rating_for(competitor: Competitor) -> Rating:
    rating, _ = Rating.objects.get_or_create(competitor=competitor)
    return rating


def ratings_update_from_duel(*, duel: Duel) -> None:
    """Rate every match of a finished duel in order, logging each change: one team of one
    per player, ranked by the match's scores (equal scores tie), so a duel of more than two
    players updates every one of them at once.

    Self-play, and duels in which one competitor holds two seats, change nothing.
    """
    competitors = [revision.competitor for revision in duel.revisions()]
    if len({competitor.pk for competitor in competitors}) < len(competitors):
        return
    with transaction.atomic():
        for competitor in competitors:
            rating_for(competitor)
        locked = {
            rating.competitor_id: rating
            for rating in Rating.objects.select_for_update().filter(competitor__in=competitors)
        }
        ratings = [locked[competitor.pk] for competitor in competitors]
        changes = []
        for match in duel.matches.order_by("index"):
            before = [(rating.mu, rating.sigma) for rating in ratings]
            teams = _MODEL.rate(
                [[_MODEL.rating(mu=rating.mu, sigma=rating.sigma)] for rating in ratings],
                # A copy typed as openskill's annotation asks (list is invariant).
                ranks=list[float](ranks_from_scores(match.scores)),
            )
            for rating, [new], (mu, sigma) in zip(ratings, teams, before, strict=True):
                rating.mu, rating.sigma = new.mu, new.sigma
                rating.games += 1
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
        for rating in ratings:
            rating.save()
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
