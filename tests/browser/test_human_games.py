"""A person's games in a real browser, as lichess players expect them: two games at once in
two tabs (one at a phone's width), each played to its end by clicking; a finished game
reopened; a rematch; resigning; "My games".

Served by the network gateway with a Redis seat bus, as in production; two worker threads
referee the games (``duel_play``), so both games are played at once. The test waits on
the pages' states, never on time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.test import Client
from playwright.sync_api import Locator, Page, expect

from core.models import Duel, DuelStatus
from tests.browser.test_play_on_the_board import FIRST_LEGAL
from tests.factories import UserFactory
from tests.pipeline import (  # noqa: F401
    make_user,
    pipeline,
    referees_playing,
    upload_validated,
)
from tests.support.workers import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]


@pytest.fixture
def referees() -> Iterator[None]:
    """Two workers: each claims a queued game (the job's claim keeps them apart)."""
    with referees_playing(2):
        yield


def start(page: Page, url: str, side: str) -> Locator:
    page.goto(f"{url}/environments/tic_tac_toe/competitors/bot/")
    page.get_by_label("Your side").select_option(side)
    page.get_by_role("button", name="Play against bot").click()
    expect(page.get_by_role("heading", name="You vs bot v1")).to_be_visible()
    return page.locator("#play")


def move_once(play: Locator) -> bool:
    """One move of the person if it is their turn (the last empty cell); False once over."""
    expect(play).to_have_attribute("data-play-state", re.compile("your-turn|over|done"))
    if play.get_attribute("data-play-state") != "your-turn":
        return False
    request = play.get_attribute("data-play-request")
    play.locator("[data-play-board]").get_by_role(
        "button", name=re.compile("^Play row")
    ).last.click()
    play.page.wait_for_function(
        """(request) => {
            const play = document.getElementById("play");
            return play.dataset.playRequest !== request || play.dataset.playState !== "your-turn";
        }""",
        arg=request,
    )
    return True


def stored(pk: int) -> Duel:
    wait_for(
        lambda: Duel.objects.filter(pk=pk, status=DuelStatus.SUCCEEDED).exists(),
        timeout=30,
        what=f"game {pk} stored",
    )
    return Duel.objects.get(pk=pk)


def game_id(page: Page) -> int:
    found = re.search(r"/duels/(\d+)/play/", page.url)
    assert found, page.url
    return int(found.group(1))


@pytest.mark.usefixtures("referees")
def test_two_games_at_once_a_reopened_game_a_rematch_and_a_resignation(
    gateway, page: Page, screenshot
):
    gateway.workers.start("uploads")
    upload_validated(make_user("agents@example.org"), "tic_tac_toe", "bot", FIRST_LEGAL)
    person = UserFactory(display_name="Ada")
    session = Client()
    session.force_login(person)
    page.context.add_cookies(
        [{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": gateway.url}]
    )
    phone = page.context.new_page()
    phone.set_viewport_size({"width": 390, "height": 844})

    # Two games at once, in two tabs: moving first in one, second in the other.
    first = start(page, gateway.url, "first")
    second = start(phone, gateway.url, "second")
    expect(first.locator("[data-play-side]")).to_have_text("You play X, seat 1.")
    expect(second.locator("[data-play-side]")).to_have_text(re.compile("You play O"))
    first_id, second_id = game_id(page), game_id(phone)
    screenshot("two-games")

    # Each played to its end by clicking, a move in one tab, then in the other.
    going = [first, second]
    while going:
        going = [play for play in going if move_once(play)]
    # The agent takes the first empty cell, the person the last: moving first, the person
    # completes the bottom row; moving second, the agent completes the top one.
    for play, result in ((first, "You won!"), (second, "You lost.")):
        expect(play).to_have_attribute("data-play-state", "done")
        expect(play.locator("[data-play-result]")).to_have_text(result)
        expect(play.locator(".tic-tac-toe-win")).to_have_count(3)  # the winning line
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    for pk in (first_id, second_id):
        match = stored(pk).matches.get()
        assert not match.faults, match.faults  # nobody lost on time, nothing hijacked

    # The first game reopened: its final position and result, no waiting for a referee.
    page.goto(f"{gateway.url}/duels/{first_id}/play/")
    expect(first).to_have_attribute("data-play-state", "done")
    expect(first.locator("[data-play-turn]")).to_have_text("The game is over.")
    expect(first.locator("[data-play-result]")).to_have_text("You won!")
    expect(first.locator("[data-play-board] table")).to_be_visible()
    expect(first.locator(".tic-tac-toe-win")).to_have_count(3)
    screenshot("reopened")

    # A rematch: the same agent, sides swapped (the agent moves first now).
    first.get_by_role("button", name="Rematch").click()
    rematch = page.locator("#play")
    expect(rematch.locator("[data-play-side]")).to_have_text(re.compile("You play O"))
    rematch_id = game_id(page)
    assert rematch_id not in (first_id, second_id)
    expect(rematch).to_have_attribute("data-play-state", "your-turn")
    assert move_once(rematch)
    expect(rematch).to_have_attribute("data-play-state", "your-turn")

    # Resigned on the person's turn (two presses: the first asks).
    resign = rematch.get_by_role("button", name="Resign")
    resign.click()
    expect(resign).to_have_text("Resign: are you sure?")
    resign.click()
    expect(rematch.locator("[data-play-result]")).to_have_text("You resigned: bot v1 wins.")
    match = stored(rematch_id).matches.get()
    assert [fault["kind"] for fault in match.faults] == ["resigned"]

    # My games lists the three, with their results.
    page.get_by_role("link", name="My games").first.click()
    games = page.get_by_role("table")
    for pk in (first_id, second_id, rematch_id):
        expect(games.locator(f'a[href="/duels/{pk}/play/"]')).to_have_count(1)
    expect(games).to_contain_text("lost")
    screenshot("my-games")
