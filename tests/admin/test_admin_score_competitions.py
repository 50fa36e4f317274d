"""Organizers create a score competition of a one-player game and start or re-run it from
the admin; the evaluations are played in this process."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from core.models import DuelStatus, Environment, Job, ScoreCompetition, User

pytestmark = pytest.mark.django_db


def test_it_creates_a_competition_with_the_games_episodes_by_default(
    organizer_client: Client, environments: dict[str, Environment]
) -> None:
    response = organizer_client.post(
        reverse("admin:core_scorecompetition_add"),
        {
            "environment": environments["cartpole"].pk,
            "name": "Pole cup",
            "seed": 3,
            "is_public": "on",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    competition = ScoreCompetition.objects.get()
    assert competition.episodes == 20  # cartpole's info.yml
    assert competition.created_by is not None


def test_it_offers_only_one_player_games(
    organizer_client: Client, environments: dict[str, Environment]
) -> None:
    response = organizer_client.post(
        reverse("admin:core_scorecompetition_add"),
        {"environment": environments["connect_four"].pk, "name": "Wrong", "episodes": 2, "seed": 1},
    )

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not ScoreCompetition.objects.exists()


def test_it_refuses_too_many_episodes_and_a_negative_seed(
    organizer_client: Client, environments: dict[str, Environment]
) -> None:
    response = organizer_client.post(
        reverse("admin:core_scorecompetition_add"),
        {"environment": environments["cartpole"].pk, "name": "Huge", "episodes": 1001, "seed": -1},
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "less than or equal to 1000" in page and "greater than or equal to 0" in page
    assert not ScoreCompetition.objects.exists()


def test_it_starts_and_reruns_a_competition(
    organizer_client: Client,
    alice: User,
    upload: Callable,
    run_action: Callable[..., list[str]],
    environments: dict[str, Environment],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    upload(alice, "cartpole/balancer.py")
    upload(alice, "cartpole/constant.py")
    competition = ScoreCompetition.objects.create(
        environment=environments["cartpole"], name="Pole cup", episodes=3, seed=5
    )

    with django_capture_on_commit_callbacks(execute=True):
        notes = run_action(ScoreCompetition, "start", [competition])
    assert notes == ["Pole cup: 2 evaluation(s) queued", "Started: 1"]
    first = set(competition.evaluations.values_list("pk", flat=True))
    assert set(competition.evaluations.values_list("status", flat=True)) == {DuelStatus.SUCCEEDED}

    with django_capture_on_commit_callbacks(execute=True):
        run_action(ScoreCompetition, "start", [competition])
    again = competition.evaluations.all()
    assert len(again) == 2 and first.isdisjoint(evaluation.pk for evaluation in again)
    assert {evaluation.status for evaluation in again} == {DuelStatus.SUCCEEDED}
    # Its episodes are fixed once played: the change page no longer offers them.
    change = reverse("admin:core_scorecompetition_change", args=[competition.pk])
    page = organizer_client.get(change).content.decode()
    assert 'name="name"' in page and 'name="seed"' not in page and 'name="episodes"' not in page


def test_it_reports_a_competition_without_agents(
    run_action: Callable[..., list[str]], environments: dict[str, Environment]
) -> None:
    competition = ScoreCompetition.objects.create(
        environment=environments["acrobot"], name="Swing", episodes=3
    )

    notes = run_action(ScoreCompetition, "start", [competition])

    assert notes == ["Swing: Acrobot has no validated agent to evaluate yet"]


def test_it_reruns_only_the_failed_evaluations(
    alice: User,
    upload: Callable,
    run_action: Callable[..., list[str]],
    environments: dict[str, Environment],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    upload(alice, "cartpole/balancer.py")
    upload(alice, "cartpole/constant.py")
    competition = ScoreCompetition.objects.create(
        environment=environments["cartpole"], name="Pole cup", episodes=2, seed=5
    )
    with django_capture_on_commit_callbacks(execute=True):
        run_action(ScoreCompetition, "start", [competition])
    kept, lost = competition.evaluations.order_by("pk")
    lost.status, lost.mean_return, lost.error = DuelStatus.FAILED, None, "the host went away"
    lost.save()
    Job.objects.filter(evaluation=lost).update(status=DuelStatus.FAILED, error=lost.error)

    with django_capture_on_commit_callbacks(execute=True):
        notes = run_action(ScoreCompetition, "rerun_failed", [competition])

    assert notes[0] == "Pole cup: 1 evaluation(s) queued again"
    lost.refresh_from_db()
    # An organizer's re-run has fresh attempts.
    assert (lost.status, lost.error, lost.job.attempts) == (DuelStatus.SUCCEEDED, "", 1)
    assert competition.evaluations.get(pk=kept.pk).job.attempts == 1
    assert run_action(ScoreCompetition, "rerun_failed", [competition]) == [
        "Pole cup: has no failed evaluation"
    ]


def test_its_start_evaluates_the_online_agents_and_llm_players_entered_and_no_others(
    organizer_client: Client,
    alice: User,
    upload: Callable,
    run_action: Callable[..., list[str]],
    environments: dict[str, Environment],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    from core.services.online import online_model_register
    from core.services.scores import score_entry_create
    from tests.factories import LLMPlayerFactory

    upload(alice, "cartpole/constant.py")
    cartpole = environments["cartpole"]
    entered, _ = online_model_register(owner=alice, environment=cartpole, name="net-entered")
    online_model_register(owner=alice, environment=cartpole, name="net-not-entered")
    LLMPlayerFactory(competitor__environment=cartpole, competitor__name="llm-not-entered")
    competition = ScoreCompetition.objects.create(
        environment=cartpole, name="Pole cup", episodes=2, seed=5
    )
    assert score_entry_create(competition=competition, competitor=entered) is None  # a draft

    # Queued only: no client is connected, so the online one is not played here.
    with django_capture_on_commit_callbacks(execute=False):
        notes = run_action(ScoreCompetition, "start", [competition])

    assert notes == ["Pole cup: 2 evaluation(s) queued", "Started: 1"]
    assert set(competition.evaluations.values_list("revision__competitor__name", flat=True)) == {
        "constant",
        "net-entered",
    }
    change = reverse("admin:core_scorecompetition_change", args=[competition.pk])
    assert "net-entered (online)" in organizer_client.get(change).content.decode()
