"""A running tournament's page follows it without reloading, in a real browser (the page
from the live server, the tournament moved on by the test as the workers would): what
changed appears in place, while the scroll position and the focus stay, and the page stops
asking once the tournament is over."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from core.models import DuelResult, DuelStatus, Tournament, TournamentStatus
from tests.factories import DuelFactory

pytestmark = pytest.mark.django_db(transaction=True)

DUELS = 12
#: How long an expectation waits for the page's next update (every 5 s): a deadline only a
#: failure reaches.
UPDATED_MS = 60_000


def test_a_running_tournament_updates_in_place_keeping_scroll_and_focus(
    live_server, page: Page, screenshot, tournament, alices_revision, bobs_revision
):
    Tournament.objects.filter(pk=tournament.pk).update(
        status=TournamentStatus.RUNNING, ended_at=None, duels_total=DUELS, duels_done=0
    )
    duels = [
        DuelFactory(
            tournament=tournament, revisions=[alices_revision, bobs_revision], num_matches=1
        )
        for _ in range(DUELS)
    ]
    # A window short enough for the page to scroll.
    page.set_viewport_size({"width": 1000, "height": 500})
    page.goto(live_server.url + tournament.get_absolute_url())
    progress = page.get_by_role("region", name="Progress")
    expect(progress).to_contain_text(f"0 of {DUELS} duels played")
    # A mark a reload would wipe out, a scroll position and a focused link.
    page.evaluate("window.arenaNotReloaded = true")
    last = page.get_by_role("link", name=f"#{duels[-1].pk}", exact=True)
    last.focus()
    page.evaluate("window.scrollTo(0, 400)")
    scrolled = page.evaluate("window.scrollY")
    assert scrolled == 400

    duel = duels[0]
    type(duel).objects.filter(pk=duel.pk).update(
        status=DuelStatus.SUCCEEDED, result=DuelResult.PLAYER_1_WIN
    )
    Tournament.objects.filter(pk=tournament.pk).update(duels_done=1)

    expect(progress).to_contain_text(f"1 of {DUELS} duels played", timeout=UPDATED_MS)
    duels_list = page.get_by_role("region", name="Duels")
    row = duels_list.get_by_role("row").filter(
        has=page.get_by_role("link", name=f"#{duel.pk}", exact=True)
    )
    expect(row).to_contain_text("alices-bot v1 won", timeout=UPDATED_MS)
    assert page.evaluate("window.arenaNotReloaded") is True
    assert page.evaluate("window.scrollY") == scrolled
    expect(last).to_be_focused()
    screenshot("updated")

    Tournament.objects.filter(pk=tournament.pk).update(
        status=TournamentStatus.COMPLETED, duels_done=DUELS
    )

    expect(page.locator("[data-refresh]")).to_have_attribute(
        "data-refresh-stopped", "true", timeout=UPDATED_MS
    )
    expect(page.get_by_role("heading", level=1)).to_contain_text("Completed")
    expect(progress).to_contain_text(f"{DUELS} of {DUELS} duels played")
    assert page.evaluate("window.arenaNotReloaded") is True
