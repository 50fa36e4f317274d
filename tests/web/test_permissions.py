"""Private things answer 404 to whoever may not see them, and 200 to the owner and organizers.

alice's bot is private; bob's is public; carol is another attendee.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from core.models import Competitor, Duel, Tournament
from reads.access import (
    can_see_competitor,
    can_see_duel,
    can_see_tournament,
    competitors_visible,
    duels_visible,
    tournaments_visible,
)
from tests.factories import DuelFactory, TournamentFactory

pytestmark = pytest.mark.django_db

PRIVATE_PAGES = {
    "competitor": lambda world: world["competitor"].get_absolute_url(),
    "revision": lambda world: world["revision"].get_absolute_url(),
    "source": lambda world: reverse("revision_source", args=["tic_tac_toe", "alices-bot", 1]),
    "validation duel": lambda world: world["validation_duel"].get_absolute_url(),
    "validation replay": lambda world: reverse("match", args=[world["validation_duel"].pk, 0]),
}


@pytest.fixture
def world(alices_bot, alices_revision, validation_duel, organizer, carol, alice):
    return {
        "competitor": alices_bot,
        "revision": alices_revision,
        "validation_duel": validation_duel,
        "alice": alice,
        "carol": carol,
        "organizer": organizer,
    }


@pytest.mark.parametrize("page", PRIVATE_PAGES)
@pytest.mark.parametrize("visitor", [None, "carol"])
def test_it_answers_404_for_a_private_competitors_things(client, world, page, visitor):
    if visitor:
        client.force_login(world[visitor])

    response = client.get(PRIVATE_PAGES[page](world))

    assert response.status_code == 404
    assert b"alices-bot v1" not in response.content


@pytest.mark.parametrize("page", PRIVATE_PAGES)
@pytest.mark.parametrize("visitor", ["alice", "organizer"])
def test_it_shows_a_private_competitors_things_to_its_owner_and_organizers(
    client, world, page, visitor
):
    client.force_login(world[visitor])

    response = client.get(PRIVATE_PAGES[page](world))

    assert response.status_code == 200


def test_it_shows_the_logs_of_a_private_revision_only_to_its_owner_and_organizers(
    client, alices_revision, carol, organizer, alice
):
    url = alices_revision.get_absolute_url()

    client.force_login(carol)
    assert client.get(url).status_code == 404
    for allowed in (alice, organizer):
        client.force_login(allowed)
        assert b"validated by self-play" in client.get(url).content


@pytest.mark.parametrize("visitor", [None, "carol", "bob"])
def test_it_hides_a_private_agents_log_in_a_public_tournament_duel(client, duel, visitor, request):
    if visitor:
        client.force_login(request.getfixturevalue(visitor))

    response = client.get(duel.get_absolute_url())

    assert response.status_code == 200
    assert b"alice&#x27;s private thoughts" not in response.content
    assert b"The log of alices-bot v1 is private to its owner." in response.content
    # Bob's bot is public, its code anyone's; its log is his until he shares it.
    assert (b"bob&#x27;s public musings" in response.content) == (visitor == "bob")


@pytest.mark.parametrize("visitor", [None, "carol"])
def test_a_public_agents_log_is_everyones_once_its_owner_shares_it(
    client, duel, bobs_bot, visitor, request
):
    if visitor:
        client.force_login(request.getfixturevalue(visitor))
    bobs_bot.share_logs = True
    bobs_bot.save()

    response = client.get(duel.get_absolute_url())

    assert b"bob&#x27;s public musings" in response.content
    assert b"alice&#x27;s private thoughts" not in response.content


@pytest.mark.parametrize("visitor", ["alice", "organizer"])
def test_it_shows_both_logs_of_a_duel_to_the_owner_and_organizers(client, duel, visitor, request):
    client.force_login(request.getfixturevalue(visitor))

    response = client.get(duel.get_absolute_url())

    assert b"alice&#x27;s private thoughts" in response.content
    # Bob's public bot's log is his and the organizers' (he shares none).
    assert (b"bob&#x27;s public musings" in response.content) == (visitor == "organizer")


def test_it_lets_anyone_replay_a_public_tournament_match_with_a_private_agent(client, match):
    assert client.get(match.get_absolute_url()).status_code == 200


@pytest.mark.parametrize("visitor", [None, "carol", "alice"])
def test_it_hides_the_duels_of_a_private_tournament_but_from_organizers(
    client, duel, match, visitor, request
):
    Tournament.objects.filter(pk=duel.tournament_id).update(is_public=False)
    if visitor:
        client.force_login(request.getfixturevalue(visitor))

    assert client.get(duel.get_absolute_url()).status_code == 404
    assert client.get(match.get_absolute_url()).status_code == 404

    client.force_login(request.getfixturevalue("organizer"))
    assert client.get(duel.get_absolute_url()).status_code == 200
    assert client.get(match.get_absolute_url()).status_code == 200


def test_it_shows_a_public_revisions_validation_duel_to_everyone(client, bobs_revision):
    validation = Duel.objects.seated(
        [bobs_revision, bobs_revision],
        is_validation=True,
        num_matches=2,
        seed=7,
        status="succeeded",
        result="DRAW",
    )
    validation.seats.filter(number=1).update(log="bob thinks aloud")

    response = client.get(validation.get_absolute_url())

    assert response.status_code == 200
    assert b"bob thinks aloud" not in response.content  # his code is public, not his logs
    bobs_revision.competitor.share_logs = True
    bobs_revision.competitor.save()
    assert b"bob thinks aloud" in client.get(validation.get_absolute_url()).content


def test_it_answers_404_for_missing_things(client, duel):
    assert client.get(reverse("duel", args=[duel.pk + 100])).status_code == 404
    assert client.get(reverse("match", args=[duel.pk, 5])).status_code == 404
    assert client.get(reverse("tournament", args=[999])).status_code == 404
    assert client.get(reverse("revision", args=["tic_tac_toe", "bobs-bot", 9])).status_code == 404
    assert client.get(reverse("competitor", args=["tic_tac_toe", "nobody"])).status_code == 404


def test_the_filters_for_lists_agree_with_the_rules_for_one_row(
    alice, bob, carol, organizer, tournament, duel, validation_duel
):
    hidden = TournamentFactory(is_public=False)
    DuelFactory(tournament=hidden)
    DuelFactory(validation=True, revisions=[bob.competitors.get().revisions.get()] * 2)

    for visitor in [AnonymousUser(), alice, bob, carol, organizer]:
        assert set(Competitor.objects.filter(competitors_visible(visitor))) == {
            competitor
            for competitor in Competitor.objects.all()
            if can_see_competitor(visitor, competitor)
        }
        assert set(Tournament.objects.filter(tournaments_visible(visitor))) == {
            tournament
            for tournament in Tournament.objects.all()
            if can_see_tournament(visitor, tournament)
        }
        assert set(Duel.objects.filter(duels_visible(visitor))) == {
            duel for duel in Duel.objects.all() if can_see_duel(visitor, duel)
        }
