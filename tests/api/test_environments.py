"""Environments and leaderboards through the API, and what every endpoint shares:
tokens, errors, rates, the OpenAPI document."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.models import ApiToken
from tests.factories import (
    ApiTokenFactory,
    EnvironmentFactory,
    LeaderboardEntryFactory,
    RevisionFactory,
)
from tests.support.responses import body

pytestmark = pytest.mark.django_db


def test_it_lists_environments_with_their_limits(client):
    game = EnvironmentFactory(name="tic_tac_toe")

    response = client.get("/api/v1/environments")

    assert response.status_code == 200
    [environment] = body(response)["items"]
    assert environment["name"] == "tic_tac_toe"
    assert environment["players"] == 2
    assert environment["limits"] == {
        "move_time": game.move_time,
        "time_bank": game.time_bank,
        "startup_time": game.startup_time,
        "memory_mb": game.memory_mb,
        "cpu_seconds": game.cpu_seconds,
    }
    detail = body(client.get("/api/v1/environments/tic_tac_toe"))
    assert "marking an empty cell" in detail["rules"]


def test_it_gives_the_published_leaderboard_with_private_names_unlinked(client):
    environment = EnvironmentFactory(name="tic_tac_toe")
    leader = RevisionFactory(
        competitor__environment=environment, competitor__name="leader", validated=True
    )
    newcomer = RevisionFactory(
        competitor__environment=environment,
        competitor__name="newcomer",
        competitor__is_public=False,
        validated=True,
    )
    LeaderboardEntryFactory(revision=leader, rank=1, score=1600.4, score_sd=50.2)
    LeaderboardEntryFactory(revision=newcomer, rank=None, score=1700, rank_best=1, rank_worst=2)
    environment.leaderboard_fitted_at = timezone.now()
    environment.first_move_advantage = 35.5
    environment.save()

    board = body(client.get("/api/v1/leaderboard/tic_tac_toe"))

    assert board["first_move_advantage"] == 35.5
    assert board["provisional_below_matches"] == 6
    assert [(e["competitor"], e["rank"], e["provisional"]) for e in board["entries"]] == [
        ("leader", 1, False),
        ("newcomer", None, True),
    ]
    assert board["entries"][0]["score"] == 1600.4
    assert board["entries"][0]["revision"] == 1


def test_an_unknown_environment_is_a_json_404(client):
    response = client.get("/api/v1/leaderboard/chess")

    assert response.status_code == 404
    assert body(response) == {
        "error": {"code": "not_found", "message": "No environment named 'chess'.", "details": []}
    }


def test_a_token_works_and_records_its_use(client, alice, bearer):
    response = client.get("/api/v1/environments", **bearer(alice, "read"))

    assert response.status_code == 200
    assert ApiToken.objects.get(user=alice).last_used_at is not None


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Bearer arena_not-a-token", "The token is unknown or revoked."),
        ("Basic dXNlcjpwYXNz", "Send the token as 'Authorization: Bearer <token>'."),
        ("Bearer ", "Send the token as 'Authorization: Bearer <token>'."),
    ],
)
def test_a_bad_token_is_refused_not_ignored(client, header, message):
    response = client.get("/api/v1/environments", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert body(response)["error"] == {"code": "unauthorized", "message": message, "details": []}


def test_a_revoked_token_or_an_inactive_user_is_refused(client, alice, bob, bearer):
    revoked = bearer(alice)
    ApiToken.objects.filter(user=alice).update(revoked_at=timezone.now())
    inactive = bearer(bob)
    bob.is_active = False
    bob.save()

    assert client.get("/api/v1/environments", **revoked).status_code == 401
    assert client.get("/api/v1/environments", **inactive).status_code == 401


def test_a_token_without_the_read_scope_may_not_read(client, alice, bearer):
    response = client.get("/api/v1/environments", **bearer(alice, "play"))

    assert response.status_code == 403
    assert body(response)["error"]["code"] == "forbidden"
    assert "lacks the scope(s) read" in body(response)["error"]["message"]


def test_a_token_in_the_url_is_never_read(client, alice):
    secret = "arena_in-the-url-0123456789"
    ApiTokenFactory(user=alice, secret=secret)

    response = client.get(f"/api/v1/environments?token={secret}&access_token={secret}")

    assert response.status_code == 200  # anonymous: the query string is not looked at
    assert ApiToken.objects.get(user=alice).last_used_at is None


def test_over_the_rate_it_answers_429_with_retry_after(client, alice, bearer, settings):
    settings.ARENA_API_ANONYMOUS_RATE = "2/min"
    settings.ARENA_API_TOKEN_RATE = "3/min"
    headers = bearer(alice)

    anonymous = [client.get("/api/v1/environments").status_code for _ in range(3)]
    with_token = [client.get("/api/v1/environments", **headers).status_code for _ in range(4)]

    assert anonymous == [200, 200, 429]
    assert with_token == [200, 200, 200, 429]  # its own count, not the address's
    refused = client.get("/api/v1/environments", **headers)
    assert int(refused["Retry-After"]) > 0
    assert body(refused)["error"]["code"] == "rate_limited"


def test_a_made_up_x_forwarded_for_does_not_escape_the_anonymous_rate(client, settings):
    settings.ARENA_API_ANONYMOUS_RATE = "2/min"

    statuses = [
        client.get("/api/v1/environments", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code
        for n in range(3)
    ]

    # Not behind a proxy (ARENA_BEHIND_PROXY off), the header is the client's own word.
    assert statuses == [200, 200, 429]


def test_every_route_is_in_the_openapi_document_and_the_docs_page_needs_no_cdn(client):
    document = body(client.get("/api/v1/openapi.json"))
    docs = client.get("/api/v1/docs").content.decode()

    assert document["openapi"].startswith("3.")
    assert {"/api/v1/environments", "/api/v1/leaderboard/{name}"} <= set(document["paths"])
    assert "/static/ninja/swagger-ui-bundle.js" in docs
    assert "cdn" not in docs.lower()
