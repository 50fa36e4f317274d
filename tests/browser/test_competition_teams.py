"""A competition's teams and final marks in a real browser (the live server): an
invitation link whose code travels in the URL's fragment, read by the join page's script;
a revision marked final on the agent's page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import Browser, BrowserContext, Page, expect

from core.models import Competition, Revision, User
from core.services.teams import invitation_create, team_create
from tests.factories import PASSWORD, CompetitorFactory, RevisionFactory, scheduled_competition

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cup() -> Competition:
    now = timezone.now()
    return scheduled_competition(
        opens=now - timedelta(days=1), deadline=now + timedelta(days=2), team_size_limit=3
    )


def sign_in(context: BrowserContext, user: User, url: str) -> None:
    """The session's cookie, as the login form would set it."""
    session = Client()
    session.force_login(user)
    context.add_cookies(
        [{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": url}]
    )


def test_alice_invites_bob_by_link_and_both_see_him_in_the_team(
    live_server, browser: Browser, page: Page, screenshot, cup, alice, bob
):
    sign_in(page.context, alice, live_server.url)
    page.goto(live_server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Competitions").click()
    page.get_by_role("link", name="The cup").click()
    page.get_by_label("Team name").fill("Crosses")
    page.get_by_role("button", name="Form the team").click()
    expect(page.get_by_text("Team Crosses is formed")).to_be_visible()
    page.get_by_role("button", name="Invite").click()
    link = page.get_by_label("Invitation link").input_value()
    assert link.startswith(f"{live_server.url}/c/cup/join/#")
    screenshot("link-made")

    bobs = browser.new_context()
    try:
        sign_in(bobs, bob, live_server.url)
        bobs_page = bobs.new_page()
        requested: list[str] = []
        bobs_page.on("request", lambda request: requested.append(request.url))
        bobs_page.goto(link)
        code = link.split("#", 1)[1]
        expect(bobs_page.get_by_label("Invitation code")).to_have_value(code)
        assert not any(code in url for url in requested)  # the fragment never left the browser
        bobs_page.get_by_role("button", name="Accept the invitation").click()
        expect(bobs_page.get_by_text("You joined team Crosses.")).to_be_visible()
        expect(bobs_page.locator("[data-members]")).to_contain_text("Bob")
        expect(bobs_page.locator("[data-members]")).to_contain_text("Alice")
    finally:
        bobs.close()

    page.goto(live_server.url + cup.get_absolute_url())
    expect(page.locator("[data-members]")).to_contain_text("Bob")
    # The deadline in the browser's time zone, named, the UTC text kept as its title.
    deadline = page.locator("[data-deadline] time")
    expect(deadline).to_have_attribute("data-local-time", "shown")
    expect(deadline).to_have_attribute("title", utc_text(cup))
    screenshot("bob-in-the-team")


def utc_text(cup: Competition) -> str:
    deadline = cup.deadline
    assert deadline is not None
    return deadline.strftime("%-d %b %Y, %H:%M") + " UTC"


def test_a_member_marks_a_revision_final_on_its_agents_page(
    live_server, page: Page, screenshot, cup, alice
):
    team = team_create(competition=cup, user=alice, name="Crosses")
    bot = CompetitorFactory(owner=alice, name="crosser", team=team, environment=cup.environment)
    first = RevisionFactory(competitor=bot, validated=True)
    RevisionFactory(competitor=bot, validated=True)
    sign_in(page.context, alice, live_server.url)

    page.goto(live_server.url + bot.get_absolute_url())
    expect(page.locator('[data-final="v2"]')).to_contain_text("plays the final")
    page.get_by_role("button", name="Mark v1 final").click()

    expect(page.get_by_text(f"{first} is marked final")).to_be_visible()
    expect(page.locator('[data-final="v1"]')).to_contain_text("marked final")
    expect(page.get_by_role("button", name="Unmark v1")).to_be_visible()
    expect(page.get_by_role("button", name="Mark v2 final")).to_be_visible()
    assert Revision.objects.get(pk=first.pk).marked_final_at is not None
    screenshot("marked")
    page.goto(live_server.url + cup.get_absolute_url())
    expect(page.locator("[data-finals]")).to_contain_text("marked final")


def test_a_link_opened_before_logging_in_still_joins_after_the_login(
    live_server, page: Page, screenshot, cup, alice, carol
):
    """The login's redirects drop the link's fragment: the tab keeps the code."""
    team = team_create(competition=cup, user=alice, name="Crosses")
    _, code = invitation_create(team=team, by=alice)

    page.goto(f"{live_server.url}/c/cup/join/#{code}")
    page.locator("[data-join-login]").get_by_role("link", name="Log in").click()
    page.get_by_label("E-mail address").fill(carol.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Log in").click()

    expect(page).to_have_url(f"{live_server.url}/c/cup/join/")
    expect(page.get_by_label("Invitation code")).to_have_value(code)
    page.get_by_role("button", name="Accept the invitation").click()
    expect(page.get_by_text("You joined team Crosses.")).to_be_visible()
    expect(page.locator("[data-members]")).to_contain_text("Carol")
    screenshot("joined-after-login")
