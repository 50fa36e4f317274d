"""A person's games are their own: a seat per game, a side of their choice, resign and
abort, a finished game's page, a rematch, "My games", and the person shown as the person.
The test stands in for the referee on the in-process seat bus, as ``test_human_play``."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Duel, DuelResult, DuelStatus, Job, JobKind, JobStatus
from core.services.environments import environment_add_openspiel
from core.services.human import human_game_create
from core.services.online import seat_bus
from sandboxes.seat_bus import RESIGN_LINE
from tests.factories import EnvironmentFactory, MatchFactory, RevisionFactory, UserFactory
from tests.support.human import (  # noqa: F401 (in_process_bus: a fixture)
    ACT,
    browser,
    bus_seat,
    in_process_bus,
    reply,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_process_bus")]


@pytest.fixture
def agent():
    return RevisionFactory(
        validated=True,
        competitor__environment__name="tic_tac_toe",
        competitor__name="rando",
        competitor__is_public=True,
    )


@pytest.fixture
def person():
    return UserFactory(display_name="Ada")


def start(person, agent, django_capture_on_commit_callbacks, side: str = "first") -> Duel:
    with django_capture_on_commit_callbacks(execute=False):
        return human_game_create(user=person, opponent=agent, side=side)


def opened(duel: Duel, act: dict | None = None) -> str:
    """The referee opens the game's seat and asks for a move: the seat."""
    seat = bus_seat(duel)
    bus = seat_bus()
    bus.seat_open(seat, duel=duel.pk, announcement=b'{"type":"duel"}')
    bus.publish(seat, json.dumps(act or ACT).encode(), awaits=f"act:{(act or ACT)['id']}")
    return seat


def post(client: Client, name: str, duel: Duel, token: str):
    response = client.post(
        reverse(name, args=[duel.pk]),
        data="{}",
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    return response.status_code, response.json()


def test_two_games_at_once_each_have_a_seat_and_a_move_in_one_never_reaches_the_other(
    person, agent, django_capture_on_commit_callbacks
):
    first = start(person, agent, django_capture_on_commit_callbacks)
    second = start(person, agent, django_capture_on_commit_callbacks)
    assert bus_seat(first) != bus_seat(second)
    opened(first)
    opened(second)
    client, token = browser(person)

    assert reply(client, second, {"type": "action", "id": 3, "action": 4}, token)[0] == 202

    assert seat_bus().replies(bus_seat(first), 0.05) == []
    assert seat_bus().replies(bus_seat(second), 0.1) == [b'{"type":"action","id":3,"action":4}']
    # The first game still waits for its own move.
    assert reply(client, first, {"type": "action", "id": 3, "action": 0}, token)[0] == 202


@pytest.mark.parametrize(
    ("game", "side", "number"),
    [
        ("tic_tac_toe", "first", 1),
        ("tic_tac_toe", "second", 2),
        # White moves first in chess, from OpenSpiel's second seat.
        ("openspiel:chess", "first", 2),
        ("openspiel:chess", "second", 1),
    ],
)
def test_the_person_takes_the_side_they_chose(
    person, django_capture_on_commit_callbacks, game, side, number
):
    if game.startswith("openspiel:"):
        environment = environment_add_openspiel(spec=game)
    else:
        environment = EnvironmentFactory(name=game)
    opponent = RevisionFactory(validated=True, competitor__environment=environment)
    duel = start(person, opponent, django_capture_on_commit_callbacks, side=side)

    [mine] = [seat for seat in duel.players() if seat.revision.competitor.is_human]
    assert mine.number == number
    page = Client()
    page.force_login(person)
    text = page.get(reverse("play", args=[duel.pk])).content.decode()
    says = "You move first" if side == "first" else f"{opponent} moves first"
    assert says in text


def test_a_random_side_is_one_of_the_two_and_a_made_up_one_is_refused(
    person, agent, django_capture_on_commit_callbacks
):
    numbers = set()
    for _ in range(12):
        duel = start(person, agent, django_capture_on_commit_callbacks, side="random")
        numbers |= {s.number for s in duel.players() if s.revision.competitor.is_human}
        duel.delete()
    assert numbers == {1, 2}
    with pytest.raises(Exception, match="no side"):
        start(person, agent, django_capture_on_commit_callbacks, side="middle")


def test_resign_ends_the_seat_whatever_the_referee_waits_for_and_only_the_persons(
    person, agent, django_capture_on_commit_callbacks
):
    duel = start(person, agent, django_capture_on_commit_callbacks)
    other = start(person, agent, django_capture_on_commit_callbacks)
    seat = opened(duel)
    opened(other)
    client, token = browser(person)

    stranger, stranger_token = browser(UserFactory())
    assert post(stranger, "human_resign", duel, stranger_token)[0] == 404
    assert post(client, "human_resign", duel, token) == (202, {"resigned": True})

    assert seat_bus().replies(seat, 0.1) == [RESIGN_LINE]
    assert seat_bus().replies(bus_seat(other), 0.05) == []
    seat_bus().seat_close(seat)
    status, body = post(client, "human_resign", duel, token)
    assert (status, body["error"]["code"]) == (409, "not_playing")


def test_abort_cancels_a_game_before_the_persons_first_move_and_not_after(
    person, agent, django_capture_on_commit_callbacks
):
    queued = start(person, agent, django_capture_on_commit_callbacks)
    client, token = browser(person)
    assert post(client, "human_abort", queued, token) == (202, {"aborted": True})
    queued.refresh_from_db()
    assert queued.status == DuelStatus.CANCELLED
    assert Job.objects.of(JobKind.DUEL, queued.pk).get().status == JobStatus.CANCELLED
    assert "Aborted by Ada" in queued.reported_error

    moved = start(person, agent, django_capture_on_commit_callbacks)
    Duel.objects.filter(pk=moved.pk).update(status=DuelStatus.RUNNING)
    seat = opened(moved)
    assert reply(client, moved, {"type": "action", "id": 3, "action": 4}, token)[0] == 202
    seat_bus().publish(seat, json.dumps({**ACT, "id": 5}).encode(), awaits="act:5")
    status, body = post(client, "human_abort", moved, token)
    assert (status, body["error"]["code"]) == (409, "already_moved")
    moved.refresh_from_db()
    assert moved.status == DuelStatus.RUNNING


def finished(duel: Duel, result: str, faults: list | None = None) -> Duel:
    """The game as the referee records it: one match of three moves."""
    MatchFactory(
        duel=duel,
        index=0,
        actions=[[4, None], [None, 0], [8, None]],
        result=result,
        faults=faults or [],
    )
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.SUCCEEDED, result=result)
    duel.refresh_from_db()
    return duel


