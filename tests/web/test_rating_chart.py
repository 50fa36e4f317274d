"""The rating history chart on the competitor page."""

from __future__ import annotations

import itertools
import re

import pytest
from django.test import Client

from core.models import RatingChange
from reads.charts import MAX_POINTS, RatingPoint, downsample, nice_ticks, rating_chart_svg
from tests.factories import RatingChangeFactory, RatingFactory

pytestmark = pytest.mark.django_db


def polyline_points(page: str, css_class: str) -> list[str]:
    match = re.search(rf'<polyline class="{css_class}" points="([^"]*)"', page)
    assert match, f"no {css_class} line"
    return match.group(1).split()


def add_changes(rating, count: int, *, resets: tuple[int, ...] = ()) -> None:
    mu, sigma = rating.mu, rating.sigma
    for number in range(1, count + 1):
        if number in resets:
            RatingChangeFactory(
                rating=rating,
                reason="reset",
                mu_before=mu,
                sigma_before=sigma,
                mu_after=25.0,
                sigma_after=25.0 / 3,
            )
            mu, sigma = 25.0, 25.0 / 3
        else:
            RatingChangeFactory(rating=rating, mu_before=mu, sigma_before=sigma)
            mu, sigma = mu + 1, sigma * 0.95
        rating.mu, rating.sigma = mu, sigma


def test_it_draws_one_point_per_change_with_mu_and_the_leaderboard_line(client, bobs_bot):
    rating = RatingFactory(competitor=bobs_bot)
    add_changes(rating, 7)

    response = client.get(bobs_bot.get_absolute_url())

    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("<svg") == 1
    assert len(polyline_points(page, "rating-chart-mu")) == 7
    assert len(polyline_points(page, "rating-chart-conservative")) == 7
    assert 'class="rating-chart-band"' in page
    assert 'role="img"' in page and "aria-label=" in page
    assert "<title>Rating over 7 changes" in page
    assert "No rated games yet." not in page


def test_it_marks_resets(client, bobs_bot):
    rating = RatingFactory(competitor=bobs_bot)
    add_changes(rating, 6, resets=(4,))

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert page.count('class="rating-chart-reset"') == 1
    assert "Reset at change 4" in page
    assert len(polyline_points(page, "rating-chart-mu")) == 6


def test_it_says_there_are_no_rated_games_without_changes(client, bobs_bot):
    RatingFactory(competitor=bobs_bot)

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert "No rated games yet." in page
    assert "<svg" not in page
    assert "rating-chart-mu" not in page


def test_the_owner_sees_the_chart_of_a_private_competitor_others_do_not(alice_client, alices_bot):
    rating = RatingFactory(competitor=alices_bot)
    add_changes(rating, 3)

    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert len(polyline_points(page, "rating-chart-mu")) == 3
    assert Client().get(alices_bot.get_absolute_url()).status_code == 404


def test_it_downsamples_a_long_history(client, bobs_bot):
    rating = RatingFactory(competitor=bobs_bot)
    RatingChange.objects.bulk_create(
        RatingChange(
            rating=rating,
            reason="reset" if number == 1000 else "match",
            mu_before=20.0,
            sigma_before=5.0,
            mu_after=20.0 + number % 17,
            sigma_after=5.0 - number / 1000,
        )
        for number in range(1, 2001)
    )

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    mu_points = polyline_points(page, "rating-chart-mu")
    assert 1 < len(mu_points) <= MAX_POINTS
    assert len(polyline_points(page, "rating-chart-conservative")) <= MAX_POINTS
    assert page.count('class="rating-chart-reset"') == 1
    assert "Rating over 2000 changes" in page


def test_downsampling_keeps_the_ends_and_spreads_evenly():
    points = [RatingPoint(number=n, mu=n, sigma=1, is_reset=False) for n in range(1, 2001)]

    kept = downsample(points)

    assert len(kept) == MAX_POINTS
    assert kept[0].number == 1 and kept[-1].number == 2000
    assert all(a.number < b.number for a, b in itertools.pairwise(kept))


def test_ticks_cover_the_range_with_round_values():
    ticks = nice_ticks(3.2, 41.7)

    assert ticks[0] <= 3.2 and ticks[-1] >= 41.7
    assert 3 <= len(ticks) <= 8
    steps = {round(b - a, 6) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1


def test_a_single_change_still_draws_a_chart():
    svg = rating_chart_svg([RatingPoint(number=1, mu=25.0, sigma=8.0, is_reset=False)])

    assert svg is not None
    assert "Rating over 1 change:" in svg
    assert rating_chart_svg([]) is None
