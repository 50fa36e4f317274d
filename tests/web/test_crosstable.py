"""A round robin's page shows its crosstable: every participant against every other, from
the row's side, each cell linking its duel; other formats and large fields show none."""

from __future__ import annotations

import re

import pytest

from core.models import DuelResult, TournamentFormat
from tests.factories import (
    DuelFactory,
    ParticipantFactory,
    RevisionFactory,
    TournamentFactory,
)

pytestmark = pytest.mark.django_db

DASH = "\N{EN DASH}"


def cells(page: str) -> list[list[str]]:
    table = page[
        page.index("data-crosstable") : page.index("</table>", page.index("data-crosstable"))
    ]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    return [
        [
            text
            for _cls, text in re.findall(
                r'<td class="(num crosstable-\w+|crosstable-self)"[^>]*>(?:<a [^>]*>)?([^<]*)', row
            )
        ]
        for row in rows
    ]


def test_a_round_robin_shows_who_beat_whom(client):
    tournament = TournamentFactory(is_public=True, status="completed")
    a, b, c = (
        RevisionFactory(
            validated=True,
            competitor__environment=tournament.environment,
            competitor__is_public=True,
            competitor__name=name,
        )
        for name in ("ann", "ben", "cat")
    )
    for rank, revision in enumerate((a, b, c), start=1):
        ParticipantFactory(tournament=tournament, revision=revision, rank=rank)
    won = DuelFactory(
        tournament=tournament,
        revisions=[a, b],
        finished=True,
        result=DuelResult.PLAYER_1_WIN,
        seat_values=[{"wins": 2, "rank": 1}, {"wins": 0, "rank": 2}],
    )
    DuelFactory(
        tournament=tournament,
        revisions=[c, a],
        finished=True,
        seat_values=[{"wins": 1, "rank": 1}, {"wins": 1, "rank": 1}],
    )
    DuelFactory(tournament=tournament, revisions=[b, c])  # not played yet

    page = client.get(tournament.get_absolute_url()).content.decode()

    score = "{}" + DASH + "{}"
    one_all = score.format(1, 1)
    assert cells(page) == [
        ["", score.format(2, 0), one_all],
        [score.format(0, 2), "", "\N{MIDDLE DOT}"],
        [one_all, "\N{MIDDLE DOT}", ""],
    ]
    assert f'href="{won.get_absolute_url()}" title="Won 2{DASH}0 in matches"' in page
    assert "crosstable-lost" in page and "crosstable-drawn" in page


def test_a_ladder_shows_no_crosstable(client):
    ladder = TournamentFactory(is_public=True, format=TournamentFormat.LADDER, status="running")
    revisions = [
        RevisionFactory(validated=True, competitor__environment=ladder.environment)
        for _ in range(2)
    ]
    for revision in revisions:
        ParticipantFactory(tournament=ladder, revision=revision)
    assert "data-crosstable" not in client.get(ladder.get_absolute_url()).content.decode()
