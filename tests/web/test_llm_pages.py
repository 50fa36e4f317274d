"""LLM players on the site: registering and editing one, its page, the statistics per
model (computed from conversation rows built by hand), the conversations beside the
replay and their downloads."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.urls import reverse

from core.models import Competitor, DuelResult, LLMPlayer, MatchConversation
from reads.llm import player_stats
from tests.factories import (
    DuelFactory,
    EnvironmentFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
    conversation_turn,
)

pytestmark = pytest.mark.django_db

KEY = "sk-page-secret-9a8b7c6d"
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


def form(**fields):
    values = {
        "name": "gpt-bot",
        "base_url": "http://127.0.0.1:8011/v1",
        "model": "rule-based",
        "api_key": KEY,
        "max_tokens": "256",
        "request_timeout": "30",
        "temperature": "0.2",
        "is_public": "on",
        **fields,
    }
    return {f"llm-{name}": value for name, value in values.items()}


def test_it_registers_an_llm_player_from_the_environment_page(alice_client, alice):
    EnvironmentFactory()

    response = alice_client.post(reverse("llm_player_create", args=["tic_tac_toe"]), form())

    competitor = Competitor.objects.get(name="gpt-bot")
    assert response.status_code == 302 and response["Location"] == competitor.get_absolute_url()
    assert competitor.is_llm and competitor.owner == alice
    assert competitor.llm.config().api_key == KEY
    page = alice_client.get(competitor.get_absolute_url()).content.decode()
    assert "An API key is stored" in page and KEY not in page
    assert "a key is stored; leave empty to keep it" in page.lower()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"base_url": "ftp://example.com/v1"}, "base_url", "Enter a valid URL"),
        ({"temperature": "3"}, "temperature", "less than or equal to 2"),
        ({"max_tokens": "0"}, "max_tokens", "greater than or equal to 1"),
        ({"api_key_ref": "vault:x"}, "api_key_ref", "env:ARENA_LLM_KEY_"),
        ({"api_key_ref": "env:ARENA_LLM_KEY_X"}, "api_key_ref", "not both"),
        ({"name": "no spaces"}, "name", "letters"),
    ],
)
def test_it_says_what_is_wrong_and_registers_nothing(alice_client, fields, field, message):
    EnvironmentFactory()

    response = alice_client.post(reverse("llm_player_create", args=["tic_tac_toe"]), form(**fields))

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not LLMPlayer.objects.exists()


def test_it_lets_the_owner_change_the_settings_and_keeps_the_key(alice_client, alice):
    player = LLMPlayerFactory(competitor__owner=alice, api_key=KEY, temperature=0.2)
    competitor = player.competitor
    edit = reverse("llm_player_edit", args=[competitor.environment.name, competitor.name])

    fields = {key.removeprefix("llm-"): value for key, value in form(temperature="0.9").items()}
    fields.pop("name")
    fields["api_key"] = ""
    response = alice_client.post(edit, {f"llm-{key}": value for key, value in fields.items()})

    assert response.status_code == 302
    player.refresh_from_db()
    assert player.temperature == 0.9 and player.config().api_key == KEY
    assert competitor.revisions.count() == 2


def test_it_lets_nobody_else_change_an_llm_player(client, bob):
    player = LLMPlayerFactory(temperature=0.2)
    competitor = player.competitor
    client.force_login(bob)

    response = client.post(
        reverse("llm_player_edit", args=[competitor.environment.name, competitor.name]),
        form(temperature="1"),
    )

    assert response.status_code == 404
    player.refresh_from_db()
    assert player.temperature == 0.2


# --- statistics ----------------------------------------------------------------------------


def played(llm: Competitor, *, player: int, result: str, **counters) -> MatchConversation:
    """A match of ``llm`` as duel player ``player``, with the given result and counters."""
    environment = llm.environment
    revision = llm.revisions.get()
    revisions = [revision, None] if player == 1 else [None, revision]
    duel = DuelFactory(finished=True, tournament__environment=environment, revisions=revisions)
    scores: dict[str, list[float]] = {
        DuelResult.PLAYER_1_WIN: [1, 0],
        DuelResult.PLAYER_2_WIN: [0, 1],
    }
    match = MatchFactory(duel=duel, result=result, scores=scores.get(result, [0.5, 0.5]))
    return MatchConversationFactory(match=match, player=player, **counters)


@pytest.fixture
def two_players():
    cheap = LLMPlayerFactory(
        competitor__name="cheap",
        price_input_per_million=Decimal(1),
        price_output_per_million=Decimal(2),
    ).competitor
    other = LLMPlayerFactory(competitor__name="other").competitor
    played(
        cheap,
        player=1,
        result=DuelResult.PLAYER_1_WIN,
        requests=10,
        illegal=2,
        unparseable=1,
        retries=3,
        prompt_tokens=1_000_000,
        completion_tokens=500_000,
        latencies_ms=[10.0, 30.0],
    )
    played(
        cheap,
        player=2,
        result=DuelResult.PLAYER_1_WIN,
        requests=10,
        forfeited=True,
        prompt_tokens=0,
        completion_tokens=0,
        latencies_ms=[20.0],
    )
    played(
        cheap,
        player=1,
        result=DuelResult.DRAW,
        requests=5,
        latencies_ms=[40.0],
        prompt_tokens=0,
        completion_tokens=0,
    )
    played(other, player=2, result=DuelResult.PLAYER_2_WIN, requests=4, latencies_ms=[5.0])
    return cheap, other


def test_it_computes_a_models_statistics_from_its_conversations(
    two_players, django_assert_max_num_queries
):
    cheap, _ = two_players

    with django_assert_max_num_queries(3):
        stats = {row.name: row for row in player_stats(user=cheap.owner, model="rule-based")}

    row = stats["cheap"]
    assert (row.games, row.wins, row.losses, row.draws, row.forfeits) == (3, 1, 1, 1, 1)
    assert (row.requests, row.illegal, row.unparseable, row.retries) == (25, 2, 1, 3)
    assert row.illegal_share == pytest.approx(2 / 25)
    assert row.median_latency_ms == 25.0
    assert row.cost == Decimal(1) + Decimal(1)  # a million in at 1, half a million out at 2
    assert (stats["other"].games, stats["other"].wins) == (1, 1)


def test_it_shows_the_same_numbers_on_the_model_page_and_in_the_api(client, two_players):
    page = client.get(reverse("llm_model", args=["rule-based"])).content.decode()
    document = json.loads(client.get("/api/v1/llm/models/rule-based").content)

    rows = {row["player"]: row for row in document["players"]}
    cheap = rows["cheap"]
    assert (cheap["games"], cheap["wins"], cheap["draws"], cheap["losses"]) == (3, 1, 1, 1)
    assert cheap["cost"] == 2.0 and cheap["median_latency_ms"] == 25.0
    assert "1-1-1" in page and "8.0 %" in page and "2.0000" in page and "25 ms" in page
    assert document["games"] == 4
    index = client.get(reverse("llm_index")).content.decode()
    assert reverse("llm_model", args=["rule-based"]) in index


def test_it_shows_a_model_name_with_slashes(client):
    LLMPlayerFactory(model="meta-llama/Llama-3-8B")

    url = reverse("llm_model", args=["meta-llama/Llama-3-8B"])

    assert url == "/llm/models/meta-llama/Llama-3-8B/"
    assert "meta-llama/Llama-3-8B" in client.get(url).content.decode()


# --- conversations beside the replay -----------------------------------------------------------


@pytest.fixture
def hostile_conversation():
    """The match of a public LLM player that shares its logs (its conversations), whose
    first answer is hostile HTML."""
    llm = LLMPlayerFactory(competitor__name="llm-bot", competitor__share_logs=True).competitor
    duel = DuelFactory(
        finished=True,
        tournament__environment=llm.environment,
        revisions=[llm.revisions.get(), None],
    )
    match = MatchFactory(duel=duel)
    conversation = MatchConversationFactory(match=match, player=1)
    turns = conversation.turns
    first = turns[0]
    turns[0] = conversation_turn(
        step=first["step"],
        legal_actions=first["legal_actions"],
        answer=f"ANSWER: {first['action']}",
        action=first["action"],
        retry={"answer": HOSTILE, "verdict": "unparseable", "error": "no ANSWER line"},
    )
    conversation.turns = turns
    conversation.save()
    return conversation


def test_it_shows_the_conversation_beside_the_move_and_escapes_the_answers(
    client, hostile_conversation
):
    match = hostile_conversation.match
    first, second = hostile_conversation.turns[0], hostile_conversation.turns[1]

    page = client.get(match.get_absolute_url() + f"?step={first['step'] + 1}").content.decode()

    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert "no ANSWER line" in page and "Retry 2" in page
    shown = page.split(f'data-conversation-step="{first["step"] + 1}"')[1].split("</section>")[0]
    assert "hidden" not in shown.split(">")[0]
    later = page.split(f'data-conversation-step="{second["step"] + 1}"')[1].split(">")[0]
    assert "hidden" in later  # rendered for the script, shown when the viewer gets there


def test_it_downloads_the_conversations_as_json_lines(client, hostile_conversation):
    match = hostile_conversation.match

    response = client.get(reverse("match_conversations", args=[match.duel_id, match.index]))

    assert response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    lines = [json.loads(line) for line in response.content.splitlines()]
    assert len(lines) == len(hostile_conversation.turns)
    assert lines[0]["turn"]["attempts"][0]["answer"] == HOSTILE
    assert {key for key in lines[0]} == {
        "duel",
        "match",
        "step",
        "player",
        "model",
        "harness_version",
        "harness_hash",
        "turn",
    }
    duel_lines = client.get(reverse("duel_conversations", args=[match.duel_id])).content
    assert duel_lines == response.content


def test_it_hides_a_private_players_conversation_like_its_log(client, bob, hostile_conversation):
    competitor = hostile_conversation.competitor
    Competitor.objects.filter(pk=competitor.pk).update(is_public=False)
    match = hostile_conversation.match
    client.force_login(bob)

    page = client.get(match.get_absolute_url()).content.decode()
    download = client.get(reverse("match_conversations", args=[match.duel_id, match.index]))

    assert "no ANSWER line" not in page
    assert download.status_code == 200 and download.content == b""
