"""LLM players through the API: registering (a ``submit`` token), listing, changing one's
own, the conversations of a match; the key, write-only, never in an answer."""

from __future__ import annotations

import json

import pytest

from core.models import Competitor, LLMPlayer
from tests.factories import (
    DuelFactory,
    EnvironmentFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
)
from tests.support.responses import body

pytestmark = pytest.mark.django_db

KEY = "sk-api-secret-1a2b3c4d5e"


def register(client, headers, **fields):
    payload = {
        "environment": "tic_tac_toe",
        "name": "gpt-bot",
        "base_url": "http://127.0.0.1:8011/v1",
        "model": "rule-based",
        "api_key": KEY,
        "temperature": 0.3,
        **fields,
    }
    return client.post(
        "/api/v1/llm/players",
        data=json.dumps(payload),
        content_type="application/json",
        **headers,
    )


def test_it_registers_a_player_and_never_shows_its_key(client, alice, bearer):
    EnvironmentFactory()

    response = register(client, bearer(alice, "read", "submit"))

    assert response.status_code == 201, response.content
    player = body(response)
    assert player["name"] == "gpt-bot" and player["key"] == "stored"
    assert (player["model"], player["temperature"], player["version"]) == ("rule-based", 0.3, 1)
    assert KEY not in response.content.decode()
    assert Competitor.objects.get(name="gpt-bot").llm.config().api_key == KEY


def test_it_needs_the_submit_scope_to_register(client, alice, bearer):
    EnvironmentFactory()

    assert register(client, bearer(alice, "read")).status_code == 403
    assert not LLMPlayer.objects.exists()


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"base_url": "file:///etc/passwd"}, "base_url"),
        ({"base_url": "http://example.com/\x00"}, "base_url"),
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": -0.1}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"model": "bad\x00name"}, "model"),
        ({"api_key_ref": "vault:secret"}, "api_key_ref"),
        ({"harness_version": "0"}, "harness_version"),
    ],
)
def test_it_refuses_bad_settings_with_the_field_named(client, alice, bearer, fields, where):
    EnvironmentFactory()

    response = register(client, bearer(alice, "submit"), **fields)

    assert response.status_code == 422
    assert where in json.dumps(body(response)["error"]["details"])
    assert not LLMPlayer.objects.exists()


def test_it_refuses_a_key_and_a_reference_together(client, alice, bearer):
    EnvironmentFactory()

    response = register(client, bearer(alice, "submit"), api_key_ref="env:ARENA_LLM_KEY_X")

    assert response.status_code == 422 and "not both" in body(response)["error"]["message"]


def test_it_lists_the_players_one_may_see_and_hides_private_ones(client, alice, bob, bearer):
    mine = LLMPlayerFactory(competitor__owner=alice, competitor__is_public=False).competitor
    bobs_private = LLMPlayerFactory(competitor__owner=bob, competitor__is_public=False)
    public = LLMPlayerFactory(competitor__owner=bob).competitor

    listed = body(client.get("/api/v1/llm/players", **bearer(alice)))
    hidden = client.get(f"/api/v1/llm/players/{bobs_private.competitor_id}", **bearer(alice))

    assert {player["name"] for player in listed["items"]} == {mine.name, public.name}
    assert hidden.status_code == 404
    anonymous = body(client.get("/api/v1/llm/players"))
    assert [player["name"] for player in anonymous["items"]] == [public.name]


def test_it_lets_the_owner_change_a_player_which_makes_a_new_version(client, alice, bob, bearer):
    competitor = LLMPlayerFactory(competitor__owner=alice, api_key=KEY).competitor
    url = f"/api/v1/llm/players/{competitor.pk}"

    changed = client.patch(
        url,
        data=json.dumps({"temperature": 1.1}),
        content_type="application/json",
        **bearer(alice, "submit"),
    )
    by_bob = client.patch(
        url,
        data=json.dumps({"temperature": 0}),
        content_type="application/json",
        **bearer(bob, "submit"),
    )

    assert changed.status_code == 200 and body(changed)["temperature"] == 1.1
    assert body(changed)["version"] == 2 and body(changed)["key"] == "stored"
    assert by_bob.status_code == 404
    assert LLMPlayer.objects.get(competitor=competitor).config().api_key == KEY


def test_it_answers_a_matchs_conversations_as_json_and_json_lines(client):
    llm = LLMPlayerFactory(competitor__share_logs=True).competitor
    duel = DuelFactory(
        finished=True,
        tournament__environment=llm.environment,
        revisions=[llm.revisions.get(), None],
    )
    match = MatchFactory(duel=duel)
    conversation = MatchConversationFactory(match=match, player=1)
    base = f"/api/v1/duels/{duel.pk}/matches/{match.index}/conversations"

    listed = body(client.get(base))
    lines = client.get(base + ".jsonl")
    duel_lines = client.get(f"/api/v1/duels/{duel.pk}/conversations.jsonl")

    assert [row["player"] for row in listed["items"]] == [1]
    first = listed["items"][0]
    assert first["turns"] == conversation.turns and first["competitor"] == llm.name
    assert lines["Content-Type"] == "application/x-ndjson"
    assert len(lines.content.splitlines()) == len(conversation.turns) == conversation.moves
    assert duel_lines.content == lines.content


def test_it_says_when_no_player_plays_a_model(client):
    response = client.get("/api/v1/llm/models/nobody-plays-this")

    assert response.status_code == 404 and body(response)["error"]["code"] == "not_found"
