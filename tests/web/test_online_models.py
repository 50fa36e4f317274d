"""Registering an online model from the environment page: its token shown once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import ApiToken, Competitor
from core.models.accounts import hash_token
from tests.factories import CompetitorFactory, EnvironmentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def connect_four():
    return EnvironmentFactory(name="connect_four")


def test_it_registers_a_model_and_shows_its_token_once(client, alice, connect_four):
    client.force_login(alice)

    response = client.post(
        reverse("online_model_create", args=["connect_four"]),
        {"online-name": "net-bot", "online-is_public": "on"},
    )

    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    page = response.content.decode()
    secret = page.split("data-token-secret>")[1].split("<")[0]
    competitor = Competitor.objects.get(name="net-bot")
    assert competitor.is_online and competitor.owner == alice
    assert ApiToken.objects.get(competitor=competitor).token_hash == hash_token(secret)
    assert "python -m arena_sdk connect --server http://testserver" in page
    # Not shown again: the model's page has no token.
    assert secret not in client.get(competitor.get_absolute_url()).content.decode()


def test_it_says_why_a_name_is_refused_and_registers_nothing(client, alice, bob, connect_four):
    CompetitorFactory(environment=connect_four, name="taken", owner=bob)
    client.force_login(alice)

    response = client.post(
        reverse("online_model_create", args=["connect_four"]), {"online-name": "taken"}
    )

    assert response.status_code == 400
    assert "is taken" in response.content.decode()
    assert not Competitor.objects.filter(owner=alice, kind="online").exists()


def test_it_asks_a_visitor_to_log_in_first(client, connect_four):
    page = client.get(reverse("environment", args=["connect_four"])).content.decode()
    response = client.post(
        reverse("online_model_create", args=["connect_four"]), {"online-name": "x"}
    )

    assert "Log in</a> to register a model" in page
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not Competitor.objects.filter(kind="online").exists()
