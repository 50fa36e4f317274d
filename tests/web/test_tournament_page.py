"""A tournament's page tells what is true of it, as a visitor reads it: a ladder's duels
counted without a total to reach, failed duels apart from played ones, and a ladder's
standings in the order of its fit."""

from __future__ import annotations

import html
import re

import pytest
from django.utils import timezone
from django.utils.html import strip_tags

from core.models import DuelStatus, Tournament, TournamentFormat, TournamentStatus
from tests.factories import DuelFactory, ParticipantFactory, TournamentFactory

pytestmark = pytest.mark.django_db


def visible(client, tournament: Tournament) -> str:
    page = client.get(tournament.get_absolute_url()).content.decode()
    return re.sub(r"\s+", " ", html.unescape(strip_tags(page)))


def standings_names(client, tournament: Tournament) -> list[str]:
    page = client.get(tournament.get_absolute_url()).content.decode()
    table = page[page.index('id="standings-title"') : page.index('id="duels-title"')]
    return re.findall(r'<td><a href="[^"]*">([^<]+)</a> <span class="muted small">', table)


@pytest.fixture
def ladder() -> Tournament:
    return TournamentFactory(
        name="Spring ladder",
        format=TournamentFormat.LADDER,
        status=TournamentStatus.RUNNING,
        is_public=True,
        started_at=timezone.now(),
    )


def test_a_running_ladder_counts_its_duels_without_a_total_to_reach(client, ladder):
    DuelFactory(tournament=ladder, finished=True)
    DuelFactory(tournament=ladder, finished=True)
    DuelFactory(tournament=ladder, status=DuelStatus.RUNNING)
    DuelFactory(tournament=ladder, status=DuelStatus.FAILED)
    Tournament.objects.filter(pk=ladder.pk).update(duels_total=4, duels_done=2, duels_failed=1)

    page = visible(client, ladder)

    assert "2 duels played so far, 1 running now, 1 failed." in page
    assert "it pairs its entries continuously" in page
    assert " of 4 " not in page and not re.search(r"\d+ ?%", page)


def test_a_ladder_without_a_duel_yet_says_when_it_pairs(client, ladder):
    page = visible(client, ladder)

    assert "0 duels played so far." in page
    assert "0 of 0" not in page
    assert "scheduled when the tournament starts" not in page
    assert "No duel yet: the ladder pairs its entries as soon as 2 of them can play." in page


def test_a_round_robin_counts_failed_duels_apart_from_played_ones(client, tournament):
    Tournament.objects.filter(pk=tournament.pk).update(
        status=TournamentStatus.RUNNING, duels_total=4, duels_done=1, duels_failed=1
    )

    page = visible(client, tournament)

    assert "1 of 4 duels played (25%), 1 failed (25%)." in page
    assert "50%" not in page


def test_a_ladders_standings_follow_its_fit_not_duel_points(client, ladder):
    def entry(name: str, rank: int | None, points: int) -> None:
        ParticipantFactory(
            tournament=ladder,
            revision__competitor__name=name,
            revision__competitor__is_public=True,
            rank=rank,
            points=points,
        )

    entry("most-points", rank=2, points=6)
    entry("best-fit", rank=1, points=0)
    # Not ranked yet (joined since the fit): after the ranked ones, by name, not by points.
    entry("zed-newcomer", rank=None, points=4)
    entry("amy-newcomer", rank=None, points=0)

    page = client.get(ladder.get_absolute_url()).content.decode()
    words = visible(client, ladder)

    assert standings_names(client, ladder) == [
        "best-fit",
        "most-points",
        "amy-newcomer",
        "zed-newcomer",
    ]
    assert not re.search(r"<th[^>]*>Points</th>", page)
    assert "Ranked by the fit of the game's leaderboard" in words
    assert "2 points for a duel won" not in words


def test_a_round_robins_standings_still_show_its_points(client, tournament):
    words = visible(client, tournament)

    assert "2 points for a duel won, 1 for a draw" in words
    assert "Ranked by the fit" not in words
