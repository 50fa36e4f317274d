"""Score competitions end to end: one-player uploads validated by a short evaluation, an
organizer starts a CartPole competition, the workers evaluate every agent on the same
seeded episodes, and the leaderboard of mean returns shows on the site and in the API."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from core.jobs.policies import Outcome
from core.jobs.watchdog import jobs_recover
from core.jobs.worker import job_claim, job_record
from core.models import Duel, DuelStatus, Evaluation, Job, JobKind, ScoreCompetition, StepStatus
from duel_runner.evaluations import evaluation_play
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tournament_manager.score_competitions import score_competition_start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

#: Plays like the balancer for two episodes (its validation), then exits mid-episode:
#: a crash in the third episode, another in the fourth after its one restart, and the
#: fifth is forfeited.
CRASHES_FROM_THE_THIRD_EPISODE = b"""
import os
from arena_sdk import agent, run


@agent
def fragile(turn):
    if turn.match.index >= 2:
        os._exit(3)
    angle, angular_velocity = turn.observation["observation"][2:]
    return 1 if angle + 0.5 * angular_velocity > 0 else 0


if __name__ == "__main__":
    run(fragile)
"""


def cartpole_agents():
    owner = make_user()
    return {
        name: upload(owner, "cartpole", name, PLAYERS / "cartpole" / filename)
        for name, filename in (
            ("balancer", "balancer.py"),
            ("rando", "random_player.py"),
            ("constant", "constant.py"),
        )
    }


def competition(episodes: int = 6) -> ScoreCompetition:
    from core.models import Environment

    return ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="cartpole"),
        name="Pole cup",
        episodes=episodes,
        seed=7,
    )


def test_it_validates_a_one_player_upload_by_a_short_evaluation(client):
    revision = cartpole_agents()["balancer"]

    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert "2 episodes without a fault" in revision.job("validation").log
    validation = Evaluation.objects.get(revision=revision, is_validation=True)
    assert validation.status == DuelStatus.SUCCEEDED
    assert validation.mean_return == 500.0 and len(validation.episodes) == 2
    assert not Duel.objects.of_revision(revision).exists()  # no self-play
    page = client.get(revision.get_absolute_url()).content.decode()
    assert "Validation evaluation" in page and validation.get_absolute_url() in page


def test_it_ranks_three_agents_by_mean_return_on_the_site_and_in_the_api(client):
    agents = cartpole_agents()
    cup = competition()

    evaluations = score_competition_start(competition=cup)

    assert len(evaluations) == 3
    played = list(cup.evaluations.all())
    assert {evaluation.status for evaluation in played} == {DuelStatus.SUCCEEDED}
    # Every agent played the same seeded episodes.
    assert {tuple(e["seed"] for e in evaluation.episodes) for evaluation in played} == {
        tuple(cup.seeds)
    }

    document = client.get(f"/api/v1/score-competitions/{cup.pk}").json()
    board = document["leaderboard"]
    assert [entry["competitor"] for entry in board] == ["balancer", "rando", "constant"]
    assert [entry["rank"] for entry in board] == [1, 2, 3]
    balancer, rando, constant = board
    assert balancer["mean_return"] == 500.0
    assert balancer["ci_low"] == balancer["ci_high"] == 500.0  # the same return every time
    assert rando["ci_low"] < rando["mean_return"] < rando["ci_high"]
    assert constant["ci_high"] < rando["ci_low"]  # separated: the ranking is meaningful
    assert all(entry["episodes"] == 6 and entry["faulty_episodes"] == 0 for entry in board)
    assert document["seeds"] == cup.seeds

    page = client.get(f"/scores/{cup.pk}/").content.decode()
    assert page.index("balancer") < page.index("rando") < page.index("constant")
    assert f"{rando['ci_low']:.2f} \N{EN DASH} {rando['ci_high']:.2f}" in page
    listed = client.get("/api/v1/score-competitions?environment=cartpole").json()
    assert [item["name"] for item in listed["items"]] == ["Pole cup"]
    environment_page = client.get("/environments/cartpole/").content.decode()
    assert "Pole cup" in environment_page and "Episodes per evaluation" in environment_page
    assert 'id="leaderboard-title"' not in environment_page  # no Elo ratings for one player

    # An episode replays from its seed and actions as a text trace.
    evaluation = Evaluation.objects.get(competition=cup, revision=agents["constant"])
    episode = client.get(f"/evaluations/{evaluation.pk}/episodes/0/").content.decode()
    steps = evaluation.episodes[0]["steps"]
    assert f"step {steps} · action 0" in episode and "terminated" in episode
    api_evaluation = client.get(f"/api/v1/evaluations/{evaluation.pk}").json()
    assert api_evaluation["episodes"][0]["actions"] == [[0]] * steps
    assert api_evaluation["episodes"][0]["episode_return"] == steps  # a reward of 1 a step
    assert api_evaluation["mean_return"] == evaluation.mean_return


def test_it_charges_a_crashing_agent_without_stopping_the_evaluation(client):
    owner = make_user()
    fragile = upload(owner, "cartpole", "fragile", CRASHES_FROM_THE_THIRD_EPISODE)
    assert fragile.validation_status == StepStatus.SUCCEEDED, fragile.job("validation").error
    upload(owner, "cartpole", "constant", PLAYERS / "cartpole" / "constant.py")
    cup = competition(episodes=5)

    score_competition_start(competition=cup)

    evaluation = Evaluation.objects.get(competition=cup, revision=fragile)
    assert evaluation.status == DuelStatus.SUCCEEDED
    kinds = [[fault["kind"] for fault in e["faults"]] for e in evaluation.episodes]
    assert kinds == [[], [], ["crash"], ["crash"], ["forfeit"]]
    assert [e["return"] for e in evaluation.episodes][2:] == [0.0] * 3  # CartPole's worst
    assert (evaluation.faulty_episodes, evaluation.restarts) == (3, 1)
    assert evaluation.mean_return == 2 * 500.0 / 5
    board = client.get(f"/api/v1/score-competitions/{cup.pk}").json()["leaderboard"]
    assert [(entry["competitor"], entry["faulty_episodes"]) for entry in board] == [
        ("fragile", 3),
        ("constant", 0),
    ]
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "crash" in page


def test_it_plays_an_evaluation_again_when_its_worker_died_and_counts_it_once():
    agents = cartpole_agents()
    cup = competition(episodes=2)
    evaluation = Evaluation.objects.create(
        competition=cup, revision=agents["rando"], seeds=cup.seeds
    )
    Job.objects.create(kind=JobKind.EVALUATION, evaluation=evaluation)
    killed = job_claim(kind=JobKind.EVALUATION, subject_id=evaluation.pk, worker="killed")
    Job.objects.filter(pk=killed.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    assert jobs_recover()  # queued again, and played (eagerly)

    evaluation.refresh_from_db()
    assert evaluation.status == DuelStatus.SUCCEEDED and evaluation.job.attempts == 2
    assert killed is not None
    late = Outcome(True, error="late")
    assert not job_record(job=killed, worker="killed", store=lambda: late)  # lost its lease
    evaluation_play(evaluation_id=evaluation.pk)  # finished: not played again
    evaluation.refresh_from_db()
    assert evaluation.job.attempts == 2 and len(evaluation.episodes) == 2


def test_it_refuses_a_tournament_of_a_one_player_game():
    from core.errors import ArenaError
    from tournament_manager.services.tournaments import tournament_create

    agents = cartpole_agents()

    with pytest.raises(ArenaError, match="one-player game"):
        tournament_create(
            environment=agents["rando"].competitor.environment,
            name="Pole duel",
            revisions=list(agents.values()),
        )


def test_it_refuses_to_start_a_competition_of_a_two_player_game():
    from core.errors import ArenaError
    from core.models import Environment

    cup = ScoreCompetition.objects.create(
        environment=Environment.objects.get(name="connect_four"), name="Wrong", episodes=3
    )

    with pytest.raises(ArenaError, match="2-player game"):
        score_competition_start(competition=cup)
    assert not cup.evaluations.exists()


def test_it_evaluates_an_llm_player_its_owner_entered_like_a_hosted_agent(client):
    from django.core import serializers

    from core.models.submissions import CompetitorKind
    from core.services.scores import score_entry_create
    from llm.local_server import LocalLLMServer
    from tests.factories import LLMPlayerFactory

    key = "sk-score-secret-9d8e7f"
    agents = cartpole_agents()
    cup = competition(episodes=3)
    with LocalLLMServer() as server:
        llm = LLMPlayerFactory(
            competitor__environment=cup.environment,
            competitor__name="llm-pusher",
            competitor__share_logs=True,
            base_url=server.url,
            api_key=key,
        )
        # Not entered: the organizer's start evaluates the hosted agents only.
        assert len(score_competition_start(competition=cup)) == 3

        # Entered in the started competition: evaluated at once, on the same episodes.
        evaluation = score_entry_create(competition=cup, competitor=llm.competitor)

    assert evaluation is not None
    evaluation.refresh_from_db()
    assert evaluation.status == DuelStatus.SUCCEEDED, evaluation.error
    constant = Evaluation.objects.get(competition=cup, revision=agents["constant"])
    # The rule-based model plays the first legal action, as the constant agent does.
    assert [e["seed"] for e in evaluation.episodes] == cup.seeds
    assert [e["actions"] for e in evaluation.episodes] == [e["actions"] for e in constant.episodes]
    assert evaluation.mean_return == constant.mean_return
    assert (evaluation.ci_low, evaluation.ci_high) == (constant.ci_low, constant.ci_high)
    for episode in evaluation.episodes:
        turns = episode["conversation"]["turns"]
        assert len(turns) == episode["steps"] and turns[0]["outcome"] == "legal"
    assert key not in serializers.serialize("json", [evaluation]) + evaluation.log

    board = client.get(f"/api/v1/score-competitions/{cup.pk}").json()
    assert {entry["competitor"] for entry in board["leaderboard"]} == {
        "balancer",
        "rando",
        "constant",
        "llm-pusher",
    }
    owner = llm.competitor.owner.display_name
    assert board["entered"] == [
        {"id": llm.competitor.pk, "name": "llm-pusher", "kind": CompetitorKind.LLM, "owner": owner}
    ]
    page = client.get(f"/scores/{cup.pk}/").content.decode()
    assert "llm-pusher" in page and ">LLM</span>" in page
    # Its conversations, for whoever may read its log (a public player sharing it: anyone).
    download = f"/evaluations/{evaluation.pk}/conversations.jsonl"
    assert download in client.get(evaluation.get_absolute_url()).content.decode()
    lines = [json.loads(line) for line in client.get(download).content.splitlines()]
    assert len(lines) == sum(e["steps"] for e in evaluation.episodes)
    assert lines[0]["episode"] == 0 and lines[0]["turn"]["step"] == 0
    assert key.encode() not in client.get(download).content
    type(llm.competitor).objects.filter(pk=llm.competitor.pk).update(is_public=False)
    assert client.get(download).status_code == 404

    # A re-run evaluates it again: it stays entered.
    with LocalLLMServer() as server:
        type(llm).objects.filter(pk=llm.pk).update(base_url=server.url)
        rerun = score_competition_start(competition=cup)
    assert {e.revision.competitor.name for e in rerun} >= {"llm-pusher"}
    assert (
        Evaluation.objects.get(competition=cup, revision__competitor=llm.competitor).status
        == DuelStatus.SUCCEEDED
    )
