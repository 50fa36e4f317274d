"""Who may call what, for every operation of the OpenAPI document: a real gateway (which
serves the whole API and online play's own endpoints) is asked each operation by every
kind of caller: no token, a user token with each scope, the owner's model token, and
another user's tokens. The operations are read from the document, so a new one is
walked without anyone adding it here; one that does not say who may call it
(``x-arena-access``) fails.

What each kind of caller may do is written out below, apart from ``api.auth``'s rule:

- reads: anyone (a user token needs ``read``; a model token reads as the public does);
- ``submit`` operations: a user token with ``submit``;
- ``models`` operations (register and manage online models): a user token with ``play``;
- ``play`` operations: a model token, for its own model only.

A caller that may is never answered 401 or 403; one that may not is answered 401 without
a token and 403 with one, with the error's code. And nobody but alice sees her private
things: not anonymously, not with another user's tokens, not with her own model token.
"""

from __future__ import annotations

import http.client
import re
from typing import Any

import orjson
import pytest

from core.models import Environment, User
from core.services.accounts import api_token_create
from core.services.online import online_model_register
from tests.factories import LLMPlayerFactory
from tests.support.gateway import GATEWAY_SETTINGS, Gateway

pytestmark = pytest.mark.django_db(transaction=True)

#: Who may call an operation of each access, by caller.
MAY = {
    "read": {"anonymous", "alice read", "alice model", "bob all", "bob model"},
    "submit": {"alice submit", "bob all"},
    "models": {"alice play", "bob all"},
    "play": {"alice model", "bob model"},
}
CALLERS = (
    "anonymous",
    "alice read",
    "alice submit",
    "alice play",
    "alice model",
    "bob all",
    "bob model",
)
#: Callers who must never see alice's private things.
OUTSIDERS = ("anonymous", "alice model", "bob all", "bob model")
#: Text only alice (and the organizers) may read: her agent's log in a public duel, and
#: the name of her private LLM player, entered nowhere.
ALICES_SECRETS = ("alice's private thoughts", "alices-secret-llm")
#: Every generated request must reach its check, not the rate limit.
UNLIMITED = {
    **GATEWAY_SETTINGS,
    "ARENA_ONLINE_RATE": "100000/s",
    "ARENA_API_TOKEN_RATE": "1000000/min",
    "ARENA_API_ANONYMOUS_RATE": "1000000/min",
}


def tokens(alice: User, bob: User, environment: Environment) -> dict[str, str | None]:
    """A token of each kind of caller (None: no token)."""
    _, alices_model = online_model_register(
        owner=alice, environment=environment, name="alices-model", is_public=False
    )
    _, bobs_model = online_model_register(owner=bob, environment=environment, name="bobs-model")

    def user_token(user: User, *scopes: str) -> str:
        return api_token_create(user=user, name=" ".join(scopes), scopes=list(scopes))[1]

    return {
        "anonymous": None,
        "alice read": user_token(alice, "read"),
        "alice submit": user_token(alice, "submit"),
        "alice play": user_token(alice, "play"),
        "alice model": alices_model,
        "bob all": user_token(bob, "read", "submit", "play"),
        "bob model": bobs_model,
    }


def path_values(path: str, world: dict[str, Any]) -> str:
    """The path with its parameters naming alice's things (a new parameter name fails
    here: say what it should name)."""

    def value(found: re.Match[str]) -> str:
        name = found.group(1)
        if name == "name":
            if "{environment}" not in path:
                return str(world["environment"])
            return "alices-model" if path.startswith("/api/v1/online/models") else "alices-bot"
        assert name in world, f"{path}: name a value for the path parameter {name!r}"
        return str(world[name])

    return re.sub(r"{(\w+)}", value, path)


def call(
    gateway: Gateway, method: str, path: str, token: str | None
) -> tuple[int, dict[str, Any], bytes]:
    """One request; a stream's answer is read up to its headers."""
    connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = b"{}" if method in ("POST", "PATCH", "PUT") else None
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        if response.getheader("Content-Type", "").startswith("application/x-ndjson"):
            return response.status, {}, b""
        content = response.read()
        if response.getheader("Content-Type", "").startswith("application/json"):
            answer = orjson.loads(content) if content else {}
            return response.status, answer if isinstance(answer, dict) else {}, content
        return response.status, {}, content
    finally:
        connection.close()


