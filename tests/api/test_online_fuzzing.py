"""Online play's operations against the OpenAPI document, through a real gateway (uvicorn,
the per-move endpoints in front of Django, a real Redis seat bus): requests schemathesis
generates from the document, anonymously and with tokens, get no server error and only
the answers the document describes.

The seat is in a duel, with a request open, so that the stream and the long poll have
events to give; streams end after a second (``ARENA_ONLINE_STREAM_SECONDS``) and long
polls wait half a second at most, so that every request has an end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig

from core.accounts import api_token_create
from core.online import online_model_register
from sandboxes.seat_bus import RedisSeatBus
from tests.factories import EnvironmentFactory, TournamentFactory, UserFactory
from tests.support.gateway import GATEWAY_SETTINGS, Gateway, wait_until_up
from tests.support.redis import free_port

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES_PER_OPERATION = int(os.environ.get("ARENA_FUZZ_EXAMPLES", "25"))
FUZZED_GATEWAY = {
    **GATEWAY_SETTINGS,
    "ARENA_ONLINE_STREAM_SECONDS": "1",
    "ARENA_ONLINE_POLL_SECONDS": "0.5",
    # Every generated request must reach its operation, not the rate limit.
    "ARENA_ONLINE_RATE": "100000/s",
    "ARENA_API_TOKEN_RATE": "1000000/min",
    "ARENA_API_ANONYMOUS_RATE": "1000000/min",
}


@pytest.fixture
def playing_gateway(celery_workers, redis_url, settings) -> Iterator[tuple[Gateway, str, str]]:
    """A gateway, a model in a duel with a request open, its token and a user token."""
    settings.ARENA_ONLINE_BUS_URL = redis_url
    environment = EnvironmentFactory(name="connect_four")
    TournamentFactory(environment=environment, format="ladder", status="running")
    owner = UserFactory()
    competitor, model_token = online_model_register(
        owner=owner, environment=environment, name="fuzzed"
    )
    _, user_token = api_token_create(user=owner, name="fuzzing", scopes=["read", "play"])
    bus = RedisSeatBus(redis_url)
    bus.seat_open(competitor.seat, duel=1, announcement=b'{"type":"duel","duel":1}')
    bus.publish(competitor.seat, b'{"type":"act","id":7,"match":0}', awaits="act:7")
    port = free_port()
    celery_workers.manage(
        "gateway",
        "run_gateway",
        "--port",
        str(port),
        ARENA_ONLINE_BUS_URL=redis_url,
        **FUZZED_GATEWAY,
    )
    yield wait_until_up(Gateway("127.0.0.1", port, celery_workers)), model_token, user_token


def online_document(gateway: Gateway, auth: dict[str, Any] | None) -> schemathesis.BaseSchema:
    config = SchemathesisConfig.from_dict(
        {
            **({"auth": {"openapi": auth}} if auth else {}),
            "generation": {
                "max-examples": EXAMPLES_PER_OPERATION,
                "deterministic": True,
                "with-security-parameters": auth is None,
                "allow-extra-parameters": False,
            },
            "operations": [
                {
                    # A well-formed reply the referee is not waiting for (most generated
                    # ones: another id, a second answer) is refused with 409, as documented.
                    "include-operation-id": "online_reply",
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ["202", "401", "403", "409", "429"]
                        }
                    },
                }
            ],
        }
    )
    return schemathesis.openapi.from_url(
        f"{gateway.url}/api/v1/openapi.json", config=config
    ).include(tag="online play")


@pytest.fixture
def anonymous_schema(playing_gateway) -> schemathesis.BaseSchema:
    gateway, _, _ = playing_gateway
    return online_document(gateway, None)


@pytest.fixture
def token_schema(playing_gateway) -> schemathesis.BaseSchema:
    gateway, model_token, user_token = playing_gateway
    return online_document(
        gateway,
        {"ModelTokenAuth": {"bearer": model_token}, "TokenAuth": {"bearer": user_token}},
    )


anonymous = schemathesis.pytest.from_fixture("anonymous_schema")
with_tokens = schemathesis.pytest.from_fixture("token_schema")


@anonymous.parametrize()
def test_it_answers_every_anonymous_online_request_as_its_document_says(case):
    case.call_and_validate()


@with_tokens.parametrize()
def test_it_answers_every_online_request_with_tokens_as_its_document_says(case):
    case.call_and_validate()
