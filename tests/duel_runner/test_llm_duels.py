"""Duels with an LLM seat, played for real against ``llm.local_server`` (a rule-based
OpenAI-compatible server in a thread): the conversations stored with their matches, the
key sent to the server and nowhere else, a key that cannot be had an unscored error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core import serializers

from core.models import Duel, DuelStatus, MatchConversation
from core.models.llm import SUMMARY_COUNTERS
from duel_runner.services import duel_play
from llm.local_server import LocalLLMServer, Reply, rule_based
from reads.llm import player_stats
from tests.factories import LLMPlayerFactory, queued_duel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

KEY = "sk-duel-secret-4f1e2d3c"


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as running:
        yield running


def llm_vs_random(server: LocalLLMServer, **player: object) -> Duel:
    owner = make_user()
    rando = upload(owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py")
    llm = LLMPlayerFactory(
        competitor__environment=rando.competitor.environment,
        competitor__name="llm-bot",
        base_url=server.url,
        **player,
    )
    return queued_duel([llm.competitor.revisions.get(), rando], num_matches=2, seed=7)


def test_it_stores_every_llm_seats_conversation_with_its_match(server):
    duel = llm_vs_random(server, api_key=KEY)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    matches = list(duel.matches.order_by("index"))
    assert len(matches) == 2
    for match in matches:
        conversation = match.conversations.get()
        assert conversation.player == 1 and conversation.model == "rule-based"
        assert conversation.competitor == duel.revisions()[0].competitor
        assert len(conversation.harness_hash) == 64
        seat = match.seats.index(1)
        # Its moves: the steps after the match's opening (the referee's) where it moved.
        moves = [
            step
            for step, actions in enumerate(match.actions)
            if actions[seat] is not None and step >= match.opening
        ]
        assert [turn["step"] for turn in conversation.turns] == moves
        assert conversation.moves == len(moves) and conversation.requests >= len(moves)
        assert len(conversation.latencies_ms) == conversation.moves
        assert not conversation.forfeited
    # The key went to the server, as a bearer token, and into no stored row.
    sent = [{name.lower(): value for name, value in headers.items()} for headers in server.headers]
    assert sent and all(headers["authorization"] == f"Bearer {KEY}" for headers in sent)
    stored = serializers.serialize("json", [*MatchConversation.objects.all(), duel, *matches])
    assert KEY not in stored and KEY not in duel.players()[0].log


def test_it_marks_the_conversation_of_a_player_that_forfeited(server):
    server.brain = lambda request: Reply(text="I would rather not say.")
    duel = llm_vs_random(server)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.players()[1].wins == 2
    for conversation in MatchConversation.objects.filter(match__duel=duel):
        assert conversation.forfeited
        assert conversation.unparseable == conversation.requests > 1
        assert conversation.retries == conversation.requests - 1
        assert {counter: getattr(conversation, counter) >= 0 for counter in SUMMARY_COUNTERS}


def test_it_ends_a_duel_whose_key_cannot_be_read_in_error_charged_to_nobody(server):
    duel = llm_vs_random(server, api_key_ref="env:ARENA_LLM_KEY_TEST_MISSING")

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.FAILED and duel.result == ""
    assert "ARENA_LLM_KEY_TEST_MISSING" in duel.reported_error
    assert duel.players()[0].errors == 0 and not duel.matches.exists()
    assert server.requests == []


def test_it_ends_a_duel_whose_server_keeps_failing_in_error_charged_to_nobody(server):
    server.brain = lambda request: Reply(text="overloaded", status=500)
    duel = llm_vs_random(server, request_timeout=5)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.FAILED and duel.result == ""
    assert not MatchConversation.objects.filter(match__duel=duel).exists()
    server.brain = rule_based


def test_it_hands_an_llm_duel_to_the_gateways_duel_threads_without_a_broker(server, monkeypatch):
    # The embedded default: the tournament manager's pass that dispatches the duel runs
    # in the gateway's process, whose duel pool plays it; the pass is not held meanwhile.
    from core.services.online import LOCAL_REFEREE
    from duel_runner.tasks import play_duel

    handed: list[tuple[str, int]] = []
    monkeypatch.setattr(LOCAL_REFEREE, "submit", lambda *job: handed.append(job))
    duel = llm_vs_random(server, api_key=KEY)

    play_duel.delay(duel_id=duel.pk)

    assert handed == [("duel", duel.pk)]
    duel.refresh_from_db()
    assert duel.status == DuelStatus.QUEUED  # to be played by the pool, not here

    monkeypatch.setattr(LOCAL_REFEREE, "submit", None)
    play_duel.delay(duel_id=duel.pk)  # a lone manager, or the demo: played here
    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error


def test_an_llm_in_the_third_seat_of_a_game_of_four_is_stored_and_counted(server):
    owner = make_user()
    player = PLAYERS / "lowest_unique" / "random_player.py"
    bidders = [upload(owner, "lowest_unique", f"bidder-{n}", player) for n in range(3)]
    llm = LLMPlayerFactory(
        competitor__environment=bidders[0].competitor.environment,
        competitor__name="llm-bidder",
        base_url=server.url,
    )
    seats = [*bidders[:2], llm.competitor.revisions.get(), bidders[2]]
    duel = queued_duel(seats, num_matches=4, seed=9)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    conversations = MatchConversation.objects.filter(match__duel=duel).order_by("match__index")
    assert [c.player for c in conversations] == [3] * 4
    for conversation in conversations:
        scores = conversation.match.scores
        assert conversation.rank == 1 + sum(other > scores[2] for other in scores)
    [stats] = player_stats(user=owner, competitor=llm.competitor)
    assert stats.games == 4
    ranks = [c.rank for c in conversations]
    assert stats.losses == sum(rank > 1 for rank in ranks)
    assert stats.wins + stats.draws == sum(rank == 1 for rank in ranks)
