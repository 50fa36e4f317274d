"""A duel's page says what happened to its players, as a visitor reads it: its badge and
the sentence beside it, its attempts, and its scores in the game's own numbers."""

from __future__ import annotations

import html
import re

import pytest
from django.utils.html import strip_tags

from core.models import Duel, DuelResult, DuelStatus, Job, Match, TournamentFormat
from tests.factories import DuelFactory, EnvironmentFactory, TournamentFactory

pytestmark = pytest.mark.django_db


def words(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(strip_tags(fragment))).strip()


def lead(client, duel: Duel) -> str:
    """The line under the duel's title: its badge and the sentence beside it."""
    page = client.get(duel.get_absolute_url()).content.decode()
    found = re.search(r'<p class="lead">(.*?)</p>', page, re.S)
    assert found, page
    return found.group(1)


def badge(client, duel: Duel) -> tuple[str, str]:
    """The badge's look and its words."""
    found = re.search(r'<span class="badge badge-(\w+)"[^>]*>([^<]*)</span>', lead(client, duel))
    assert found
    return found.group(1), found.group(2)


def visible(client, url: str) -> str:
    return words(client.get(url).content.decode())


def facts(client, duel: Duel) -> dict[str, str]:
    """The facts listed under the duel's players: name to value."""
    page = client.get(duel.get_absolute_url()).content.decode()
    return {
        words(name): words(value)
        for name, value in re.findall(r"<dt[^>]*>(.*?)</dt><dd>(.*?)</dd>", page, re.S)
    }


def test_it_shows_the_attempts_of_the_duels_job(client, duel):
    Job.objects.filter(duel=duel).update(attempts=3)

    assert facts(client, duel)["Attempts"] == "3"


# Alice's validation duels are hers to see: her competitor is private.
def test_a_validation_duel_which_has_no_job_shows_no_attempts(alice_client, validation_duel):
    assert "Matches" in facts(alice_client, validation_duel)
    assert "Attempts" not in facts(alice_client, validation_duel)


def test_a_running_duel_says_running_once(client, duel):
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, result="")

    assert words(lead(client, duel)) == "Running"
    assert visible(client, duel.get_absolute_url()).count("Running") == 1


def test_a_played_duel_says_who_won(client, duel):
    assert badge(client, duel) == ("good", "Played")
    assert words(lead(client, duel)) == "Played alices-bot v1 won"


def test_a_duel_lost_by_a_fault_says_who_lost_it_and_how(client, duel, match):
    Match.objects.filter(pk=match.pk).update(
        faults=[{"player": 2, "kind": "timeout", "message": "no reply in 2 s", "step": 3}],
        fault_player=2,
        fault_kind="timeout",
    )
    duel.seats.filter(number=2).update(errors=1)

    assert badge(client, duel) == ("bad", "Played")
    assert words(lead(client, duel)) == (
        "Played alices-bot v1 won — bobs-bot v1 lost 1 match by a timeout."
    )
    assert "Succeeded" not in visible(client, duel.get_absolute_url())


def test_a_validation_duel_that_failed_the_validation_says_so(alice_client, validation_duel):
    assert badge(alice_client, validation_duel) == ("bad", "Validation failed")
    assert words(lead(alice_client, validation_duel)).startswith(
        "Validation failed alices-bot v1 (player 2), on move 2, played an action that is not "
        "among the legal actions. 4 is illegal"
    )
    assert "Succeeded" not in visible(alice_client, validation_duel.get_absolute_url())


def test_a_validation_duel_without_a_fault_says_validated(alice_client, validation_duel):
    Match.objects.filter(duel=validation_duel).update(faults=[], fault_player=None)

    assert badge(alice_client, validation_duel) == ("good", "Validated")
    assert "Validated 1 self-play match without a fault." in words(
        lead(alice_client, validation_duel)
    )


def test_a_failed_duel_says_it_was_not_scored(client, duel):
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.FAILED, result="")

    assert badge(client, duel) == ("bad", "Failed")
    assert "Failed for a reason outside the agents: not scored." in words(lead(client, duel))


def test_a_tournaments_list_of_duels_shows_what_happened_to_the_players(client, duel, match):
    duel.seats.filter(number=2).update(errors=1)

    page = client.get(duel.tournament.get_absolute_url()).content.decode()

    row = re.search(rf'<tr>\s*<td><a href="{duel.get_absolute_url()}">.*?</tr>', page, re.S)
    assert row
    assert '<span class="badge badge-bad">Played</span>' in row.group(0)
    assert "Succeeded" not in words(row.group(0))


def test_four_players_scores_are_shown_as_the_game_means_them(client):
    environment = EnvironmentFactory(name="lowest_unique")
    tournament = TournamentFactory(
        environment=environment, format=TournamentFormat.ROUND_ROBIN, is_public=True
    )
    # A duel's totals are kept to 9 places: 77/6 is 12.833333333.
    duel = DuelFactory(
        tournament=tournament,
        revisions=[None] * 4,
        finished=True,
        result=DuelResult.RANKED,
        seat_values=[
            {"score": 12.833333333, "rank": 1},
            {"score": 4.166666667, "rank": 3},
            {"score": 4.166666667, "rank": 3},
            {"score": 2.833333333, "rank": 4},
        ],
    )
    # Written by hand: MatchFactory plays a two-player game.
    Match.objects.create(
        duel=duel,
        index=0,
        first_player=1,
        seats=[1, 2, 3, 4],
        scores=[1 / 6, 1 / 6, 2 / 3, 1],
        seed=5,
        result=DuelResult.RANKED,
    )

    page = visible(client, duel.get_absolute_url())

    assert "12⅚" in page and "4⅙" in page and "2⅚" in page
    assert "⅙ : ⅙ : ⅔ : 1" in page
    assert "12.8333" not in page and "0.166667" not in page
    assert "12⅚ : 4⅙ : 4⅙ : 2⅚" in visible(client, tournament.get_absolute_url())


def test_an_agents_list_of_duels_shows_what_happened_to_the_players(client, duel, match):
    duel.seats.filter(number=2).update(errors=1)
    competitor = duel.revisions()[1].competitor

    page = client.get(competitor.get_absolute_url()).content.decode()

    row = re.search(rf'<tr>\s*<td><a href="{duel.get_absolute_url()}">.*?</tr>', page, re.S)
    assert row
    assert '<span class="badge badge-bad">Played</span>' in row.group(0)
    assert "Succeeded" not in words(row.group(0))
