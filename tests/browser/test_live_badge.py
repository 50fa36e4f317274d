"""A duel's page, watched live, drops its "Running" badge when the duel ends, in a real
browser: the page from the live server, its stream answered by the test with what the
gateway tells a spectator at the end (``reads.live.live_ending``, the stream itself being
tested in tests/edge/test_live.py and end to end in tests/browser/test_live.py)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, Route, expect

from core.models import Duel, DuelResult, DuelStatus
from reads.live import LIVE_PREFIX, live_ending

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_badge_says_what_happened_to_the_players_once_the_duel_ends(
    live_server, page: Page, screenshot, duel
):
    duel.seats.filter(number=2).update(errors=1)
    duel.matches.update(faults=[{"player": 2, "kind": "timeout", "message": "no reply", "step": 2}])
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, result="")

    def stream(route: Route) -> None:
        # The duel ends as the page starts watching it.
        Duel.objects.filter(pk=duel.pk).update(
            status=DuelStatus.SUCCEEDED, result=DuelResult.PLAYER_1_WIN
        )
        end = live_ending(duel.pk)
        route.fulfill(
            status=200,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
            body=f"event: end\ndata: {json.dumps(end)}\n\n",
        )

    page.route(f"**{LIVE_PREFIX}{duel.pk}", stream)
    page.goto(live_server.url + duel.get_absolute_url())

    expect(page.locator("#live")).to_have_attribute("data-live-ended", "true")
    lead = page.locator(".lead")
    expect(lead).not_to_contain_text("Running")
    expect(lead).to_contain_text("bobs-bot v1 lost 1 match by a timeout")
    expect(lead.locator("[data-duel-badge]")).to_have_text("Played")
    expect(lead.locator("[data-duel-badge]")).to_have_class("badge badge-bad")
    screenshot("ended")
