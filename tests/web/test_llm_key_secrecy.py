"""An LLM player's API key, registered on the site, through the API and in the admin,
then used in a duel against the local server: it reaches the server, and nothing else:
no database row (but its encrypted column), no page, no API answer, no log line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.core import serializers
from django.test import Client
from django.urls import reverse

from core.models import Competitor, Duel, DuelStatus, LLMPlayer, User
from duel_runner.services import duel_play
from llm.local_server import LocalLLMServer
from tests.factories import ApiTokenFactory, OrganizerFactory, UserFactory, queued_duel
from tests.pipeline import PLAYERS, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

KEYS = {
    "site": "sk-from-the-site-5b6c7d8e",
    "api": "sk-from-the-api-1f2e3d4c",
    "admin": "sk-from-the-admin-0a9b8c7d",
}
TOKEN = "arena_secrecy-token-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as running:
        yield running


def registered(server: LocalLLMServer, owner: User) -> list[Competitor]:
    settings = {"base_url": server.url, "model": "rule-based", "max_tokens": "256"}
    site = Client()
    site.force_login(owner)
    site.post(
        reverse("llm_player_create", args=["tic_tac_toe"]),
        {
            f"llm-{name}": value
            for name, value in {
                **settings,
                "name": "from-site",
                "api_key": KEYS["site"],
                "request_timeout": "30",
                "is_public": "on",
            }.items()
        },
    )
    ApiTokenFactory(user=owner, secret=TOKEN, scopes="read submit")
    Client().post(
        "/api/v1/llm/players",
        data=json.dumps(
            {
                **settings,
                "max_tokens": 256,
                "environment": "tic_tac_toe",
                "name": "from-api",
                "api_key": KEYS["api"],
                "public": True,
            }
        ),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    admin = Client()
    admin.force_login(OrganizerFactory())
    admin.post(
        reverse("admin:core_llmplayer_add"),
        {
            **settings,
            "owner": owner.pk,
            "environment": Competitor.objects.get(name="from-site").environment_id,
            "name": "from-admin",
            "is_public": "on",
            "api_key": KEYS["admin"],
            "request_timeout": "30",
            "harness_version": "1",
            "price_input_per_million": "0.5",
            "price_output_per_million": "1.5",
        },
    )
    return list(Competitor.objects.filter(kind="llm").order_by("name"))


def every_row() -> str:
    rows = []
    for model in apps.get_models():
        rows.append(serializers.serialize("json", model._default_manager.all()))
    return "\n".join(rows)


def test_the_key_goes_to_the_server_and_nowhere_else(server, caplog):
    caplog.set_level(logging.DEBUG)
    owner = UserFactory()
    players = registered(server, owner)
    assert [player.name for player in players] == ["from-admin", "from-api", "from-site"]
    assert {player.llm.config().api_key for player in players} == set(KEYS.values())
    rando = upload(owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py")
    duels = [
        queued_duel([player.revisions.get(), rando], num_matches=2, seed=3) for player in players
    ]

    for duel in duels:
        duel_play(duel_id=duel.pk)

    assert all(Duel.objects.get(pk=duel.pk).status == DuelStatus.SUCCEEDED for duel in duels)
    sent = {
        value
        for headers in server.headers
        for name, value in headers.items()
        if name.lower() == "authorization"
    }
    assert sent == {f"Bearer {key}" for key in KEYS.values()}
    organizer = Client()
    organizer.force_login(OrganizerFactory())
    owners = Client()
    owners.force_login(owner)
    shown = []
    for player in players:
        duel = Duel.objects.with_competitor(player).get()
        match = duel.matches.get(index=0)
        for client in (owners, organizer):
            shown += [
                client.get(player.get_absolute_url()),
                client.get(duel.get_absolute_url()),
                client.get(match.get_absolute_url()),
                client.get(reverse("match_conversations", args=[duel.pk, 0])),
                client.get(reverse("llm_model", args=["rule-based"])),
                client.get(reverse("llm_index")),
                client.get(f"/api/v1/llm/players/{player.pk}"),
                client.get(f"/api/v1/duels/{duel.pk}"),
                client.get(f"/api/v1/duels/{duel.pk}/matches/0/conversations"),
            ]
        shown.append(organizer.get(reverse("admin:core_llmplayer_change", args=[player.llm.pk])))
    shown.append(owners.get("/api/v1/llm/players", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    shown.append(organizer.get(reverse("admin:core_matchconversation_changelist")))

    assert all(response.status_code == 200 for response in shown)
    pages = "\n".join(response.content.decode() for response in shown)
    rows = every_row()
    logs = caplog.text
    for key in KEYS.values():
        assert key not in pages
        assert key not in rows
        assert key not in logs
    assert LLMPlayer.objects.exclude(api_key_encrypted="").count() == 3
