from __future__ import annotations

from fractions import Fraction

import pytest

from referee.match_points import exact_score, score_number, score_text


@pytest.mark.parametrize(
    ("stored", "exact"),
    [
        (42.333333333, Fraction(127, 3)),  # a duel's total, to 9 places
        (42.333333334, Fraction(127, 3)),  # three of them added as floats
        (43.000000001000004, Fraction(43)),
        (float(Fraction(25, 6)), Fraction(25, 6)),  # a standing as stored: the nearest float
        (2.5, Fraction(5, 2)),
        (0.125, Fraction(1, 8)),
        (0, Fraction(0)),
        # Near no simple fraction (another game's scores): its value to 9 places.
        (0.577215665, Fraction(577215665, 10**9)),
    ],
)
def test_it_reads_a_stored_score_as_the_fraction_it_stands_for(stored, exact):
    assert exact_score(stored) == exact


@pytest.mark.parametrize(
    ("score", "shown"),
    [
        (Fraction(43), "43"),
        (Fraction(5, 2), "2.5"),
        (Fraction(1, 8), "0.125"),
        (Fraction(127, 3), "42⅓"),
        (Fraction(77, 6), "12⅚"),
        (Fraction(1, 6), "⅙"),
        (Fraction(5, 12), "0.42"),
        (Fraction(1, 1000) * 999_999, "999.999"),
        (0.333333333, "⅓"),
    ],
)
def test_it_shows_a_score_as_people_read_it(score, shown):
    assert score_text(score) == shown


def test_it_gives_json_an_integer_as_an_integer_and_a_fraction_as_its_nearest_float():
    assert score_number(43.000000001000004) == 43
    assert isinstance(score_number(43.0), int)
    assert score_number(42.333333334) == 127 / 3
