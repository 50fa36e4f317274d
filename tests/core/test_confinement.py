"""Where agents cannot be confined, Arena says so and refuses untrusted uploads, unless its
operator accepts them knowingly; nothing falls back in silence (``core.services.confinement``)."""

from __future__ import annotations

import html

import pytest
from django.core import checks
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Competitor
from core.services import confinement
from core.services.revisions import revision_upload
from core.services.uploads import UploadRejected
from sandboxes.confinement import Confinement
from tests.pipeline import PLAYERS, pipeline  # noqa: F401
from tests.support.require import require

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pipeline")]

RANDOM_PLAYER = (PLAYERS / "tic_tac_toe" / "random_player.py").read_bytes()
REASON = "bubblewrap is not installed, so agents could read every world-readable file"


@pytest.fixture
def unconfined(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without bubblewrap, for the process sandbox."""
    monkeypatch.setattr(confinement, "probe", lambda: Confinement(None, reason=REASON))


def upload(owner, name: str = "rando"):
    from core.models import Environment

    return revision_upload(
        owner=owner,
        environment=Environment.objects.get(name="tic_tac_toe"),
        competitor_name=name,
        is_public=False,
        filename="main.py",
        content=RANDOM_PLAYER,
    )


@pytest.mark.usefixtures("unconfined")
def test_an_unconfined_machine_refuses_an_attendees_upload_with_the_reason(carol):
    with pytest.raises(UploadRejected) as refused:
        upload(carol)

    assert "cannot confine agents yet" in refused.value.message
    assert "accepts uploads from organizers only" in refused.value.message
    assert not Competitor.objects.filter(name="rando").exists()


@pytest.mark.usefixtures("unconfined")
def test_an_organizer_may_still_upload_and_the_operator_may_accept_everyone(
    organizer, carol, settings
):
    assert upload(organizer, "organizers").competitor.owner == organizer

    settings.ARENA_ALLOW_UNCONFINED_AGENTS = True
    assert upload(carol).competitor.owner == carol


@pytest.mark.usefixtures("unconfined")
def test_the_site_gives_the_refusal(client, carol):
    client.force_login(carol)
    page = client.post(
        reverse("environment", args=["tic_tac_toe"]),
        {"name": "rando", "file": SimpleUploadedFile("main.py", RANDOM_PLAYER)},
    )

    assert page.status_code == 400
    assert "accepts uploads from organizers only" in html.unescape(page.content.decode())
    assert not Competitor.objects.filter(name="rando").exists()


@pytest.mark.usefixtures("unconfined")
def test_it_says_so_at_start_and_on_the_admins_home(client, organizer, settings):
    [warning] = [m for m in checks.run_checks() if m.id == "arena.W001"]
    client.force_login(organizer)
    home = html.unescape(client.get(reverse("admin:index")).content.decode())

    assert REASON in warning.msg and "refused" in warning.msg
    assert 'id="confinement-warning"' in home and REASON in home

    settings.ARENA_ALLOW_UNCONFINED_AGENTS = True
    [accepted] = [m for m in checks.run_checks() if m.id == "arena.W001"]
    assert "uploads from everyone are accepted" in accepted.msg


def test_a_confining_machine_says_nothing_and_takes_every_upload(client, carol, organizer):
    found = confinement.agents_confinement()
    require(found.confined, f"agents cannot be confined here: {found.reason}")
    client.force_login(organizer)

    assert [m for m in checks.run_checks() if m.id == "arena.W001"] == []
    assert "confinement-warning" not in client.get(reverse("admin:index")).content.decode()
    assert upload(carol).competitor.owner == carol


def test_the_docker_sandbox_always_confines(settings, monkeypatch):
    monkeypatch.setattr(confinement, "probe", lambda: Confinement(None, reason=REASON))
    settings.ARENA_SANDBOX = "docker"

    assert confinement.agents_confinement().confined
