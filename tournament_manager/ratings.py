"""openskill ratings (Plackett-Luce, mu 25, sigma 25/3), updated from every distinct match
of two or more players.

A match identical to an earlier one of its duel (the same seats, actions and scores) is
evidence already counted: two deterministic agents in a game without an opening
(``referee.openings``) replay one match over and over. It is rated once, so the ratings,
the rated pairings and the leaderboard's match counts, which read them, count it once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from django.db import transaction
from django.db.models import F
from openskill.models import PlackettLuce

from core.models import (
    Competitor,
    Duel,
    Environment,
    Match,
    RatedPairing,
    Rating,
    RatingChange,
    Revision,
)
from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA
from referee.results import ranks_from_scores

_MODEL = PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)


def rating_for(competitor: Competitor) -> Rating:
    rating, _ = Rating.objects.get_or_create(competitor=competitor)
    return rating


def ratings_update_from_duel(*, duel: Duel) -> None:
    """Rate every distinct match of a finished duel in order (``distinct_matches``), logging
    each change: one team of one
    per player, ranked by the match's scores (equal scores tie), so a duel of more than two
    players updates every one of them at once; a duel of two counts its matches in its
    rated pairings (``RatedPairing``), in the same transaction.

    Self-play, and duels in which one competitor holds two seats, change nothing.
    """
    revisions = duel.revisions()
    competitors = [revision.competitor for revision in revisions]
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
        matches = distinct_matches(duel.matches.order_by("index"))
        for match in matches:
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
        if len(revisions) == 2 and duel.tournament_id is not None:
            _pairings_count(duel, revisions, matches)


def distinct_matches(matches: Iterable[Match]) -> list[Match]:
    """``matches`` (of one duel) less those identical to an earlier one: the same player in
    each seat and the same actions, step by step. And the same scores: a match ended by a
    fault does not record the answer at fault, so two that differ only in who failed (or
    how) are two."""
    seen: set[str] = set()
    distinct = []
    for match in matches:
        played = json.dumps([match.seats, match.actions, match.scores], sort_keys=True)
        if played not in seen:
            seen.add(played)
            distinct.append(match)
    return distinct


def _pairings_count(duel: Duel, revisions: list[Revision], matches: list[Match]) -> None:
    """Add a rated duel's matches to its pairings, by first mover. Its caller holds the
    ratings' rows, and a reset of the epoch takes them first: the epoch read here is the
    one these ratings were changed in."""
    assert duel.tournament_id is not None
    epoch = Environment.objects.values_list("ratings_epoch", flat=True).get(pk=duel.environment_id)
    counted: Counter[tuple[int, str]] = Counter()
    for match in matches:
        one, two = match.scores[0], match.scores[1]
        counted[match.first_player, "games"] += 1
        counted[match.first_player, "one_wins"] += one > two
        counted[match.first_player, "draws"] += one == two
    for first_player in sorted({first for first, _ in counted}):
        pairing, _ = RatedPairing.objects.get_or_create(
            tournament_id=duel.tournament_id,
            one=revisions[0],
            two=revisions[1],
            first_player=first_player,
            epoch=epoch,
        )
        RatedPairing.objects.filter(pk=pairing.pk).update(
            **{
                field: F(field) + counted[first_player, field]
                for field in ("games", "one_wins", "draws")
            }
        )


def ratings_reset(*, environment_id: int | None = None) -> int:
    """Back to mu 25, sigma 25/3, logged as a reset; returns how many ratings changed. The
    environment's ratings epoch moves on: its leaderboard then reads only the matches rated
    after the reset."""
    ratings = Rating.objects.all()
    environments = Environment.objects.all()
    if environment_id is not None:
        ratings = ratings.filter(competitor__environment_id=environment_id)
        environments = environments.filter(pk=environment_id)
    count = 0
    with transaction.atomic():
        # The ratings first, as a duel's rating takes them: a duel rated meanwhile is
        # counted in the old epoch, and its changes come before the reset's.
        locked = list(ratings.select_for_update())
        environments.update(ratings_epoch=F("ratings_epoch") + 1)
        for rating in locked:
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
