"""The production path seen from a browser: an upload on the website is built and
validated in Docker by a real Celery worker (Redis broker, PostgreSQL), and the revision
page, which refreshes itself, shows the outcome with the logs."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from tests.factories import UserFactory
from tests.pipeline import PLAYERS, pipeline  # noqa: F401
from tests.support.docker import docker_base_image  # noqa: F401
from tests.support.journeys import log_in, pipeline_status

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline", "docker_base_image"),
]

#: Agents in containers, each build and validation seen through a page that refreshes
#: every few seconds: allow for a cold engine.
OUTCOME_TIMEOUT_MS = 120_000


def upload_from_the_environment_page(page: Page, base_url: str, name: str, path) -> None:
    page.goto(base_url + reverse("environment", args=["connect_four"]))
    page.get_by_label("Competitor name").fill(name)
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text(f"Uploaded {name} v1.")).to_be_visible()


def test_it_validates_an_upload_in_docker_through_a_worker_and_shows_it(
    live_server, page, screenshot, celery_workers, tmp_path
):
    celery_workers.start("docker-worker", ARENA_SANDBOX="docker")
    attendee = UserFactory(display_name="Dana")
    log_in(page, live_server.url, attendee)

    upload_from_the_environment_page(
        page, live_server.url, "deep-thought", PLAYERS / "connect_four" / "minimax.py"
    )
    expect(pipeline_status(page, "Build")).to_have_text("Succeeded", timeout=OUTCOME_TIMEOUT_MS)
    expect(pipeline_status(page, "Validation")).to_have_text(
        "Succeeded", timeout=OUTCOME_TIMEOUT_MS
    )
    page.get_by_text("Validation log").click()
    expect(page.get_by_text("self-play matches without a fault")).to_be_visible()
    screenshot("docker-validated")

    hostile = tmp_path / "hostile.py"
    hostile.write_text(
        "from arena_sdk import agent\n\n\n@agent\ndef play(turn):\n"
        "    import socket\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "    return turn.legal_actions[0]\n"
    )
    upload_from_the_environment_page(page, live_server.url, "phones-home", hostile)
    expect(pipeline_status(page, "Validation")).to_have_text("Failed", timeout=OUTCOME_TIMEOUT_MS)
    expect(page.get_by_text("validation failed: crash").first).to_be_visible()
    expect(page.get_by_text("Network is unreachable").first).to_be_visible()
    screenshot("docker-hostile-failed")
