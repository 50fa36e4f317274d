"""The replay page: every state recomputed from the seed and the actions."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from environments.registry import make_environment
from tests.factories import DuelFactory, MatchFactory, RevisionFactory

pytestmark = pytest.mark.django_db


def frames_of(response) -> list[dict]:
    found = re.search(
        r'<script id="replay-frames" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert found, "no frames on the page"
    return json.loads(found.group(1))


def test_it_renders_a_frame_per_state_with_the_moves_and_their_times(client, match):
    response = client.get(match.get_absolute_url())

    frames = frames_of(response)
    assert response.status_code == 200
    assert len(frames) == match.steps + 1
    assert [frame["step"] for frame in frames] == list(range(match.steps + 1))
    assert frames[0]["moves"] == []
    environment = make_environment("tic_tac_toe")
    environment.reset(match.seed)
    for frame, actions in zip(frames[1:], match.actions, strict=True):
        environment.step({seat: move for seat, move in enumerate(actions) if move is not None})
        assert frame["html"] == environment.render_html()
        [move] = frame["moves"]
        assert move["action"] == str(next(action for action in actions if action is not None))
        assert move["time"] == 0.001
    # The first seat is player 1 (alice) in match 0, then the seats alternate.
    assert frames[1]["moves"][0]["player"] == "alices-bot v1"
    assert frames[2]["moves"][0]["player"] == "bobs-bot v1"


def test_it_shows_the_final_state_and_the_move_list_without_javascript(client, match):
    response = client.get(match.get_absolute_url())

    page = response.content.decode()
    final = frames_of(response)[-1]["html"]
    board = page.split("data-replay-board")[1]
    assert board.split(">", 1)[1].startswith(final)
    assert f"Step {match.steps} of {match.steps}" in page
    assert page.count('class="move') >= match.steps + 1
    assert f'href="?step={match.steps - 1}"' in page


def test_it_shows_the_step_asked_for_in_the_address(client, match):
    response = client.get(match.get_absolute_url() + "?step=1")

    page = response.content.decode()
    assert "Step 1 of" in page
    assert 'data-step="1"' in page
    assert (
        page.split("data-replay-board")[1]
        .split(">", 1)[1]
        .startswith(frames_of(response)[1]["html"])
    )
    assert "Step 0 of" in client.get(match.get_absolute_url() + "?step=-5").content.decode()
    assert "Step 0 of" not in client.get(match.get_absolute_url() + "?step=x").content.decode()


def test_it_explains_the_fault_that_ended_a_match(alice_client, validation_duel):
    response = alice_client.get(reverse("match", args=[validation_duel.pk, 0]))

    page = html.unescape(response.content.decode())
    frames = frames_of(response)
    assert response.status_code == 200
    assert len(frames) == 2
    assert "The match ended by a fault: illegal action" in page
    assert (
        "alices-bot v1 (player 2), on move 2, played an action that is not among the legal "
        "actions. 4 is illegal: cell 4 is already taken by player 1 (X)"
    ) in page
    assert "alices-bot v1 (player 1) won" in page


def test_it_explains_faults_in_the_duels_match_list(alice_client, validation_duel):
    response = alice_client.get(validation_duel.get_absolute_url())

    page = html.unescape(response.content.decode())
    assert "illegal action" in page
    assert "4 is illegal: cell 4 is already taken by player 1 (X)" in page


def test_it_replays_a_simultaneous_game_with_both_moves_per_step(client):
    revision = RevisionFactory(
        competitor__environment__name="rock_paper_scissors", competitor__is_public=True
    )
    duel = DuelFactory(validation=True, revisions=[revision, revision], finished=True)
    match = MatchFactory(duel=duel)

    response = client.get(match.get_absolute_url())

    frames = frames_of(response)
    assert len(frames) == match.steps + 1
    assert {len(frame["moves"]) for frame in frames[1:]} == {2}
    assert frames[1]["moves"][0]["action"] in {"rock", "paper", "scissors"}
    assert "rock_paper_scissors.css" in response.content.decode()


def test_it_says_so_when_stored_actions_no_longer_replay(client, duel):
    match = MatchFactory(duel=duel, actions=[[4, None], [None, 4]], steps=2)

    response = client.get(match.get_absolute_url())

    assert response.status_code == 200
    assert len(frames_of(response)) == 2
    assert "step 2 no longer replays with the current rules" in html.unescape(
        response.content.decode()
    )
