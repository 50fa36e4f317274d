"""The owner's controls on a competitor's page: public or private, disable and enable,
delete (with a page that asks first); no one else has them."""

from __future__ import annotations

import pytest
from django.test import Client

from core.models import Competitor, Duel, DuelStatus, StepStatus, TournamentFormat
from core.services.accounts import api_token_create
from tests.factories import DuelFactory, RevisionFactory, TournamentFactory

pytestmark = pytest.mark.django_db


def test_the_owner_makes_it_public_then_private(alice_client, alices_bot):
    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert "Make public" in page and "Make private" not in page
    url = f"{alices_bot.get_absolute_url()}visibility/"

    response = alice_client.post(url, {"public": "1"}, follow=True)

    assert "alices-bot is public: anyone may see it." in response.content.decode()
    assert Competitor.objects.get(pk=alices_bot.pk).is_public
    assert "Make private" in response.content.decode()
    alice_client.post(url, {"public": "0"})
    assert not Competitor.objects.get(pk=alices_bot.pk).is_public
    refused = alice_client.post(url, {"public": "yes"}, follow=True)
    assert "Choose public or private." in refused.content.decode()
    assert not Competitor.objects.get(pk=alices_bot.pk).is_public


def test_the_owner_disables_and_enables_it(alice_client, alices_bot):
    url = f"{alices_bot.get_absolute_url()}play-state/"

    disabled = alice_client.post(url, {"disabled": "1"}, follow=True).content.decode()

    assert "alices-bot is disabled: within seconds it leaves every tournament" in disabled
    assert "Competitor alices-bot is disabled by its owner: enable it on its page first." in (
        disabled
    )
    assert Competitor.objects.get(pk=alices_bot.pk).is_disabled
    enabled = alice_client.post(url, {"disabled": "0"}, follow=True).content.decode()
    assert "alices-bot is enabled: its newest validated revision rejoins" in enabled
    assert not Competitor.objects.get(pk=alices_bot.pk).is_disabled


def test_the_owner_cannot_enable_what_the_organizers_disabled(alice_client, alices_bot):
    Competitor.objects.filter(pk=alices_bot.pk).update(is_disabled=True, disabled_by="organizers")
    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert "only they can enable it" in page  # the Enable button is off, and says why

    response = alice_client.post(
        f"{alices_bot.get_absolute_url()}play-state/", {"disabled": "0"}, follow=True
    )

    assert "was disabled by the organizers: only they can enable it." in (response.content.decode())
    assert Competitor.objects.get(pk=alices_bot.pk).is_disabled


def test_the_owner_deletes_it_after_a_page_that_asks(alice_client, alices_bot):
    url = f"{alices_bot.get_absolute_url()}delete/"
    asked = alice_client.get(url).content.decode()
    assert "Delete alices-bot?" in asked and "is kept instead" in asked

    response = alice_client.post(url, follow=True)

    assert response.redirect_chain[-1][0] == "/accounts/profile/"
    assert "alices-bot: Erased, with its revisions" in response.content.decode()
    assert not Competitor.objects.filter(pk=alices_bot.pk).exists()


def test_a_competitor_that_played_others_is_withdrawn_rather_than_erased(
    alice_client, alices_bot, bobs_bot
):
    DuelFactory(revisions=[alices_bot.revisions.get(), bobs_bot.revisions.get()])
    RevisionFactory(competitor=alices_bot, validated=True)

    response = alice_client.post(f"{alices_bot.get_absolute_url()}delete/", follow=True)

    assert response.redirect_chain[-1][0] == alices_bot.get_absolute_url()
    page = response.content.decode()
    assert "Withdrawn rather than erased: it played duels" in page
    assert Competitor.objects.get(pk=alices_bot.pk).is_disabled
    assert alices_bot.revisions.count() == 1  # the one nothing refers to is erased


def test_no_one_but_the_owner_has_the_controls(client, bob, carol, bobs_bot):
    base = bobs_bot.get_absolute_url()
    posts = [("visibility/", {"public": "0"}), ("play-state/", {"disabled": "1"}), ("delete/", {})]
    for path, data in posts:
        response = client.post(base + path, data)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(carol)
    assert "Make private" not in client.get(base).content.decode()
    for path, data in posts:
        assert client.post(base + path, data).status_code == 404
    assert client.get(base + "delete/").status_code == 404
    stored = Competitor.objects.get(pk=bobs_bot.pk)
    assert (stored.is_public, stored.is_disabled) == (True, False)


