"""Standings add and compare match scores exactly: a tournament whose duels' totals are
thirds (stored to 9 places, 10.666666667) shows 42⅓ and 43, not 42.333333334 and
43.000000001, and two players on an exact 25/3 reached by different sums share a rank on
the tournament page and in the API."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from django.utils.html import strip_tags

from core.models import DuelResult, Tournament, TournamentStatus
from referee.results import score_total
from tests.factories import DuelFactory, ParticipantFactory, TournamentFactory
from tests.support.responses import ok, text
from tournament_manager.services.standings import standings_update

pytestmark = pytest.mark.django_db


def stored(numerator: int, denominator: int = 3) -> float:
    """A duel's total as the referee stores it: to 9 places (32/3: 10.666666667)."""
    return score_total([float(Fraction(numerator, denominator))])


def thirds_tournament() -> Tournament:
    """Five players. ava: 32/3 + 32/3 + 32/3 + 31/3 = 127/3. ben: 44/3 + 44/3 + 41/3 =
    43. cy: 25/3 in one duel; dot: 8/3 + 8/3 + 3 = 25/3 (as floats, 8.333333334); both
    without a point or a win. eve: 15, beating dot three times."""
    tournament = TournamentFactory(name="Thirds cup", status=TournamentStatus.COMPLETED)
    revisions = {
        name: ParticipantFactory(
            tournament=tournament,
            revision__competitor__name=name,
            revision__competitor__is_public=True,
        ).revision
        for name in ("ava", "ben", "cy", "dot", "eve")
    }
    duels = [
        ("ben", "ava", stored(44), stored(32)),
        ("ben", "ava", stored(44), stored(32)),
        ("ben", "ava", stored(41), stored(32)),
        ("ava", "cy", stored(31), stored(25)),
        ("eve", "dot", 5.0, stored(8)),
        ("eve", "dot", 5.0, stored(8)),
        ("eve", "dot", 5.0, 3.0),
    ]
    for winner, loser, winner_score, loser_score in duels:
        DuelFactory(
            tournament=tournament,
            revisions=[revisions[winner], revisions[loser]],
            finished=True,
            result=DuelResult.PLAYER_1_WIN,
            seat_values=[{"score": winner_score, "rank": 1}, {"score": loser_score, "rank": 2}],
        )
    standings_update(tournament=tournament)
    return tournament


def test_it_ranks_equal_exact_totals_together_and_stores_the_nearest_float():
    tournament = thirds_tournament()

    rows = {p.revision.competitor.name: p for p in tournament.participants.all()}

    assert {name: row.rank for name, row in rows.items()} == {
        "ben": 1,
        "eve": 2,
        "ava": 3,
        "cy": 4,
        "dot": 4,
    }
    assert rows["ava"].score == float(Fraction(127, 3))
    assert rows["ben"].score == 43.0
    assert rows["cy"].score == rows["dot"].score == float(Fraction(25, 3))


def standings_rows(page: str) -> list[list[str]]:
    """The standings table's rows as their cells' visible text."""
    table = page[page.index('id="standings-title"') :]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    return [
        [
            " ".join(strip_tags(cell).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def test_the_tournament_page_shows_thirds_as_fractions_and_the_tie_as_one_rank(client):
    tournament = thirds_tournament()

    rows = standings_rows(text(client.get(tournament.get_absolute_url())))

    # Rank, competitor (and its owner), then the score in the last cell.
    assert [(row[0], row[1].split()[0], row[-1]) for row in rows] == [
        ("1", "ben", "43"),
        ("2", "eve", "15"),
        ("3", "ava", "42⅓"),
        ("4", "cy", "8⅓"),
        ("4", "dot", "8⅓"),
    ]


def test_the_api_gives_exact_totals_an_integer_as_an_integer_and_the_tie_as_one_rank(client):
    tournament = thirds_tournament()

    standings = ok(client.get(f"/api/v1/tournaments/{tournament.pk}"))["standings"]

    by_name = {row["competitor"]: row for row in standings}
    assert [(row["competitor"], row["rank"]) for row in standings] == [
        ("ben", 1),
        ("eve", 2),
        ("ava", 3),
        ("cy", 4),
        ("dot", 4),
    ]
    assert by_name["ben"]["score"] == 43 and isinstance(by_name["ben"]["score"], int)
    assert by_name["ben"]["score_fraction"] == "43"
    assert by_name["ava"]["score"] == 42.333333333333336
    assert by_name["ava"]["score_fraction"] == "127/3"
    assert by_name["cy"]["score_fraction"] == by_name["dot"]["score_fraction"] == "25/3"
    assert by_name["cy"]["score"] == by_name["dot"]["score"]
