"""Registering online models through the API (user tokens with the 'play' scope), and
what an online competitor is on the site: no uploads, its own pages."""

from __future__ import annotations

import json

import pytest

from core.models import ApiToken, Competitor, OnlineSeat, Revision, StepStatus
from core.services.online import online_model_register
from core.services.revisions import revision_create
from core.services.uploads import UploadRejected
from tests.factories import CompetitorFactory, DuelFactory, EnvironmentFactory
from tests.support.responses import body

pytestmark = pytest.mark.django_db


def register(client, headers, name="net-bot", environment="connect_four"):
    return client.post(
        "/api/v1/online/models",
        data=json.dumps({"environment": environment, "name": name}),
        content_type="application/json",
        **headers,
    )


@pytest.fixture
def connect_four():
    return EnvironmentFactory(name="connect_four")


def test_it_registers_a_model_and_gives_its_token_once(client, alice, bearer, connect_four):
    response = register(client, bearer(alice, "play"))

    assert response.status_code == 201
    answer = body(response)
    assert answer["model"] == {
        "environment": "connect_four",
        "name": "net-bot",
        "version": 1,
        "public": False,  # private by default, as every competitor
        "queued": False,
        "connected": False,
        "duels_played": 0,
    }
    competitor = Competitor.objects.get(name="net-bot")
    assert competitor.is_online and competitor.owner == alice
    token = ApiToken.objects.get(competitor=competitor)
    assert answer["token"].startswith("arena_")
    assert token.token_hash != answer["token"]  # only its hash is kept
    assert token.scope_set == {"read", "play"}
    revision = Revision.objects.get(competitor=competitor)
    assert revision.is_valid  # nothing to build or self-play: checked as it plays
    assert OnlineSeat.objects.filter(competitor=competitor, queued_at=None).exists()


def test_it_refuses_a_taken_name_an_unknown_environment_and_a_bad_name(
    client, alice, bob, bearer, connect_four
):
    CompetitorFactory(environment=connect_four, name="taken", owner=bob)
    headers = bearer(alice, "play")

    taken = register(client, headers, name="taken")
    unknown = register(client, headers, environment="chess")
    bad = register(client, headers, name="no spaces!")

    assert (taken.status_code, body(taken)["error"]["code"]) == (400, "refused")
    assert "is taken" in body(taken)["error"]["message"]
    assert (unknown.status_code, body(unknown)["error"]["code"]) == (404, "not_found")
    assert bad.status_code == 422
    assert not Competitor.objects.filter(owner=alice, kind="online").exists()


def test_it_refuses_names_no_row_can_hold_with_422_not_a_database_error(
    client, alice, bearer, connect_four
):
    """Found by fuzzing: a NUL in the environment's name reached PostgreSQL (500)."""
    online_model_register(owner=alice, environment=connect_four, name="mine")
    headers = bearer(alice, "play")

    answers = [
        register(client, headers, environment="connect\x00four"),
        register(client, headers, name="net\x00bot"),
        client.post("/api/v1/online/models/connect%00four/mine/tokens", **headers),
        client.post("/api/v1/online/models/connect_four/mi%00ne/versions", **headers),
    ]

    for answer in answers:
        assert (answer.status_code, body(answer)["error"]["code"]) == (422, "invalid")
    assert alice.competitors.get(kind="online").revisions.count() == 1
    assert ApiToken.objects.filter(competitor__name="mine").count() == 1


def test_it_needs_the_play_scope_to_register(client, alice, bearer, connect_four):
    response = register(client, bearer(alice, "read"))

    assert response.status_code == 403
    assert "play" in body(response)["error"]["message"]


def test_it_lists_ones_models_and_makes_new_tokens_and_versions(
    client, alice, bob, bearer, connect_four
):
    online_model_register(owner=alice, environment=connect_four, name="mine")
    online_model_register(owner=bob, environment=connect_four, name="bobs")
    headers = bearer(alice, "play")

    listed = body(client.get("/api/v1/online/models", **headers))
    token = client.post("/api/v1/online/models/connect_four/mine/tokens", **headers)
    version = client.post("/api/v1/online/models/connect_four/mine/versions", **headers)
    others = client.post("/api/v1/online/models/connect_four/bobs/tokens", **headers)

    assert [model["name"] for model in listed["items"]] == ["mine"]
    assert listed["count"] == 1
    assert token.status_code == 201 and body(token)["token"].startswith("arena_")
    assert ApiToken.objects.filter(competitor__name="mine").count() == 2
    assert version.status_code == 201 and body(version)["version"] == 2
    assert others.status_code == 404  # another user's model does not exist for alice


def test_it_counts_the_duels_a_model_played_to_the_end(client, alice, bearer, connect_four):
    model, _ = online_model_register(owner=alice, environment=connect_four, name="mine")
    revision = model.revisions.get()
    DuelFactory(tournament__environment=connect_four, revisions=[revision, None], finished=True)
    DuelFactory(tournament__environment=connect_four, revisions=[None, revision], finished=True)
    DuelFactory(tournament__environment=connect_four, revisions=[revision, None])  # queued

    listed = body(client.get("/api/v1/online/models", **bearer(alice, "play")))

    assert listed["items"][0]["duels_played"] == 2


def test_it_refuses_an_upload_to_an_online_competitor(alice, connect_four):
    competitor, _ = online_model_register(owner=alice, environment=connect_four, name="net")

    with pytest.raises(UploadRejected, match="plays online"):
        revision_create(
            competitor=competitor,
            uploaded_by=alice,
            filename="main.py",
            content=b"def agent(observation, configuration):\n    return 0\n",
        )
    assert competitor.revisions.count() == 1


def test_it_shows_an_online_competitor_and_how_to_connect(client, alice, connect_four):
    competitor, _ = online_model_register(owner=alice, environment=connect_four, name="net")
    client.force_login(alice)

    page = client.get(competitor.get_absolute_url()).content.decode()
    revision = client.get(competitor.revisions.get().get_absolute_url()).content.decode()

    assert "It plays online" in page
    assert "python -m arena_sdk connect" in page
    assert "Upload a new revision" not in page
    assert "there is no code here" in revision
    assert competitor.revisions.get().build_status == StepStatus.SUCCEEDED
