"""Request rates, counted per whoever asks, against real gateways sharing a real Redis:
one holder's flood never makes another's request answer 429, even from the same
address; leaving the queue is never refused; and a rate holds across several gateway
processes. The windows are a minute long, so no count here depends on how fast the
machine is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.services.accounts import api_token_create
from core.services.online import online_model_register
from tests.factories import EnvironmentFactory, TournamentFactory, UserFactory
from tests.support.gateway import GATEWAY_SETTINGS, Gateway, gateway_started

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

#: Small rates, in minutes: a flood reaches them at once, and they stay reached.
TIGHT = {
    **GATEWAY_SETTINGS,
    "ARENA_API_TOKEN_RATE": "5/min",
    "ARENA_API_ANONYMOUS_RATE": "5/min",
    "ARENA_ONLINE_RATE": "5/min",
}


@pytest.fixture
def gateway(celery_workers, shared_gateways, redis_url, settings) -> Iterator[Gateway]:
    yield shared_gateways.get(celery_workers, redis_url, settings, **TIGHT)


def flood(gateway: Gateway, path: str, token: str | None, times: int = 8) -> list[int]:
    return [gateway.request("GET", path, token=token)[0] for _ in range(times)]


def test_one_users_flood_leaves_everyone_else_at_the_same_address_alone(gateway):
    environment = EnvironmentFactory(name="connect_four")
    flooder, other = UserFactory(), UserFactory()
    _, flooders_token = api_token_create(user=flooder, name="cli", scopes=["read"])
    _, others_token = api_token_create(user=other, name="cli", scopes=["read"])
    _, others_model = online_model_register(owner=other, environment=environment, name="m")

    flooded = flood(gateway, "/api/v1/environments", flooders_token)

    assert flooded[:5] == [200] * 5 and set(flooded[5:]) == {429}
    # All from 127.0.0.1, as behind one NAT: each holder has a count of its own.
    assert gateway.request("GET", "/api/v1/environments", token=others_token)[0] == 200
    assert gateway.request("GET", "/api/v1/online/status", token=others_model)[0] == 200
    assert gateway.request("GET", "/api/v1/environments")[0] == 200


def test_a_users_tokens_share_one_count(gateway):
    user = UserFactory()
    first = api_token_create(user=user, name="one", scopes=["read"])[1]
    second = api_token_create(user=user, name="two", scopes=["read"])[1]

    statuses = flood(gateway, "/api/v1/environments", first, 3) + flood(
        gateway, "/api/v1/environments", second, 3
    )

    assert statuses == [200] * 5 + [429]


def test_a_flooding_model_can_always_leave_the_queue(gateway):
    environment = EnvironmentFactory(name="connect_four")
    TournamentFactory(environment=environment, format="ladder", status="running")
    competitor, token = online_model_register(
        owner=UserFactory(), environment=environment, name="m"
    )
    assert gateway.request("POST", "/api/v1/online/queue", token=token)[0] == 200

    assert 429 in flood(gateway, "/api/v1/online/status", token)
    status, answer, _ = gateway.request("DELETE", "/api/v1/online/queue", token=token)

    assert status == 200
    assert answer["state"] == "idle"
    competitor.online_seat.refresh_from_db()
    assert not competitor.online_seat.is_queued


def test_guessing_tokens_costs_the_guesser_only(gateway):
    user = UserFactory()
    _, token = api_token_create(user=user, name="cli", scopes=["read"])

    guesses = flood(gateway, "/api/v1/environments", "arena_guessed_" + "x" * 30)

    assert guesses[:5] == [401] * 5 and set(guesses[5:]) == {429}
    assert gateway.request("GET", "/api/v1/environments", token=token)[0] == 200
    assert gateway.request("GET", "/api/v1/environments")[0] == 200


def test_a_rate_holds_across_gateway_processes(gateway, celery_workers, redis_url, settings):
    second = gateway_started(celery_workers, redis_url, settings, **TIGHT)
    assert second.port != gateway.port
    user = UserFactory()
    _, token = api_token_create(user=user, name="cli", scopes=["read"])

    statuses = [
        (gateway if number % 2 else second).request("GET", "/api/v1/environments", token=token)[0]
        for number in range(8)
    ]

    assert statuses == [200] * 5 + [429] * 3


def test_a_made_up_forwarded_for_does_not_escape_the_anonymous_rate(gateway):
    """Not behind the proxy, X-Forwarded-For is the client's own word, even from loopback
    (a tunnel, a local TLS front): it is never read."""
    statuses = [
        gateway.request(
            "GET", "/api/v1/environments", headers={"X-Forwarded-For": f"198.51.100.{n}"}
        )[0]
        for n in range(8)
    ]

    assert statuses == [200] * 5 + [429] * 3
