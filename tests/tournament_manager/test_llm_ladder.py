"""LLM players in a ladder: their duels go to the ``online`` queue's threads, and, end to
end, two players of the same model at two temperatures, served by ``llm.local_server``,
play a rated tic-tac-toe ladder whose every conversation the site and the API show."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils.html import escape

from core.celery import app
from core.jobs import dispatch
from core.jobs.lifecycle import jobs_queue
from core.models import (
    DuelStatus,
    Environment,
    Job,
    JobKind,
    MatchConversation,
    Rating,
    Tournament,
    TournamentFormat,
)
from core.services.llm import llm_player_register
from llm.local_server import LocalLLMServer
from tests.factories import DuelFactory, LLMPlayerFactory
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.dispatch import Sent
from tournament_manager.daemon import run_once
from tournament_manager.selectors import paused_revisions
from tournament_manager.services.tournaments import (
    tournament_create,
    tournament_launch,
    tournament_stop,
)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """What is sent, at once (this test's transaction never commits)."""
    started = Sent()

    def start(path: str, *, queue: str | None = None, duel_id: int) -> None:
        started.append((path, duel_id))
        started.queues[(path, duel_id)] = queue

    monkeypatch.setattr(dispatch, "start", start)
    return started


@pytest.mark.django_db
def test_it_sends_duels_with_an_llm_seat_to_the_online_queue(sent):
    hosted = DuelFactory()
    environment = hosted.tournament.environment
    llm = LLMPlayerFactory(competitor__environment=environment).competitor.revisions.get()
    with_llm = DuelFactory(tournament=hosted.tournament, revisions=[llm, None])

    Job.objects.filter(duel__in=[hosted, with_llm]).delete()  # the factory's

    jobs_queue(kind=JobKind.DUEL, subject_ids=[hosted.pk, with_llm.pk])

    # One task for every duel; the queue is chosen as it is sent.
    assert sent == [
        ("duel_runner.tasks.play_duel", hosted.pk),
        ("duel_runner.tasks.play_duel", with_llm.pk),
    ]
    assert sent.queues == {
        ("duel_runner.tasks.play_duel", hosted.pk): None,
        ("duel_runner.tasks.play_duel", with_llm.pk): "online",
    }
    assert app.amqp.router.route({}, "duel_runner.tasks.play_duel")["queue"].name == "duels"
    chosen = app.amqp.router.route({"queue": "online"}, "duel_runner.tasks.play_duel")
    assert chosen["queue"].name == "online"


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as running:
        yield running


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("pipeline")
def test_two_llm_players_play_a_rated_ladder_whose_conversations_are_shown(
    settings, server, client
):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    environment = Environment.objects.get(name="tic_tac_toe")
    careful, reckless = (
        LLMPlayerFactory(
            competitor__environment=environment,
            competitor__name=name,
            # Their conversations are their logs: shown to a visitor once shared.
            competitor__share_logs=True,
            base_url=server.url,
            temperature=temperature,
        ).competitor
        for name, temperature in (("careful", 0.0), ("reckless", 1.5))
    )
    with transaction.atomic():
        ladder = tournament_create(
            environment=environment,
            name="LLM ladder",
            revisions=[],
            format=TournamentFormat.LADDER,
            matches_per_duel=2,
        )
        tournament_launch(tournament=ladder)

    assert run_once()  # pairs the two; the duel is played in this process
    assert run_once()  # and a second one

    duels = list(ladder.duels.order_by("pk"))
    assert len(duels) >= 2
    assert all(duel.status == DuelStatus.SUCCEEDED for duel in duels), [d.error for d in duels]
    for competitor in (careful, reckless):
        assert Rating.objects.get(competitor=competitor).games == 2 * len(duels)
    conversations = MatchConversation.objects.filter(match__duel__in=duels)
    assert conversations.count() == 2 * 2 * len(duels)  # both seats of every match
    assert {row.competitor for row in conversations} == {careful, reckless}
    tournament_stop(tournament=ladder)

    page = client.get(reverse("llm_model", args=["rule-based"])).content.decode()
    assert "careful" in page and "reckless" in page
    stats = json.loads(client.get("/api/v1/llm/models/rule-based").content)
    games = {row["player"]: row["games"] for row in stats["players"]}
    assert games == {"careful": 2 * len(duels), "reckless": 2 * len(duels)}
    assert stats["games"] == 4 * len(duels)

    match = duels[0].matches.get(index=0)
    replay = client.get(match.get_absolute_url() + "?step=1").content.decode()
    first_turn = match.conversations.get(player=match.first_player).turns[0]
    assert escape(first_turn["attempts"][-1]["answer"].splitlines()[0]) in replay
    lines = client.get(reverse("duel_conversations", args=[duels[0].pk])).content.splitlines()
    assert len(lines) == sum(len(row.turns) for row in conversations.filter(match__duel=duels[0]))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("pipeline")
def test_an_llm_player_whose_server_dies_after_validation_is_paused_and_the_ladder_plays_on(
    settings,
):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    settings.ARENA_LADDER_PAUSE_AFTER_FAILURES = 3
    settings.ARENA_STANDING_LADDER_DUELS = 1000  # every entry keeps asking for duels
    Environment.objects.filter(name="tic_tac_toe").update(standing_competition=True)
    environment = Environment.objects.get(name="tic_tac_toe")
    owner = make_user()
    hosted = [
        upload(owner, "tic_tac_toe", name, PLAYERS / "tic_tac_toe" / file)
        for name, file in (("rando", "random_player.py"), ("minimax", "minimax.py"))
    ]
    with LocalLLMServer() as server:
        with transaction.atomic():
            talker = llm_player_register(
                owner=owner,
                environment=environment,
                name="talker",
                base_url=server.url,
                model="rule-based",
                request_timeout=5,
            )
        revision = talker.revisions.get()
        revision.refresh_from_db()
        assert revision.is_valid, revision.job("validation").error  # its server answered
    # The server is gone; the ladder goes on.

    # Passes until it is paused and three duels have been played since (at most 12).
    after_pause = 0
    for _ in range(12):
        run_once()
        if paused_revisions([revision.pk]):
            after_pause += 1
            if after_pause > 3:
                break

    ladder = Tournament.objects.get(is_standing=True)
    its_duels = ladder.duels.of_revision(revision)
    # Paused after three failures, against both opponents: paired no more.
    assert its_duels.count() == its_duels.filter(status=DuelStatus.FAILED).count() == 3
    assert list(paused_revisions([revision.pk, *(r.pk for r in hosted)])) == [revision.pk]
    others = ladder.duels.exclude(pk__in=its_duels)
    assert others.filter(status=DuelStatus.SUCCEEDED).count() >= 3
    assert not others.exclude(status=DuelStatus.SUCCEEDED).exists()
    # Nobody was rated for the failures.
    assert not Rating.objects.filter(competitor=talker).exists()
