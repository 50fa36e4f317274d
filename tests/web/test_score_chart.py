"""The leaderboard score history chart on the competitor page: the one rating shown, a
point per refit where its rated matches changed, written by the refit itself."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.models import LeaderboardPoint
from reads.charts import MAX_POINTS, ScorePoint, downsample, nice_ticks, score_chart_svg
from tests.factories import RevisionFactory

pytestmark = pytest.mark.django_db


def polyline_points(page: str, css_class: str) -> list[str]:
    match = re.search(rf'<polyline class="{css_class}" points="([^"]*)"', page)
    assert match, f"no {css_class} line"
    return match.group(1).split()


def add_points(competitor, count: int, *, new_version_at: tuple[int, ...] = ()) -> None:
    revision = competitor.revisions.order_by("-version").first() or RevisionFactory(
        competitor=competitor, validated=True
    )
    start = timezone.now() - timedelta(hours=1)
    for number in range(1, count + 1):
        if number in new_version_at:
            revision = RevisionFactory(competitor=competitor, validated=True)
        LeaderboardPoint.objects.create(
            competitor=competitor,
            revision=revision,
            score=1500 + 10 * number,
            score_sd=200 / number,
            matches=2 * number,
            fitted_at=start + timedelta(minutes=number),
        )


def test_it_draws_one_point_per_refit_with_its_band(client, bobs_bot):
    add_points(bobs_bot, 7)

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert page.count("<svg") == 1
    assert len(polyline_points(page, "rating-chart-score")) == 7
    assert 'class="rating-chart-band"' in page
    assert 'role="img"' in page and "aria-label=" in page
    assert "<title>Leaderboard score over 7 refits: 1570 ± 29 now" in page
    assert "No rated match yet." not in page
    # One rating in the product: openskill's is not shown.
    assert "μ" not in page and "sigma" not in page.lower()


def test_it_marks_each_new_version(client, bobs_bot):
    add_points(bobs_bot, 6, new_version_at=(4,))

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert page.count('class="rating-chart-version"') == 1
    assert "A new version from refit 4" in page


def test_it_says_there_is_no_rated_match_without_points(client, bobs_bot):
    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert "No rated match yet." in page
    assert "<svg" not in page


def test_the_owner_sees_the_chart_of_a_private_competitor_others_do_not(alice_client, alices_bot):
    add_points(alices_bot, 3)

    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert len(polyline_points(page, "rating-chart-score")) == 3
    assert Client().get(alices_bot.get_absolute_url()).status_code == 404


def test_it_downsamples_a_long_history(client, bobs_bot):
    add_points(bobs_bot, 1200, new_version_at=(600,))

    page = client.get(bobs_bot.get_absolute_url()).content.decode()

    assert 1 < len(polyline_points(page, "rating-chart-score")) <= MAX_POINTS
    assert page.count('class="rating-chart-version"') == 1
    assert "Leaderboard score over 1200 refits" in page


def test_downsampling_keeps_the_ends_and_spreads_evenly():
    points = [ScorePoint(number=n, score=n, sd=1, new_version=False) for n in range(1, 2001)]

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


def test_a_single_point_still_draws_a_chart():
    svg = score_chart_svg([ScorePoint(number=1, score=1500.0, sd=80.0, new_version=False)])

    assert svg is not None
    assert "Leaderboard score over 1 refit:" in svg
    assert score_chart_svg([]) is None
