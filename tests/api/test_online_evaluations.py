"""Online agents in score competitions end to end, on the production path: an owner
enters a model through the gateway's API, the ``online`` queue's worker plays its
evaluation on the Redis seat bus, and the model's client (``python -m arena_sdk connect
--no-join``, another process) answers every step of the competition's CartPole episodes
over HTTP through the gateway, as in a duel. A well-behaved client is ranked on the
leaderboard beside a hosted agent on the same episodes; a misbehaving one is charged
each episode's fault, with its reason, and the hosted agent is not affected."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.models import DuelStatus, Environment, Evaluation, ScoreCompetition, User
from core.services.accounts import api_token_create
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.gateway import GATEWAY_SETTINGS, Gateway, wait_until_up
from tests.support.redis import free_port
from tests.support.workers import ROOT, Workers, wait_for
from tournament_manager.score_competitions import score_competition_start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

RANDOM = PLAYERS / "cartpole" / "random_player.py"
ILLEGAL = """\
from arena_sdk import Agent


class Pushes(Agent):
    def act(self, turn):
        return 7  # CartPole's actions are 0 and 1
"""


@dataclasses.dataclass
class Stack:
    workers: Workers
    gateway: Gateway
    owner: User
    user_token: str
    cup: ScoreCompetition


@pytest.fixture
def stack(celery_workers, redis_url, settings) -> Stack:
    """Workers (hosted, and the online queue's in threads), the gateway, all on one Redis
    seat bus; a hosted CartPole agent; a started competition it is evaluated in."""
    settings.ARENA_ONLINE_BUS_URL = redis_url
    # The seat's clocks are not what this checks: a generous network allowance keeps a
    # loaded machine from timing the client out.
    common = {"ARENA_ONLINE_BUS_URL": redis_url, "ARENA_ONLINE_ALLOWANCE_SECONDS": "60"}
    celery_workers.start("hosted", **common)
    celery_workers.start("online", queues="online", pool="threads", concurrency=4, **common)
    port = free_port()
    celery_workers.manage(
        "gateway", "run_gateway", "--port", str(port), **common, **GATEWAY_SETTINGS
    )
    gateway = wait_until_up(Gateway("127.0.0.1", port, celery_workers))
    owner = make_user()
    hosted = upload(owner, "cartpole", "hosted-random", RANDOM)
    wait_for(
        lambda: Evaluation.objects.filter(revision=hosted, is_validation=True).exists(),
        timeout=90,
        what="the hosted agent to be validated",
    )
    cup = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"), name="Pole cup", episodes=3, seed=7
    )
    score_competition_start(competition=cup)
    _, user_token = api_token_create(user=owner, name="cli", scopes=["read", "submit", "play"])
    return Stack(celery_workers, gateway, owner, user_token, cup)


def _register_and_enter(stack: Stack, name: str) -> tuple[str, int]:
    """Through the gateway's API, as an owner would: the model, then its entry."""
    status, model, _ = stack.gateway.request(
        "POST",
        "/api/v1/online/models",
        token=stack.user_token,
        body=json.dumps({"environment": "cartpole", "name": name, "public": True}).encode(),
    )
    assert status == 201, model
    status, entry, _ = stack.gateway.request(
        "POST",
        f"/api/v1/score-competitions/{stack.cup.pk}/entries",
        token=stack.user_token,
        body=json.dumps({"competitor": name}).encode(),
    )
    assert status == 201, entry
    assert entry["evaluation"] is not None
    return str(model["token"]), int(entry["evaluation"])


def _connect(
    stack: Stack, token: str, agent: Path, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    token_file = tmp_path / "model.token"
    token_file.write_text(token)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_sdk",
            "connect",
            "--server",
            stack.gateway.url,
            "--token-file",
            str(token_file),
            "--no-join",
            "--duels",
            "1",
            str(agent),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        # This tree's SDK, whatever the virtualenv has installed.
        env={**os.environ, "PYTHONPATH": str(ROOT / "sdk")},
    )


def _played(evaluation_id: int) -> Evaluation:
    wait_for(
        lambda: Evaluation.objects.filter(
            pk=evaluation_id, status__in=[DuelStatus.SUCCEEDED, DuelStatus.FAILED]
        ).exists(),
        timeout=60,
        what="the evaluation to be stored",
    )
    return Evaluation.objects.get(pk=evaluation_id)


def test_an_online_agent_plays_its_episodes_over_http_and_is_ranked(stack, tmp_path):
    token, evaluation_id = _register_and_enter(stack, "net-random")

    client = _connect(stack, token, RANDOM, tmp_path)

    assert client.returncode == 0, client.stderr + stack.workers.log("online")
    assert f"evaluation {evaluation_id}" in client.stderr
    evaluation = _played(evaluation_id)
    assert evaluation.status == DuelStatus.SUCCEEDED, evaluation.error
    assert evaluation.error == "" and evaluation.faulty_episodes == 0
    assert [episode["seed"] for episode in evaluation.episodes] == stack.cup.seeds
    assert all(episode["steps"] == episode["return"] > 0 for episode in evaluation.episodes)
    assert "online@" in stack.workers.log("online")  # refereed by the online worker

    status, board, _ = stack.gateway.request("GET", f"/api/v1/score-competitions/{stack.cup.pk}")
    assert status == 200
    ranked = {entry["competitor"]: entry for entry in board["leaderboard"]}
    assert set(ranked) == {"hosted-random", "net-random"}
    assert all(entry["rank"] in (1, 2) and entry["episodes"] == 3 for entry in ranked.values())
    assert ranked["net-random"]["mean_return"] == evaluation.mean_return
    assert [entrant["name"] for entrant in board["entered"]] == ["net-random"]


def test_a_misbehaving_online_agent_is_charged_each_episode_and_no_one_else(stack, tmp_path):
    agent = tmp_path / "pushes.py"
    agent.write_text(ILLEGAL)
    token, evaluation_id = _register_and_enter(stack, "net-wrong")

    client = _connect(stack, token, agent, tmp_path)

    assert client.returncode == 0, client.stderr + stack.workers.log("online")
    evaluation = _played(evaluation_id)
    # Scored, not failed: the faults are the agent's, each ending its episode at CartPole's
    # worst return, with the reason.
    assert evaluation.status == DuelStatus.SUCCEEDED
    assert evaluation.mean_return == 0.0 and evaluation.faulty_episodes == 3
    for episode in evaluation.episodes:
        assert [fault["kind"] for fault in episode["faults"]] == ["illegal_action"]
        assert (
            episode["error_msg"]
            == "player 1 illegal_action on move 1: 7 is illegal: action 7 is out of range 0..1"
        )
    assert "7 is illegal" in evaluation.error
    hosted = Evaluation.objects.get(
        competition=stack.cup, revision__competitor__name="hosted-random"
    )
    assert hosted.status == DuelStatus.SUCCEEDED and hosted.faulty_episodes == 0


def test_the_embedded_default_referees_an_online_evaluation_in_the_gateways_process(settings):
    """No Redis: the seat bus is in this process's memory, so the entry's task hands the
    evaluation to the gateway's own referee threads (``OnlineDuelRunner``), which play it
    against the client on that bus."""

    from core.services.online import online_model_register, seat_bus
    from core.services.scores import score_entry_create
    from duel_runner.online import OnlineDuelRunner
    from tests.support.online import BusClient, gateway_running

    settings.ARENA_ONLINE_BUS_URL = ""
    bus = seat_bus()
    cup = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"), name="Pole cup", episodes=2, seed=3
    )
    cup.started_at = cup.created_at
    cup.save()
    model, _ = online_model_register(owner=make_user(), environment=cup.environment, name="net")
    runner = OnlineDuelRunner(concurrency=2, poll_seconds=60)
    runner.start()
    try:
        with gateway_running(bus), BusClient(bus, model.seat, RANDOM) as client:
            evaluation = score_entry_create(competition=cup, competitor=model)
            assert evaluation is not None
            assert client.duels_over.wait(60), client.events[-5:]
            played = _played(evaluation.pk)
    finally:
        runner.stop()

    assert played.status == DuelStatus.SUCCEEDED, played.error
    assert played.faulty_episodes == 0 and played.episodes_played == 2
    [announcement] = [event for event in client.events if event["type"] == "duel"]
    assert announcement["evaluation"] == evaluation.pk and announcement["duel"] is None
    assert (announcement["episodes"], announcement["opponents"]) == (2, [])
