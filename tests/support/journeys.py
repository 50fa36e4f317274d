"""Steps of a person's journey in the browser (Playwright), shared by the browser tests and
the production stack's: logging in, registering, reading a step of the pipeline."""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import Locator, Page, expect

from core.models import User
from tests.factories import PASSWORD


def log_in(page: Page, base_url: str, user: User) -> None:
    page.goto(base_url + reverse("login"))
    page.get_by_label("E-mail address").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("navigation", name="Main")).to_contain_text(user.display_name)


def pipeline_status(page: Page, step: str) -> Locator:
    """The status cell of one step (Build, Validation...) in the revision page's table."""
    return (
        page.locator("tr", has=page.get_by_role("rowheader", name=step, exact=True))
        .locator("td")
        .first
    )


def fill_registration(page: Page, *, code: str, email: str, display_name: str) -> None:
    page.get_by_label("Invite code").fill(code)
    page.get_by_label("E-mail address").fill(email)
    page.get_by_label("Display name").fill(display_name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create my account").click()
