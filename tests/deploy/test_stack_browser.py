"""The compose stack of a fresh clone from a real browser, through nginx as visitors reach
it: a newcomer registers, uploads an agent that worker-build builds in the engine proxy's
containers and validates; an organizer launches a tournament from the admin; the
workers play it while the page is read again; its replay opens.

Chromium reaches the site by its name (``arena.test``, the stack's one allowed host)
mapped to loopback (``tests.support.browser``), on nginx's published port."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, expect

from tests.factories import PASSWORD
from tests.support.compose_stack import HOST, ComposeStack, players_upload
from tests.support.journeys import fill_registration, pipeline_status

#: A build and a validation in containers started through the engine proxy, on a busy
#: machine, read from a page that refreshes itself every few seconds.
OUTCOME_TIMEOUT_MS = 180_000
TOURNAMENT_TIMEOUT_S = 180
AGENT = """
from arena_sdk import agent


@agent
def play(turn):
    return turn.random.choice(turn.legal_actions)
"""


def site(stack: ComposeStack) -> str:
    return f"http://{HOST}:{stack.http_port}"


def organizer_and_invite_make(stack: ComposeStack, *, email: str, code: str) -> None:
    stack.django(f"""
import json
from core.services.accounts import user_create
from core.models import InviteCode, Role, User

if not User.objects.filter(email={email!r}).exists():
    user_create(email={email!r}, display_name="Olga", role=Role.ORGANIZER, password={PASSWORD!r})
InviteCode.objects.get_or_create(code={code!r}, defaults={{"note": "browser test"}})
print(json.dumps("made"))
""")


def until_completed(page: Page, *, timeout: float) -> None:
    """Reads the tournament's page again until it says it has completed."""
    heading = page.get_by_role("heading", level=1)
    deadline = time.monotonic() + timeout
    while "Completed" not in (heading.text_content() or ""):
        assert time.monotonic() < deadline, f"the tournament did not complete: {heading}"
        time.sleep(3)
        page.reload()


def test_a_visitor_registers_uploads_and_watches_a_tournament_through_nginx(
    compose_stack: ComposeStack, page: Page, screenshot, tmp_path
):
    stack = compose_stack
    organizer_and_invite_make(stack, email="olga@example.org", code="stack-2026")
    players_upload(stack, email="rival@example.org", password=PASSWORD, names=("stack-rival",))

    # A newcomer registers with the invite code, through nginx.
    page.goto(site(stack) + "/accounts/register/")
    fill_registration(page, code="stack-2026", email="nia@example.org", display_name="Nia")
    expect(page.get_by_role("status")).to_contain_text("Welcome, Nia!")

    # Uploads an agent: built by worker-build through the engine proxy, then validated.
    agent_file = tmp_path / "main.py"
    agent_file.write_text(AGENT + f"# {stack.project}\n")
    page.goto(site(stack) + "/environments/sum_to_10/")
    page.get_by_label("Competitor name").fill("nia-bot")
    page.get_by_label("File").set_input_files(str(agent_file))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text("Uploaded nia-bot v1.")).to_be_visible()
    expect(pipeline_status(page, "Build")).to_have_text("Succeeded", timeout=OUTCOME_TIMEOUT_MS)
    expect(pipeline_status(page, "Validation")).to_have_text(
        "Succeeded", timeout=OUTCOME_TIMEOUT_MS
    )
    screenshot("stack-validated")
    page.get_by_role("button", name="Log out").click()

    # An organizer launches a tournament of the two from the admin; the workers play it.
    page.goto(site(stack) + "/admin/")
    page.get_by_label("Email").fill("olga@example.org")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("row", name=re.compile("Tournaments")).get_by_role("link", name="Add").click()
    page.get_by_role("link", name="Sum to 10", exact=True).click()
    page.get_by_label("Name").fill("Stack cup")
    page.get_by_label("Matches per duel").fill("2")
    participants = page.locator("#id_participants")
    # Every valid revision of the environment comes checked; the session's other tests
    # made some.
    for box in participants.get_by_role("checkbox").all():
        box.uncheck()
    participants.get_by_label(re.compile(r"nia-bot v1 \(by Nia")).check()
    participants.get_by_label(re.compile(r"stack-rival v1 \(by rival")).check()
    page.get_by_role("button", name="Save", exact=True).click()
    row = page.get_by_role("row", name=re.compile("Stack cup"))
    row.get_by_role("checkbox").check()
    page.get_by_role("combobox", name="Action").select_option(
        label="Launch (schedule and play every duel)"
    )
    page.get_by_role("button", name="Go").click()
    expect(page.locator(".messagelist")).to_contain_text("Launched: 1")

    # The public page, read until the workers have played it.
    public_page = row.get_by_role("link", name="view ↗").get_attribute("href")
    assert public_page is not None
    page.goto(site(stack) + public_page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("Stack cup")
    until_completed(page, timeout=TOURNAMENT_TIMEOUT_S)
    standings = page.get_by_role("region", name="Standings")
    expect(standings).to_contain_text("nia-bot")
    expect(standings).to_contain_text("stack-rival")
    duels = page.get_by_role("region", name="Duels").locator("tbody tr")
    expect(duels).to_have_count(1)
    expect(duels.first).to_contain_text("Played")
    screenshot("stack-tournament")

    # And one of its replays.
    duels.first.get_by_role("link").first.click()
    matches = page.get_by_role("region", name="Matches").locator("tbody tr")
    expect(matches).to_have_count(2)
    matches.first.get_by_role("link", name="Replay").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Match")
    expect(page.locator("[data-replay-controls]")).to_be_visible()
    expect(page.locator("[data-replay-board]")).to_be_visible()
    screenshot("stack-replay")