def test_the_owner_starts_a_test_duel_from_the_page_and_sees_it_listed(
    alice_client, alices_bot, bobs_bot, settings
):
    settings.ARENA_TEST_DUELS_PER_HOUR = 1
    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert "data-test-duel" in page and '<option value="bobs-bot">' in page
    url = f"{alices_bot.get_absolute_url()}test-duels/"

    response = alice_client.post(url, {"opponent": "bobs-bot"}, follow=True)

    duel = Duel.objects.get(requested_by__isnull=False)
    assert response.redirect_chain[-1][0] == f"/duels/{duel.pk}/"
    assert "Test duel of alices-bot against bobs-bot: unrated, played now." in (
        response.content.decode()
    )
    listed = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert f'href="/duels/{duel.pk}/"' in listed
    # Past the hourly limit: the page says when the next may start.
    refused = alice_client.post(url, {"opponent": "bobs-bot"}, follow=True).content.decode()
    assert "You started 1 test duel in the past hour, the most" in refused
    unknown = alice_client.post(url, {"opponent": "nobody"}, follow=True).content.decode()
    assert "Pick an opponent from the list." in unknown
    assert Duel.objects.filter(requested_by__isnull=False).count() == 1


def test_others_neither_see_the_form_nor_start_a_test_duel(client, carol, alices_bot, bobs_bot):
    client.force_login(carol)
    assert "data-test-duel" not in client.get(bobs_bot.get_absolute_url()).content.decode()
    response = client.post(f"{bobs_bot.get_absolute_url()}test-duels/", {"opponent": "bobs-bot"})
    assert response.status_code == 404
    assert not Duel.objects.filter(requested_by__isnull=False).exists()


def test_the_page_and_the_api_say_when_ladders_pause_it(alice_client, alices_bot, bobs_bot):
    carols_bot = RevisionFactory(
        competitor__environment=alices_bot.environment, validated=True
    ).competitor
    mine = alices_bot.revisions.get()
    ladder = TournamentFactory(environment=alices_bot.environment, format=TournamentFormat.LADDER)
    for opponent in (bobs_bot, carols_bot, bobs_bot):
        DuelFactory(
            tournament=ladder,
            revisions=[mine, opponent.revisions.get()],
            status=DuelStatus.FAILED,
        )

    page = alice_client.get(alices_bot.get_absolute_url()).content.decode()

    assert "Paused in ladders: its last 3 duels failed, played by no one" in page
    assert "validate it again, or upload a new revision" in page
    assert f"Validate {mine} again" in page
    api = alice_client.get(f"/api/v1/competitors/tic_tac_toe/{bobs_bot.name}").json()
    assert api["paused"] is None
    # Others read that it is paused, not the failures' own words.
    Competitor.objects.filter(pk=alices_bot.pk).update(is_public=True)
    alice_client.logout()
    public = alice_client.get(alices_bot.get_absolute_url()).content.decode()
    assert "Paused in ladders: its last duels could not be played" in public
    assert "its last 3 duels failed" not in public
    shown = alice_client.get(f"/api/v1/competitors/tic_tac_toe/{alices_bot.name}").json()
    assert shown["paused"].startswith("its last duels could not be played")


def paused(revision, *opponents) -> None:
    """Three failed ladder duels of ``revision`` against ``opponents`` in turn."""
    ladder = TournamentFactory(
        environment=revision.competitor.environment, format=TournamentFormat.LADDER
    )
    for opponent in (*opponents, opponents[0]):
        DuelFactory(
            tournament=ladder,
            revisions=[revision, opponent.revisions.get()],
            status=DuelStatus.FAILED,
        )


def test_its_owner_has_a_paused_entry_validated_again_on_the_page_and_in_the_api(
    alice_client, alices_bot, bobs_bot, alice
):
    carols_bot = RevisionFactory(
        competitor__environment=alices_bot.environment, validated=True
    ).competitor
    mine = alices_bot.revisions.get()
    url = f"{alices_bot.get_absolute_url()}revalidate/"
    # Not paused: nothing to validate again (an upload's fix is a new revision).
    refused = alice_client.post(url, follow=True).content.decode()
    assert "has nothing to validate again" in refused
    assert alices_bot.revisions.get().validation_status == StepStatus.SUCCEEDED

    paused(mine, bobs_bot, carols_bot)
    response = alice_client.post(url, follow=True)

    assert response.redirect_chain[-1][0] == mine.get_absolute_url()
    assert f"{mine} is being validated again." in response.content.decode()
    mine.refresh_from_db()
    assert mine.validation_status == StepStatus.QUEUED
    # Queued, it is no longer validated: ladders wait for its new validation.
    again = alice_client.post(url, follow=True).content.decode()
    assert "has nothing to validate again" in again
    # Others may not; the API does the same with a submit token.
    assert Client().post(url).status_code == 302  # to the login page
    _, token = api_token_create(user=alice, name="t", scopes=["submit"])
    answer = Client().post(
        f"/api/v1/competitors/tic_tac_toe/{bobs_bot.name}/revalidation",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert answer.status_code == 404  # bob's
