"""An episode of a one-player game is replayed as a match is: its page carries one small
picture a step for the viewer to draw (a whole 500-step CartPole episode within 40 KB),
and shows one step as the server renders it, with links to the others, without
JavaScript."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from tests.support.episodes import balancing, evaluation_of, played_episode

pytestmark = pytest.mark.django_db

#: The issue's episode page was 91 KB of text for 500 steps.
MAX_EPISODE_PAGE_BYTES = 40_000


def episode_url(evaluation_pk: int, index: int = 0) -> str:
    return f"/evaluations/{evaluation_pk}/episodes/{index}/"


def pictures(page: str) -> list[dict[str, Any]]:
    """The pictures the replay viewer draws, from the page's document."""
    found = re.search(r'<script id="replay-views" type="application/json">(.*?)</script>', page)
    assert found, "the page carries no replay document"
    return json.loads(found.group(1))


def test_a_500_step_cartpole_episode_is_a_light_page_of_one_picture_a_step(
    client: Client,
) -> None:
    episode = played_episode("cartpole", seed=7, policy=balancing)
    assert episode["steps"] == 500 and episode["truncated"]
    evaluation = evaluation_of("cartpole", episode)

    response = client.get(episode_url(evaluation.pk))

    assert response.status_code == 200
    assert len(response.content) <= MAX_EPISODE_PAGE_BYTES, len(response.content)
    page = response.content.decode()
    views = pictures(page)
    assert len(views) == 501
    assert {view["kind"] for view in views} == {"cartpole"}
    assert "push" not in views[0] and {view["push"] for view in views[1:]} == {-1, 1}
    # The pole moves: the pictures are the states, not one state repeated.
    assert len({(view["x"], view["angle"]) for view in views}) > 100
    assert "Step 500 of 500" in page and "replay.js" in page and "cartpole.js" in page
    # Not the old trace: no state is written out as text beyond the one shown.
    assert page.count("observation [") <= 1


def test_it_shows_the_step_asked_for_without_javascript(client: Client) -> None:
    episode = played_episode("cartpole", seed=3, policy=balancing)
    evaluation = evaluation_of("cartpole", episode)

    page = client.get(episode_url(evaluation.pk), {"step": 3}).content.decode()

    assert "Step 3 of 500" in page and "step 3 · action" in page
    assert 'href="?step=2"' in page and 'href="?step=4"' in page and 'href="?step=500"' in page


@pytest.mark.parametrize(
    ("game", "kind", "drawn"),
    [
        ("mountain_car", "mountain_car", {"x"}),
        ("acrobot", "acrobot", {"angles"}),
        ("frozen_lake", "frozen_lake", {"map", "cell"}),
    ],
)
def test_every_one_player_game_sends_pictures_its_drawer_draws(
    client: Client, game: str, kind: str, drawn: set[str]
) -> None:
    episode = played_episode(game, seed=5)
    evaluation = evaluation_of(game, episode)

    page = client.get(episode_url(evaluation.pk)).content.decode()

    views = pictures(page)
    assert len(views) == episode["steps"] + 1
    assert all(view["kind"] == kind and drawn <= view.keys() for view in views)
    assert f"{game}.js" in page


def test_frozen_lake_pictures_the_map_and_the_agent_cell(client: Client) -> None:
    episode = played_episode("frozen_lake", seed=5)
    evaluation = evaluation_of("frozen_lake", episode)

    views = pictures(client.get(episode_url(evaluation.pk)).content.decode())

    assert views[0] == {
        "kind": "frozen_lake",
        "map": ["SFFF", "FHFH", "FFFH", "HFFG"],
        "cell": 0,
    }
    assert all(view["move"] == 0 for view in views[1:])


def test_an_episode_whose_actions_no_longer_replay_says_so(client: Client) -> None:
    episode = played_episode("cartpole", seed=3, policy=balancing)
    episode["actions"][10] = [7]
    evaluation = evaluation_of("cartpole", episode)

    page = client.get(episode_url(evaluation.pk)).content.decode()

    assert "This replay stops early: step 11 no longer replays" in page
    assert len(pictures(page)) == 11 and "Step 10 of 10" in page
