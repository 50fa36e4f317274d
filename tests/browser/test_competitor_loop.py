"""The competitor's loop in a real browser, as a new attendee lives it, with no organizer
acting: sign up, upload, see the first rated matches and a leaderboard place (the game's
standing ladder, played by the tournament manager's passes as ``run_gateway --manager``
runs them), start a test duel and watch its replay, disable and enable the agent again,
then delete it (it played in the ladder, whose standings keep it: it is withdrawn for
good rather than erased)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from core.models import Competitor, Environment, Tournament
from tests.factories import UserFactory
from tests.pipeline import PLAYERS, pipeline, upload  # noqa: F401
from tests.support.journeys import fill_registration
from tournament_manager.daemon import run_once

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

TIC_TAC_TOE = PLAYERS / "tic_tac_toe"


def test_a_new_attendee_is_rated_tests_and_withdraws_an_agent_without_any_organizer(
    live_server, page, screenshot, invite
):
    Environment.objects.filter(name="tic_tac_toe").update(standing_competition=True)
    upload(UserFactory(display_name="Bea"), "tic_tac_toe", "minimax", TIC_TAC_TOE / "minimax.py")

    # Signed up with the invite code, then an upload.
    page.goto(live_server.url + reverse("register"))
    fill_registration(page, code="welcome-2026", email="new@example.org", display_name="Newt")
    page.get_by_role("link", name="Tic-tac-toe", exact=True).click()
    starter = page.locator("[data-starter]")
    expect(starter.get_by_role("link", name="Download a starter agent")).to_be_visible()
    page.get_by_label("Competitor name").fill("my-first")
    page.get_by_label("File").set_input_files(TIC_TAC_TOE / "random_player.py")
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Validated")

    # Rated without anyone acting: the manager opens the game's ladder, the new agent
    # joins it and plays; the next pass refits the leaderboard.
    run_once()
    run_once()
    assert Tournament.objects.get(is_standing=True).name == "Tic-tac-toe ladder"
    page.get_by_role("navigation", name="Breadcrumbs").get_by_role("link", name="my-first").click()
    progress = page.locator("[data-ladder-progress]")
    expect(progress).to_contain_text(re.compile(r"Tic-tac-toe ladder: \d+ rated match"))
    leaderboard = page.locator(".facts").get_by_text(re.compile(r"^(#\d|provisional)"))
    expect(leaderboard).to_be_visible()
    history = page.locator("[data-competitor-duels]")
    expect(history.get_by_role("link", name="Tic-tac-toe ladder").first).to_be_visible()
    expect(page.locator("svg.rating-chart")).to_be_visible()
    screenshot("rated")

    # A test duel against an agent of its choice, played at once, and its replay.
    page.get_by_label("Against").select_option("minimax")
    page.get_by_role("button", name="Start a test duel").click()
    expect(page).to_have_url(re.compile(r"/duels/\d+/$"))
    page.get_by_role("link", name="Replay").first.click()
    expect(page.locator("[data-replay-board]")).to_be_visible()
    screenshot("test-duel-replay")

    # Disabled (it leaves the ladder, keeps its history), enabled again, then deleted.
    page.goto(live_server.url + Competitor.objects.get(name="my-first").get_absolute_url())
    page.get_by_role("button", name="Disable").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("disabled")
    run_once()
    ladder = Tournament.objects.get(is_standing=True)
    assert ladder.participants.get(revision__competitor__name="my-first").withdrawn
    page.get_by_role("button", name="Enable").click()
    expect(page.get_by_role("heading", level=1)).not_to_contain_text("disabled")
    run_once()
    assert ladder.participants.filter(
        revision__competitor__name="my-first", withdrawn=False
    ).exists()
    page.get_by_role("link", name="Delete…").click()
    page.get_by_role("button", name="Delete my-first").click()
    # It played in the ladder, whose standings keep it: withdrawn for good, not erased.
    expect(page.get_by_role("status")).to_contain_text("Withdrawn rather than erased")
    screenshot("deleted")
    assert Competitor.objects.get(name="my-first").is_disabled
    run_once()
    assert ladder.participants.get(revision__competitor__name="my-first").withdrawn
