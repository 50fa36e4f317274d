"""Pytest plugin: Playwright driving Debian's Chromium, for tests against ``live_server``.

Fixtures: ``browser`` (one Chromium for the whole run), ``page`` (a fresh context
per test: no cookies or storage shared between tests) and ``screenshot`` (saves the
page as ``test-artifacts/screenshots/<test name>-<label>.png``). A test that fails
with a ``page`` open also leaves ``<test name>-failure.png`` there.

We never download a browser (no ``playwright install``): Chromium comes from the
Debian package ``chromium``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.require import require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
# --no-sandbox: Chromium's own sandbox cannot run as root (CI); the pages are local. Names
# under the reserved .test domain lead to loopback: a site served by name (the compose
# stack's nginx, tests/deploy) is reached as a visitor reaches it.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--host-resolver-rules=MAP *.test 127.0.0.1",
]
SCREENSHOTS_DIR = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
#: How long a browser action or expectation waits before failing: a deadline only a
#: failure reaches. 15 s was missed on a loaded CI machine by an admin action's click
#: through nginx (2026-11-29), the page otherwise fine.
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require(
        CHROMIUM.exists(),
        "chromium is not installed (apt-get install chromium), so browser tests cannot run",
    )
    require(
        importlib.util.find_spec("playwright"),
        "playwright is not installed (scripts/setup.sh installs it)",
    )
    from playwright.sync_api import expect, sync_playwright

    # The page's default timeout covers its actions; assertions (``expect``) have their
    # own, five seconds unless set: too short for a page that waits on a worker.
    expect.set_options(timeout=TIMEOUT_MS)
    # Playwright's sync API runs an asyncio loop in this thread for as long as it is
    # alive, so Django sees a "running event loop" here and would refuse every ORM
    # call the tests make (SynchronousOnlyOperation). The calls are in fact
    # synchronous, from the main thread, and the live server answers in its own
    # threads: the guard does not apply. One browser a module, stopped at its end, so
    # that no loop is left running for the tests of other modules that the same test
    # process runs next (``async_to_sync`` refuses to run beside one, whatever the
    # guard says).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def screenshot(page: Page, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``screenshot("after-login")`` saves the current page and returns the file."""

    def take(label: str) -> Path:
        return save_screenshot(page, request.node.name, label)

    return take


def save_screenshot(page: Page, test_name: str, label: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{test_name}-{label}").strip("-")
    path = SCREENSHOTS_DIR / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        try:
            save_screenshot(page, item.name, "failure")
        except Exception as error:  # the page may be what broke
            report.sections.append(("screenshot", f"no failure screenshot: {error}"))
    return report
