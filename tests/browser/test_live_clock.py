"""The clock of the seat to move counts down on a live duel's page, in a real browser: the
page from the live server, its stream answered by the test with one frame as the gateway
sends it (``reads.live.Spectator``; the stream itself is tested in tests/edge/test_live.py
and end to end in tests/browser/test_live.py)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, Route, expect

from core.models import Duel, DuelStatus
from reads.live import LIVE_PREFIX, Spectator, live_duel

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_clock_of_the_seat_to_move_counts_down_its_move_then_its_bank(
    live_server, page: Page, duel
):
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, result="")
    watched = live_duel(duel.pk)
    assert watched is not None
    start = {"type": "match", "match": 0, "seed": 1, "first_player": 1, "seats": [1, 2]}
    (frame,) = Spectator(watched).take([{**start, "move_time": 0.5, "time_bank": 30}])

    def stream(route: Route) -> None:
        # One frame, then a silence: the browser waits long before it asks again.
        route.fulfill(
            status=200,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
            body=f"retry: 600000\n\nid: 1\nevent: frame\ndata: {json.dumps(frame)}\n\n",
        )

    page.route(f"**{LIVE_PREFIX}{duel.pk}", stream)
    page.goto(live_server.url + duel.get_absolute_url())

    seats = page.locator("#live [data-live-seats] li")
    expect(seats).to_have_count(2)
    mover, waiting = seats.nth(0), seats.nth(1)
    expect(mover).to_contain_text("alices-bot v1")
    expect(mover.locator("[data-live-side]")).to_have_text("X")
    expect(mover.locator("[data-live-turn]")).to_have_text("to move")
    # Past its half-second move, the bank runs down from 30 s.
    expect(mover.locator("[data-live-clock]")).to_have_text(
        re.compile(r"move 0\.0 s · bank (2[0-9]|1?[0-9])\.[0-9] s")
    )
    expect(waiting).to_contain_text("bobs-bot v1")
    expect(waiting.locator("[data-live-side]")).to_have_text("O")
    expect(waiting.locator("[data-live-turn]")).to_have_count(0)
    expect(waiting.locator("[data-live-clock]")).to_have_text("move 0.5 s · bank 30.0 s")