def test_a_finished_games_page_shows_the_result_in_words_the_final_board_and_a_rematch(
    person, agent, django_capture_on_commit_callbacks
):
    duel = start(person, agent, django_capture_on_commit_callbacks)
    fault = {"player": 2, "kind": "illegal_action", "message": "0 is taken", "step": 3}
    finished(duel, DuelResult.PLAYER_1_WIN, [fault])
    page = Client()
    page.force_login(person)

    text = page.get(reverse("play", args=[duel.pk])).content.decode()

    assert "data-finished" in text and "Waiting for the referee" not in text
    assert "You won! rando v1, on move 4, played an action that is not among the legal" in text
    assert 'id="play-final"' in text and '"board": "200010001"' in text
    assert "Rematch" in text and "Replay of the match" in text


def test_a_rematch_plays_the_same_agent_with_the_sides_swapped(
    person, agent, django_capture_on_commit_callbacks
):
    duel = finished(
        start(person, agent, django_capture_on_commit_callbacks), DuelResult.PLAYER_2_WIN
    )
    page = Client()
    page.force_login(person)

    with django_capture_on_commit_callbacks(execute=False):
        response = page.post(reverse("play_rematch", args=[duel.pk]))

    rematch = Duel.objects.exclude(pk=duel.pk).get()
    assert response["Location"] == reverse("play", args=[rematch.pk])
    assert [seat.revision for seat in rematch.players()] == [agent, duel.players()[0].revision]
    stranger = Client()
    stranger.force_login(UserFactory())
    assert stranger.post(reverse("play_rematch", args=[duel.pk])).status_code == 302
    assert Duel.objects.count() == 2


def test_my_games_lists_the_going_and_finished_games_and_a_refusal_leads_there(
    person, agent, settings, django_capture_on_commit_callbacks
):
    settings.ARENA_HUMAN_GAMES_PER_USER = 1
    done = finished(
        start(person, agent, django_capture_on_commit_callbacks), DuelResult.PLAYER_2_WIN
    )
    going = start(person, agent, django_capture_on_commit_callbacks)
    page = Client()
    page.force_login(person)

    response = page.post(
        reverse("play_start", args=["tic_tac_toe", "rando"]), {"side": "first"}, follow=True
    )

    assert response.redirect_chain[-1][0] == reverse("my_games")
    text = response.content.decode()
    assert "1 games going already" in text
    going_list = text[text.index("data-games-going") :]
    assert reverse("play", args=[going.pk]) in going_list.split("</ul>")[0]
    assert reverse("play", args=[done.pk]) in text and ">lost<" in text
    assert "My games" in page.get(reverse("home")).content.decode()


def test_the_person_is_shown_by_name_and_their_seat_is_in_no_competitor_list(
    person, agent, django_capture_on_commit_callbacks
):
    duel = start(person, agent, django_capture_on_commit_callbacks)
    seat = next(s for s in duel.players() if s.revision.competitor.is_human)
    competitor = seat.revision.competitor
    page = Client()
    page.force_login(person)

    assert str(seat.revision) == "Ada"
    duel_page = page.get(duel.get_absolute_url()).content.decode()
    assert "Ada" in duel_page and competitor.name not in duel_page
    assert competitor.name not in page.get(reverse("profile")).content.decode()
    assert (
        competitor.name
        not in page.get(reverse("environment", args=["tic_tac_toe"])).content.decode()
    )
    assert page.get(competitor.get_absolute_url()).status_code == 404
    listed = Client().get("/api/v1/competitors").json()
    assert competitor.name not in json.dumps(listed)