def operations(gateway: Gateway) -> list[tuple[str, str, str]]:
    """(method, path, access) of every operation, deletions last; a long poll waits for
    nothing."""
    status, document, _ = call(gateway, "GET", "/api/v1/openapi.json", None)
    assert status == 200
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            assert "x-arena-access" in operation, (
                f"{method.upper()} {path} does not say who may call it: take its auth from api.auth"
            )
            parameters = {parameter["name"] for parameter in operation.get("parameters", [])}
            query = "?wait=0" if "wait" in parameters else ""
            found.append((method.upper(), path + query, operation["x-arena-access"]))
    return sorted(found, key=lambda operation: operation[0] == "DELETE")


def test_every_operation_answers_each_kind_of_caller_as_its_access_says(
    celery_workers,
    shared_gateways,
    redis_url,
    settings,
    alice,
    bob,
    tournament,
    duel,
    validation_duel,
):
    LLMPlayerFactory(
        competitor__owner=alice,
        competitor__name="alices-secret-llm",
        competitor__is_public=False,
        competitor__environment=duel.revisions()[0].competitor.environment,
    )
    gateway = shared_gateways.get(celery_workers, redis_url, settings, **UNLIMITED)
    environment = duel.revisions()[0].competitor.environment
    callers = tokens(alice, bob, environment)
    world = {
        "environment": environment.name,
        "duel_id": duel.pk,
        "index": 0,
        "version": 1,
        "tournament_id": tournament.pk,
        "submission_id": duel.revisions()[0].pk,
        "player_id": alice.competitors.get(name="alices-secret-llm").pk,
        "model": "rule-based",
        "competition_id": 1,
        "slug": "no-such-cup",
        "invitation_id": 1,
        "evaluation_id": 1,
    }
    walked = set()
    alice_saw_a_secret = False
    for method, template, access in operations(gateway):
        path = path_values(template, world)
        for caller in CALLERS:
            status, answer, content = call(gateway, method, path, callers[caller])
            what = f"{method} {template} as {caller}"
            assert status < 500, what
            assert status != 429, what
            if caller in MAY[access]:
                assert status not in (401, 403), f"{what}: {answer}"
            elif callers[caller] is None:
                assert (status, answer["error"]["code"]) == (401, "unauthorized"), what
            else:
                assert (status, answer["error"]["code"]) == (403, "forbidden"), what
            text = content.decode("utf-8", "replace")
            if caller in OUTSIDERS:
                assert not any(secret in text for secret in ALICES_SECRETS), what
            elif any(secret in text for secret in ALICES_SECRETS):
                alice_saw_a_secret = True
        walked.add(access)

    assert walked == set(MAY)  # every kind of operation was walked
    assert alice_saw_a_secret  # her secrets are real text some answers hold


def test_a_model_token_is_told_why_it_may_not_act_as_its_owner(
    celery_workers, shared_gateways, redis_url, settings, alice
):
    gateway = shared_gateways.get(celery_workers, redis_url, settings, **UNLIMITED)
    environment = alice.competitors.get().environment.name
    _, model_token = online_model_register(
        owner=alice, environment=alice.competitors.get().environment, name="alices-model"
    )

    for method, path, body in (
        ("POST", "/api/v1/online/models", {"environment": environment, "name": "another"}),
        ("POST", f"/api/v1/online/models/{environment}/alices-model/tokens", None),
        ("POST", f"/api/v1/online/models/{environment}/alices-model/versions", None),
        ("GET", "/api/v1/submissions", None),
    ):
        status, answer, _ = gateway.request(
            method, path, token=model_token, body=orjson.dumps(body) if body else None
        )
        assert status == 403, path
        assert "speaks for its model alone" in answer["error"]["message"]

    assert alice.competitors.count() == 2  # her bot and the model: no other was made
    assert alice.api_tokens.count() == 1  # the model's token: no other was made
    assert alice.competitors.get(name="alices-model").revisions.count() == 1


@pytest.mark.parametrize("given", [None, "django_auth", "nothing"])
def test_an_operation_that_does_not_say_who_may_call_it_is_refused_when_it_is_added(given):
    from ninja.security import django_auth

    from api.auth import ArenaRouter

    router = ArenaRouter(tags=["tests"])
    options = {"nothing": {}, "django_auth": {"auth": django_auth}}.get(given, {"auth": None})

    with pytest.raises(TypeError, match="who may call it"):

        @router.get("/anything", **options)
        def anything(request):
            return {}
