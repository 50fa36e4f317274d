"""A person plays an agent in a real browser, to the end, by clicking: the site served by
the network gateway (``run_gateway``, with a Redis seat bus, as in production behind
nginx), the game refereed meanwhile by a worker (here, a thread of the test process
running ``duel_play``, as a task of the ``online`` queue would)."""

from __future__ import annotations

import re
import threading

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from core.models import Duel, DuelStatus, RatingChange
from tests.factories import UserFactory
from tests.pipeline import (  # noqa: F401
    PLAYERS,
    make_user,
    pipeline,
    referee_when_queued,
    upload_validated,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


def test_it_plays_an_agent_by_clicking_to_the_end_unrated_and_kept_as_a_replay(
    gateway, page: Page, screenshot
):
    agent_owner = make_user("agents@example.org")
    gateway.workers.start("uploads")
    upload_validated(
        agent_owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    person = UserFactory(display_name="Ada")
    # Logged in as by the login form (whose password hashing the gateway's own settings
    # would not share with this process's fast test hasher): the session's cookie.
    session = Client()
    session.force_login(person)
    page.context.add_cookies(
        [{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": gateway.url}]
    )
    page.goto(gateway.url + "/")
    expect(page.get_by_role("navigation", name="Main")).to_contain_text("Ada")

    stop = threading.Event()
    referee = threading.Thread(target=referee_when_queued, args=(stop,))
    referee.start()
    try:
        page.goto(f"{gateway.url}/environments/tic_tac_toe/competitors/rando/")
        page.get_by_role("button", name="Play against rando").click()
        expect(page.get_by_role("heading", name="You vs rando v1")).to_be_visible()
        play = page.locator("#play")
        cells = play.locator("[data-play-board]").get_by_role("button", name=re.compile("^Play"))

        moves = 0
        while play.get_attribute("data-play-state") not in ("over", "done"):
            try:
                # The suite's 60 s (tests.support.browser): the first turn waits for the
                # referee to start rando, which 20 s may not cover on a loaded machine.
                expect(play).to_have_attribute("data-play-state", "your-turn")
            except AssertionError:
                if play.get_attribute("data-play-state") in ("over", "done"):
                    break
                raise
            if moves == 0:
                expect(play.locator("[data-play-clock]")).to_contain_text("for this move")
                expect(play.locator("[data-play-board] table")).to_be_visible()
                screenshot("your-turn")
            request = play.get_attribute("data-play-request")
            cells.first.click()
            moves += 1
            # Answered: the page waits for the agent, or already offers the next request.
            page.wait_for_function(
                """(request) => {
                    const play = document.getElementById("play");
                    return play.dataset.playRequest !== request
                        || play.dataset.playState !== "your-turn";
                }""",
                arg=request,
            )
            assert moves <= 5, "a tic-tac-toe player moves five times at most"
        expect(play).to_have_attribute("data-play-state", "done")
        expect(play.locator("[data-play-result]")).to_have_text(
            re.compile(r"You won!|You lost\.|A draw\.")
        )
        screenshot("game-over")
    finally:
        stop.set()
        referee.join(timeout=60)

    duel = Duel.objects.get(seats__number=1, seats__revision__competitor__owner=person)
    assert duel.status == DuelStatus.SUCCEEDED and duel.tournament is None
    match = duel.matches.get()
    assert not match.faults and len(match.actions) >= 5
    assert not RatingChange.objects.exists()
    page.locator("#play").get_by_role("link", name="Replay of the match").click()
    expect(page.locator("#replay")).to_be_visible()
