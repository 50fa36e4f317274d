"""Watching a duel while it is played, in a real browser: the page served by the network
gateway (``run_gateway``, as in production behind nginx), the duel played meanwhile by a
worker (here, a thread of the test process running ``duel_play``, as a Celery task would),
the board changing on the page without a reload, and a link to the replay at the end."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.db import connection
from playwright.sync_api import Page, expect

from core.models import DuelStatus, LiveEvent
from duel_runner.services import duel_play
from reads.replays import player_labels
from tests.factories import queued_duel
from tests.pipeline import PLAYERS, make_user, pipeline, upload_validated  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

#: A tic-tac-toe agent that thinks for a while, so that a person (and the test) sees the
#: moves arrive one by one.
SLOW_PLAYER = b"""import time

from arena_sdk import agent


@agent
def play(turn):
    time.sleep(0.8)
    return turn.random.choice(turn.legal_actions)
"""


def test_it_shows_the_board_changing_while_played_then_links_the_replay(
    gateway, page: Page, screenshot
):
    owner = make_user()
    gateway.workers.start("uploads")
    slow = upload_validated(owner, "tic_tac_toe", "slowpoke", SLOW_PLAYER)
    rando = upload_validated(
        owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    duel = queued_duel([slow, rando], num_matches=2, seed=4)

    page.goto(f"{gateway.url}/duels/{duel.pk}/")
    live = page.locator("#live")
    expect(live.get_by_role("status")).to_contain_text("Waiting for the first match")
    # A mark a reload would wipe out: the page must update in place.
    page.evaluate("window.arenaNotReloaded = true")

    def play() -> None:
        try:
            duel_play(duel_id=duel.pk)
        finally:
            connection.close()

    worker = threading.Thread(target=play)
    worker.start()
    steps: list[str] = []
    boards: set[str] = set()
    try:
        # Each state the page shows while the duel runs: it must move on several times.
        deadline = time.monotonic() + 90
        while live.get_attribute("data-live-ended") != "true":
            assert time.monotonic() < deadline, f"the duel did not end on the page: {steps}"
            step = live.get_attribute("data-live-step") or ""
            if step and (not steps or steps[-1] != step):
                steps.append(step)
                boards.add(live.locator("[data-live-board]").inner_html())
                if len(steps) == 2:
                    expect(live.locator("[data-live-moves]")).to_contain_text("Last move:")
                    screenshot("live-running")
            page.wait_for_timeout(50)
    finally:
        worker.join(timeout=120)
    # Several states while it was played, in place. How many of a match's states the page
    # shows depends on how often it is read, which a loaded machine slows: not counted
    # per match.
    assert len(steps) >= 3 and len({step.split(":")[0] for step in steps}) == 2, steps
    assert len(boards) >= 3, steps
    assert page.evaluate("window.arenaNotReloaded") is True
    expect(live.get_by_role("status")).to_contain_text("The duel is over")
    expect(live.get_by_role("list", name="Matches played").get_by_role("listitem")).to_have_count(2)
    screenshot("live-ended")

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    assert not LiveEvent.objects.filter(duel=duel).exists()
    live.get_by_role("link", name="Replay of match 1").click()
    expect(page).to_have_url(re.compile(re.escape(f"{gateway.url}/duels/{duel.pk}/matches/1/")))
    expect(page.locator("#replay")).to_be_visible()


#: Each seat as the live view shows it now, once it shows a seat to move: read in one go,
#: so that no frame arriving meanwhile mixes two states.
SEATS_WITH_A_MOVER = """() => {
  const seats = [...document.querySelectorAll("#live [data-live-seats] li")];
  if (!seats.some((seat) => seat.querySelector("[data-live-turn]"))) {
    return null;
  }
  return seats.map((seat) => ({
    name: seat.querySelector(".live-seat-name").textContent,
    side: seat.querySelector("[data-live-side]")?.textContent ?? "",
    clock: seat.querySelector("[data-live-clock]")?.textContent ?? "",
    turn: seat.querySelector("[data-live-turn]")?.textContent ?? "",
  }));
}"""


def test_it_shows_each_seats_player_side_clock_and_turn_beside_the_board(
    gateway, page: Page, screenshot
):
    owner = make_user()
    gateway.workers.start("uploads")
    slow = upload_validated(owner, "tic_tac_toe", "slowpoke", SLOW_PLAYER)
    rando = upload_validated(
        owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    duel = queued_duel([slow, rando], num_matches=2, seed=4)
    labels = player_labels(duel)

    page.goto(f"{gateway.url}/duels/{duel.pk}/")
    live = page.locator("#live")
    expect(live.get_by_role("status")).to_contain_text("Waiting for the first match")

    def play() -> None:
        try:
            duel_play(duel_id=duel.pk)
        finally:
            connection.close()

    worker = threading.Thread(target=play)
    worker.start()
    try:
        seats = page.wait_for_function(SEATS_WITH_A_MOVER).json_value()
        screenshot("seats")
        expect(live).to_have_attribute("data-live-ended", "true", timeout=90_000)
    finally:
        worker.join(timeout=120)

    assert sorted(seat["name"] for seat in seats) == sorted(labels.values())
    assert sorted(seat["side"] for seat in seats) == ["O", "X"]
    # Tic-tac-toe's clock (info.yml): 1 s a move, then a bank of 10 s for the match.
    for seat in seats:
        assert re.fullmatch(r"move [01]\.[0-9] s · bank (10|[0-9])\.[0-9] s", seat["clock"]), seat
    assert [seat["turn"] for seat in seats].count("to move") == 1
    # Once the duel is over, nobody is to move.
    expect(live.locator("[data-live-turn]")).to_have_count(0)
    expect(live.locator("[data-live-seats] li")).to_have_count(2)
