"""What people do on Arena, end to end in a real browser against the live server.

Uploads are built, validated and played for real by the process sandbox: the services
start that work once their transaction commits, inside the server's request thread, so
a page reached after a submit already shows the outcome.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from core.models import Competitor, InviteCode, Revision, Tournament, TournamentStatus, User
from tests.factories import PASSWORD, UserFactory
from tests.pipeline import PLAYERS, pipeline, upload  # noqa: F401
from tests.support.journeys import fill_registration, log_in, pipeline_status

pytestmark = pytest.mark.django_db(transaction=True)

RANDOM_PLAYER = PLAYERS / "tic_tac_toe" / "random_player.py"
MINIMAX_PLAYER = PLAYERS / "tic_tac_toe" / "minimax.py"
# The syntax error is on line 4, so the page must say where it is.
BROKEN_PLAYER = b"from arena_sdk import agent\n\n\n@agent def play(turn:\n    return 0\n"


# --- 1. registering -----------------------------------------------------------------


@pytest.mark.usefixtures("pipeline")
def test_it_registers_with_the_invite_code_and_lands_logged_in(
    live_server, page, screenshot, invite
):
    page.goto(live_server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Register").click()
    expect(page.get_by_role("heading", name="Register")).to_be_visible()
    # The password rules are a list: inside a <p> the parser would push it out of the help.
    expect(page.locator(".help ul")).to_contain_text("at least 8 characters")

    fill_registration(page, code="welcome-2026", email="Ada@Example.com", display_name="Ada")

    expect(page).to_have_url(live_server.url + "/")
    expect(page.get_by_role("status")).to_contain_text("Welcome, Ada! Your account is ready.")
    # And what to do next.
    expect(page.get_by_role("status")).to_contain_text("download its starter agent, and upload it")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Ada")).to_have_attribute("href", reverse("profile"))
    expect(nav.get_by_role("button", name="Log out")).to_be_visible()
    expect(nav.get_by_role("link", name="Log in")).to_have_count(0)
    expect(page.get_by_role("link", name="Tic-tac-toe", exact=True)).to_be_visible()
    screenshot("home")

    user = User.objects.get(email="ada@example.com")
    assert user.display_name == "Ada"
    assert InviteCode.objects.get(pk=invite.pk).used_count == 1


def test_it_refuses_a_wrong_invite_code_and_creates_no_account(
    live_server, page, screenshot, invite
):
    page.goto(live_server.url + reverse("register"))

    fill_registration(page, code="welcome-2025", email="eve@example.com", display_name="Eve")

    expect(page.locator(".field-error")).to_have_text(
        "This invite code does not exist; check the code you were given."
    )
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Log in")).to_be_visible()
    # The form keeps what was typed, except the passwords.
    expect(page.get_by_label("E-mail address")).to_have_value("eve@example.com")
    screenshot("wrong-invite")
    assert not User.objects.filter(email="eve@example.com").exists()
    assert InviteCode.objects.get(pk=invite.pk).used_count == 0


# --- 2. uploading -------------------------------------------------------------------


@pytest.mark.usefixtures("pipeline")
def test_it_uploads_an_agent_then_a_broken_one_then_refuses_a_fake_zip(
    live_server, page, screenshot, carol
):
    log_in(page, live_server.url, carol)
    page.get_by_role("link", name="Tic-tac-toe", exact=True).click()
    expect(page.get_by_role("heading", name="Tic-tac-toe", level=1)).to_be_visible()
    screenshot("environment")

    page.get_by_label("Competitor name").fill("rando")
    page.get_by_label("File").set_input_files(RANDOM_PLAYER)
    page.get_by_role("button", name="Upload").click()

    expect(page).to_have_url(re.compile(r"/environments/tic_tac_toe/competitors/rando/v1/$"))
    expect(page.get_by_role("status")).to_contain_text("Uploaded rando v1.")
    expect(pipeline_status(page, "Build")).to_have_text("Succeeded")
    expect(pipeline_status(page, "Validation")).to_have_text("Succeeded")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Validated")
    expect(page.get_by_role("link", name="Replay match 0")).to_be_visible()
    screenshot("revision-succeeded")

    page.get_by_role("navigation", name="Breadcrumbs").get_by_role("link", name="rando").click()
    page.get_by_label("File").set_input_files(
        {"name": "broken.py", "mimeType": "text/x-python", "buffer": BROKEN_PLAYER}
    )
    page.get_by_role("button", name="Upload").click()

    expect(page).to_have_url(re.compile(r"/competitors/rando/v2/$"))
    expect(pipeline_status(page, "Build")).to_have_text("Failed")
    expect(pipeline_status(page, "Validation")).to_have_text("Not requested")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Build failed")
    error = page.get_by_role("alert").filter(has_text="Build failed")
    expect(error).to_contain_text("syntax error")
    expect(error).to_contain_text("line 4")
    screenshot("revision-failed")

    page.get_by_role("navigation", name="Breadcrumbs").get_by_role(
        "link", name="Tic-tac-toe"
    ).click()
    page.get_by_label("Competitor name").fill("zipper")
    page.get_by_label("File").set_input_files(
        {"name": "bot.zip", "mimeType": "application/zip", "buffer": b"this is not a zip"}
    )
    page.get_by_role("button", name="Upload").click()

    expect(page.locator(".form-errors")).to_have_text("The file is not a valid zip archive.")
    expect(page.get_by_label("Competitor name")).to_have_value("zipper")
    screenshot("fake-zip-refused")
    assert not Competitor.objects.filter(name="zipper").exists()
    versions = Revision.objects.filter(competitor__owner=carol).values_list("version", flat=True)
    assert sorted(versions) == [1, 2]


# --- 3. replays ---------------------------------------------------------------------


@pytest.mark.usefixtures("pipeline")
def test_it_follows_a_validation_duel_to_a_replay_and_steps_through_it(
    live_server, page, screenshot, carol
):
    revision = upload(carol, "tic_tac_toe", "rando", RANDOM_PLAYER)
    assert revision.is_valid, revision.job("validation").error

    page.goto(live_server.url + revision.get_absolute_url())
    page.get_by_role("link", name=re.compile(r"^duel #\d+$")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Validation of rando v1")
    expect(page.locator(".lead")).to_contain_text("Validated")
    matches = page.get_by_role("region", name="Matches").locator("tbody tr")
    expect(matches).to_have_count(2)
    screenshot("validation-duel")

    matches.first.get_by_role("link", name="Replay").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Match 0")
    # The viewer shows its controls once its script has taken over the page.
    expect(page.locator("[data-replay-controls]")).to_be_visible()
    slider = page.locator("[data-replay-slider]")
    last = int(slider.get_attribute("max"))
    position = page.locator("[data-replay-position]")
    board = page.locator("[data-replay-board]")
    moves = page.locator(".move-list .move")
    expect(position).to_have_text(f"Step {last} of {last}")
    expect(moves).to_have_count(last + 1)
    expect(moves.first).to_contain_text("Start")
    expect(moves.nth(1)).to_contain_text("rando v1 (player")

    page.keyboard.press("Home")
    expect(position).to_have_text(f"Step 0 of {last}")
    expect(slider).to_have_value("0")
    expect(board.locator(".tic-tac-toe-player-1, .tic-tac-toe-player-2")).to_have_count(0)
    start_html = board.inner_html()

    page.get_by_role("button", name="Step forward").click()
    expect(position).to_have_text(f"Step 1 of {last}")
    expect(slider).to_have_value("1")
    expect(board.locator(".tic-tac-toe-player-1, .tic-tac-toe-player-2")).to_have_count(1)
    first_move_html = board.inner_html()
    assert first_move_html != start_html

    page.keyboard.press("ArrowRight")
    expect(position).to_have_text(f"Step 2 of {last}")
    expect(slider).to_have_value("2")
    expect(board.locator(".tic-tac-toe-player-1, .tic-tac-toe-player-2")).to_have_count(2)
    assert board.inner_html() != first_move_html
    expect(page.locator(".move.current [data-step]")).to_have_attribute("data-step", "2")
    screenshot("replay-mid-match")

    page.keyboard.press("End")
    expect(position).to_have_text(f"Step {last} of {last}")
    expect(board).to_contain_text(re.compile(r"wins|[Dd]raw"))
    expect(page.locator(".lead")).to_contain_text(re.compile(r"won|[Dd]raw"))

    page.keyboard.press("Home")
    expect(position).to_have_text(f"Step 0 of {last}")

    moves.nth(3).get_by_role("link").click()
    expect(position).to_have_text(f"Step 3 of {last}")
    expect(moves.nth(3)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(moves.nth(3).get_by_role("link")).to_have_attribute("aria-current", "step")
    expect(page).to_have_url(re.compile(r"\?step=3$"))

    play = page.locator("[data-replay-play]")
    play.click()
    expect(play).to_have_attribute("aria-label", "Pause")
    play.click()
    expect(play).to_have_attribute("aria-label", "Play")

    page.locator("[data-replay-speed]").select_option("4")
    play.click()
    expect(play).to_have_attribute("aria-label", "Pause")
    expect(position).to_have_text(f"Step {last} of {last}")
    expect(play).to_have_attribute("aria-label", "Play")


# --- 4. a tournament ----------------------------------------------------------------


@pytest.mark.usefixtures("pipeline")
def test_it_lets_an_organizer_create_and_launch_a_tournament_from_the_admin(
    live_server, page, screenshot, organizer, carol
):
    dave = UserFactory(email="dave@example.com", display_name="Dave")
    minimax = upload(carol, "tic_tac_toe", "minimax-bot", MINIMAX_PLAYER)
    rando = upload(dave, "tic_tac_toe", "rando", RANDOM_PLAYER)
    assert minimax.is_valid and rando.is_valid

    page.goto(live_server.url + reverse("admin:index"))
    page.get_by_label("Email").fill(organizer.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Organize")).to_be_visible()

    page.get_by_role("row", name=re.compile("Tournaments")).get_by_role("link", name="Add").click()
    # The participants are listed once an environment is chosen, from the help text's links.
    page.get_by_role("link", name="Tic-tac-toe", exact=True).click()
    expect(page.get_by_label("Environment")).to_have_value(str(minimax.competitor.environment_id))
    page.get_by_label("Name").fill("Spring cup")
    page.get_by_label("Matches per duel").fill("2")
    participants = page.locator("#id_participants")
    expect(participants.get_by_role("checkbox")).to_have_count(2)
    participants.get_by_label(re.compile(r"minimax-bot v1 \(by Carol")).check()
    participants.get_by_label(re.compile(r"rando v1 \(by Dave")).check()
    screenshot("admin-tournament-form")
    page.get_by_role("button", name="Save", exact=True).click()

    messages = page.locator(".messagelist")
    expect(messages).to_contain_text("Spring cup is a draft with 2 participants")
    row = page.get_by_role("row", name=re.compile("Spring cup"))
    expect(row).to_contain_text("Draft")
    row.get_by_role("checkbox").check()
    page.get_by_role("combobox", name="Action").select_option(
        label="Launch (schedule and play every duel)"
    )
    page.get_by_role("button", name="Go").click()

    expect(messages).to_contain_text("Spring cup: completed, 1/1 duels played")
    expect(messages).to_contain_text("Launched: 1")
    expect(row).to_contain_text("Completed")
    tournament = Tournament.objects.get(name="Spring cup")
    assert tournament.status == TournamentStatus.COMPLETED
    assert tournament.matches_per_duel == 2

    public_link = row.get_by_role("link", name="view ↗")
    expect(public_link).to_have_attribute("target", "_blank")
    page.goto(live_server.url + public_link.get_attribute("href"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Spring cup")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Completed")
    expect(page.get_by_text("1 of 1 duel played (100%).")).to_be_visible()
    standings = page.get_by_role("region", name="Standings")
    rows = standings.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("td").first).to_have_text("1")
    expect(rows.nth(1).locator("td").first).to_have_text(re.compile(r"^[12]$"))
    expect(standings).to_contain_text("minimax-bot")
    expect(standings).to_contain_text("rando")
    duels = page.get_by_role("region", name="Duels").locator("tbody tr")
    expect(duels).to_have_count(1)
    expect(duels.first).to_contain_text("Played")
    expect(duels.first).to_contain_text("minimax-bot v1")
    expect(duels.first).to_contain_text("rando v1")
    screenshot("tournament-standings")

    duels.first.get_by_role("link").first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(" vs ")
    matches = page.get_by_role("region", name="Matches").locator("tbody tr")
    expect(matches).to_have_count(2)
    matches.nth(1).get_by_role("link", name="Replay").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Match 1")
    expect(page.locator("[data-replay-controls]")).to_be_visible()
    expect(page.get_by_role("navigation", name="Breadcrumbs")).to_contain_text("Spring cup")
