"""Entering online agents and LLM players in score competitions, through the API and the
site: their owner only, in a competition they may see, of their game; hosted agents need
no entry; what is refused changes nothing."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from core.models import CompetitorKind, DuelStatus, Evaluation, Job, JobStatus, User
from core.services.online import online_model_register
from tests.factories import (
    CompetitorFactory,
    EnvironmentFactory,
    EvaluationFactory,
    LLMPlayerFactory,
    RevisionFactory,
    ScoreCompetitionFactory,
    UserFactory,
)
from tests.support.responses import body

pytestmark = pytest.mark.django_db


@pytest.fixture
def cup():
    return ScoreCompetitionFactory(name="Pole cup")


@pytest.fixture
def llm(alice: User, cup):
    return LLMPlayerFactory(
        competitor__owner=alice, competitor__environment=cup.environment, competitor__name="gpt"
    ).competitor


@pytest.fixture
def online(alice: User, cup):
    competitor, _ = online_model_register(owner=alice, environment=cup.environment, name="net")
    return competitor


def enter(client, cup, competitor, headers):
    return client.post(
        f"/api/v1/score-competitions/{cup.pk}/entries",
        data=json.dumps({"competitor": competitor.name}),
        content_type="application/json",
        **headers,
    )


def test_an_owner_enters_an_llm_player_in_a_draft_and_it_waits_for_the_start(
    client, alice, bearer, cup, llm
):
    response = enter(client, cup, llm, bearer(alice, "read", "submit"))

    assert response.status_code == 201, response.content
    assert body(response) == {
        "competitor": {"id": llm.pk, "name": "gpt", "kind": "llm", "owner": "Alice"},
        "evaluation": None,
    }
    assert list(cup.entered.all()) == [llm]
    assert not cup.evaluations.exists()
    detail = body(client.get(f"/api/v1/score-competitions/{cup.pk}"))
    assert [entrant["name"] for entrant in detail["entered"]] == ["gpt"]


def test_an_online_agent_entered_in_a_started_competition_is_queued_at_once(
    client, alice, bearer, cup, online, django_capture_on_commit_callbacks
):
    cup.started_at = timezone.now()
    cup.save()

    with django_capture_on_commit_callbacks() as started:
        response = enter(client, cup, online, bearer(alice, "read", "submit"))

    assert response.status_code == 201, response.content
    evaluation = Evaluation.objects.get(pk=body(response)["evaluation"])
    assert evaluation.revision.competitor == online and evaluation.seeds == cup.seeds
    assert evaluation.status == DuelStatus.QUEUED
    assert evaluation.job.status == JobStatus.QUEUED
    # Sent to the online queue's task, which plays it where the seat bus is.
    assert len(started) == 1


def test_the_api_refuses_what_it_must_and_changes_nothing(
    client, alice, bob, carol, bearer, cup, llm, alices_bot
):
    chess = EnvironmentFactory(name="tic_tac_toe")
    elsewhere = LLMPlayerFactory(competitor__owner=alice, competitor__environment=chess)
    hosted = CompetitorFactory(owner=alice, environment=cup.environment, name="hosted")
    RevisionFactory(competitor=hosted, validated=True)
    disabled = LLMPlayerFactory(
        competitor__owner=alice, competitor__environment=cup.environment
    ).competitor
    disabled.is_disabled = True
    disabled.save()
    private = ScoreCompetitionFactory(is_public=False)
    submit = bearer(alice, "read", "submit")

    assert enter(client, cup, llm, {}).status_code == 401
    assert enter(client, cup, llm, bearer(alice, "read")).status_code == 403
    assert enter(client, cup, llm, bearer(carol, "read", "submit")).status_code == 404
    assert enter(client, private, llm, submit).status_code == 404
    # Of another game: not found in this one.
    assert enter(client, cup, elsewhere.competitor, submit).status_code == 404
    for competitor, message in (
        (hosted, "hosted agent: it needs no entry"),
        (disabled, "disabled by the organizers"),
    ):
        response = enter(client, cup, competitor, submit)
        assert response.status_code == 400, response.content
        assert message in body(response)["error"]["message"]
    assert not cup.entered.exists()

    assert enter(client, cup, llm, submit).status_code == 201
    again = enter(client, cup, llm, submit)
    assert again.status_code == 400 and "already entered" in body(again)["error"]["message"]
    assert list(cup.entered.all()) == [llm]


def test_a_model_token_cannot_enter_its_model(client, cup, online):
    from core.services.online import model_token_create

    _, secret = model_token_create(competitor=online, name="another")

    response = enter(client, cup, online, {"HTTP_AUTHORIZATION": f"Bearer {secret}"})

    assert response.status_code == 403
    assert not cup.entered.exists()


def test_an_owner_withdraws_an_entry_whose_evaluation_is_queued_not_one_running(
    client, alice, bearer, cup, llm
):
    submit = bearer(alice, "read", "submit")
    cup.entered.add(llm)
    evaluation = EvaluationFactory(competition=cup, revision=llm.revisions.get())
    Job.objects.filter(pk=evaluation.job.pk).update(status=JobStatus.RUNNING)
    url = f"/api/v1/score-competitions/{cup.pk}/entries/{llm.name}"

    refused = client.delete(url, **submit)
    assert refused.status_code == 400
    assert "being evaluated now" in body(refused)["error"]["message"]
    assert cup.entered.exists() and Evaluation.objects.filter(pk=evaluation.pk).exists()

    Job.objects.filter(pk=evaluation.job.pk).update(status=JobStatus.QUEUED)
    assert client.delete(url, **bearer(UserFactory(), "read", "submit")).status_code == 404
    response = client.delete(url, **submit)
    assert response.status_code == 200, response.content
    assert body(response)["evaluation"] is None  # the queued one went with it
    assert not cup.entered.exists() and not Evaluation.objects.filter(pk=evaluation.pk).exists()
    missing = client.delete(url, **submit)
    assert missing.status_code == 400 and "is not entered" in body(missing)["error"]["message"]


def test_the_page_lets_an_owner_enter_and_withdraw_and_no_one_else(client, alice, carol, cup, llm):
    page = client.get(cup.get_absolute_url()).content.decode()
    assert "Online agents and LLM players" in page and 'name="competitor"' not in page

    client.force_login(carol)
    assert client.post(f"/scores/{cup.pk}/entries/", {"competitor": llm.pk}).status_code == 404
    assert client.post(f"/scores/{cup.pk}/entries/", {"competitor": "x"}).status_code == 404
    assert not cup.entered.exists()

    client.force_login(alice)
    page = client.get(cup.get_absolute_url()).content.decode()
    assert f'<option value="{llm.pk}">gpt (LLM player)</option>' in page
    entered = client.post(f"/scores/{cup.pk}/entries/", {"competitor": llm.pk}, follow=True)
    assert (
        "gpt is entered: it is evaluated when the competition starts." in entered.content.decode()
    )
    assert list(cup.entered.all()) == [llm]
    again = client.post(f"/scores/{cup.pk}/entries/", {"competitor": llm.pk}, follow=True)
    assert "Gpt is already entered in Pole cup." in again.content.decode()

    page = client.get(cup.get_absolute_url()).content.decode()
    assert "Withdraw gpt" in page
    withdrawn = client.post(
        f"/scores/{cup.pk}/entries/withdraw/", {"competitor": llm.pk}, follow=True
    )
    assert "gpt is withdrawn" in withdrawn.content.decode()
    assert not cup.entered.exists()


def test_the_page_refuses_a_hosted_or_human_competitor_with_a_reason(client, alice, cup):
    hosted = CompetitorFactory(owner=alice, environment=cup.environment, name="hosted")
    human = CompetitorFactory(
        owner=alice, environment=cup.environment, kind=CompetitorKind.HUMAN, name="me"
    )
    client.force_login(alice)

    hosted_answer = client.post(
        f"/scores/{cup.pk}/entries/", {"competitor": hosted.pk}, follow=True
    )
    human_answer = client.post(f"/scores/{cup.pk}/entries/", {"competitor": human.pk}, follow=True)

    assert "Hosted is a hosted agent: it needs no entry" in hosted_answer.content.decode()
    assert "only online agents and LLM players are entered" in human_answer.content.decode()
    assert not cup.entered.exists()


def test_an_online_agents_evaluation_waits_while_it_plays_a_duel(online, cup):
    from core.jobs.worker import GIVE_BACK_SECONDS
    from duel_runner.evaluations import evaluation_play
    from tests.factories import DuelFactory

    other = EnvironmentFactory(name="connect_four")
    revision = online.revisions.get()
    evaluation = EvaluationFactory(competition=cup, revision=revision)
    # A duel of its model in play (a one-player game's competitor, seated for the test).
    duel = DuelFactory(tournament=None, environment=other, revisions=[revision, None])
    duel.status = DuelStatus.RUNNING
    duel.save()

    before = timezone.now()
    evaluation_play(evaluation_id=evaluation.pk)

    evaluation.job.refresh_from_db()
    assert evaluation.job.status == JobStatus.QUEUED and evaluation.job.attempts == 0
    # Put off: the watchdog sends it again shortly.
    assert evaluation.job.resend_at is not None
    resend_in = (evaluation.job.resend_at - before).total_seconds()
    assert GIVE_BACK_SECONDS <= resend_in <= GIVE_BACK_SECONDS + 60
