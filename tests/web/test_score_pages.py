"""Who sees what of score competitions: private ones are a 404 to all but organizers, on
the site and in the API; an agent's log is shown to its owner only; private competitors'
names show unlinked."""

from __future__ import annotations

import pytest
from django.test import Client

from core.models import User
from tests.factories import (
    EnvironmentFactory,
    EvaluationFactory,
    ScoreCompetitionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_it_hides_a_private_competition_from_everyone_but_organizers(
    client: Client, organizer: User
) -> None:
    hidden = ScoreCompetitionFactory(is_public=False, name="Secret cup")

    assert client.get(f"/scores/{hidden.pk}/").status_code == 404
    response = client.get(f"/api/v1/score-competitions/{hidden.pk}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert client.get("/api/v1/score-competitions").json()["count"] == 0
    client.force_login(organizer)
    assert "Secret cup" in client.get(f"/scores/{hidden.pk}/").content.decode()


def test_it_shows_the_log_to_the_owner_only_and_private_names_unlinked(client: Client) -> None:
    evaluation = EvaluationFactory(
        finished=True, log="thinking hard", revision__competitor__name="quiet-bot"
    )
    competitor = evaluation.revision.competitor
    assert not competitor.is_public

    leaderboard = client.get(evaluation.competition.get_absolute_url()).content.decode()
    assert "quiet-bot" in leaderboard and competitor.get_absolute_url() not in leaderboard
    assert "thinking hard" not in client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    client.force_login(competitor.owner)
    assert "thinking hard" in client.get(f"/evaluations/{evaluation.pk}/").content.decode()


def test_it_keeps_a_validation_evaluation_to_those_who_see_the_competitor(client: Client) -> None:
    evaluation = EvaluationFactory(
        competition=None,
        is_validation=True,
        seeds=[1, 2],
        revision__competitor__environment=EnvironmentFactory(name="cartpole"),
    )

    assert client.get(f"/evaluations/{evaluation.pk}/").status_code == 404
    assert client.get(f"/api/v1/evaluations/{evaluation.pk}").status_code == 404
    client.force_login(UserFactory())
    assert client.get(f"/evaluations/{evaluation.pk}/").status_code == 404
    client.force_login(evaluation.revision.competitor.owner)
    assert client.get(f"/evaluations/{evaluation.pk}/").status_code == 200


def test_it_answers_an_unknown_episode_with_a_404(client: Client) -> None:
    evaluation = EvaluationFactory(finished=True)

    assert client.get(f"/evaluations/{evaluation.pk}/episodes/7/").status_code == 404
