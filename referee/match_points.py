"""Match points as exact numbers: for adding up and comparing standings, for people, and
for JSON.

A game scores a match in simple fractions: 1 a win, 0 a loss, 1/N each for a draw of N,
or a share of the other players beaten, a tie counting half (``environments.base``). So
a duel's total, and a standing's sum of totals, is a fraction with a small denominator
(thirds, sixths, eighths...). The database keeps them as floats: a duel's total to
``results.SCORE_DECIMALS`` places (127/3 is 42.333333333), a standing's sum as the float
nearest to it. Adding those floats drifts (43.000000001000004 for an exact 43) and ranks
equal totals apart, so every sum and comparison is made on the fraction each float stands
for (``exact_score``), and people see that fraction (``score_text``: ``42⅓``).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from referee.results import SCORE_DECIMALS

#: A score is read as the fraction of denominator at most this that lies within
#: ``SCORE_TOLERANCE`` of it. Two such fractions are at least 1/1000² = 1e-6 apart, five
#: times the window's width, so at most one fits; the window takes a duel's rounding to 9
#: places (5e-10) and the drift of a standing summed from a few hundred of them as floats
#: (rows written before the sums were exact).
MAX_SCORE_DENOMINATOR = 1000
SCORE_TOLERANCE = Fraction(1, 10**7)

#: How a fraction that is not a short decimal is written for people.
_GLYPHS = {
    Fraction(1, 3): "⅓",
    Fraction(2, 3): "⅔",
    Fraction(1, 6): "⅙",
    Fraction(5, 6): "⅚",
    Fraction(1, 7): "⅐",
    Fraction(1, 9): "⅑",
}


def exact_score(value: float | Fraction) -> Fraction:
    """The exact score ``value`` stands for: the simple fraction it rounds (42.333333333:
    127/3), or, for a value near none (a game with other scores), its value to
    ``SCORE_DECIMALS`` places."""
    if isinstance(value, Fraction):
        return value
    return _exact_float(value)


# A ladder's standings read tens of thousands of totals, mostly the same few values.
@functools.lru_cache(maxsize=4096)
def _exact_float(value: float) -> Fraction:
    near = Fraction(value).limit_denominator(MAX_SCORE_DENOMINATOR)
    if abs(near - Fraction(value)) <= SCORE_TOLERANCE:
        return near
    return Fraction(f"{value:.{SCORE_DECIMALS}f}")


def score_text(value: float | Fraction) -> str:
    """A score for people: an integer as an integer (``43``), a short decimal as it is
    (``2.5``, ``0.125``), a third or a sixth as a fraction (``42⅓``, ``⅙``), anything
    else to two places (``0.42``)."""
    exact = exact_score(value)
    sign = "-" if exact < 0 else ""
    exact = abs(exact)
    if exact.denominator == 1:
        return f"{sign}{exact.numerator}"
    if 1000 % exact.denominator == 0:
        return sign + f"{float(exact):.3f}".rstrip("0")
    whole, part = divmod(exact, 1)
    glyph = _GLYPHS.get(part)
    if glyph is not None:
        return f"{sign}{whole or ''}{glyph}"
    rounded = round(exact, 2)
    if rounded.denominator == 1:
        return f"{sign}{rounded.numerator}"
    return sign + f"{float(rounded):.2f}".rstrip("0")


def score_number(value: float | Fraction) -> int | float:
    """A score for JSON: an integer as an integer, else the float nearest to the exact
    fraction (127/3: 42.333333333333336)."""
    exact = exact_score(value)
    return exact.numerator if exact.denominator == 1 else float(exact)
