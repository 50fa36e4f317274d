"""Uploading agents from the environment and competitor pages."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Competitor, Environment, Revision, StepStatus
from tests.factories import CompetitorFactory, UserFactory
from tests.pipeline import PLAYERS, make_zip, pipeline, stored_files  # noqa: F401
from tests.support.responses import text

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pipeline")]

RANDOM_PLAYER = (PLAYERS / "tic_tac_toe" / "random_player.py").read_bytes()
ENVIRONMENT_URL = reverse("environment", args=["tic_tac_toe"])


def submit(client, *, name: str = "rando", filename: str, content: bytes, url=ENVIRONMENT_URL):
    return client.post(
        url,
        {"name": name, "is_public": "on", "file": SimpleUploadedFile(filename, content)},
    )


def test_it_builds_and_validates_an_upload_then_numbers_the_next_one(
    alice_client, alice, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(alice_client, filename="random_player.py", content=RANDOM_PLAYER)

    revision = Revision.objects.get(competitor__name="rando")
    assert first.status_code == 302
    assert first.url == revision.get_absolute_url()
    assert revision.version == 1
    assert revision.competitor.owner == alice and revision.competitor.is_public
    assert revision.build_status == StepStatus.SUCCEEDED
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    page = alice_client.get(first.url)
    assert b"Validated" in page.content
    assert b"Replay match 0" in page.content

    with django_capture_on_commit_callbacks(execute=True):
        second = submit(alice_client, filename="random_player.py", content=RANDOM_PLAYER)

    assert second.status_code == 302
    assert second.url.endswith("/rando/v2/")
    revisions = Revision.objects.filter(competitor__name="rando").order_by("version")
    assert list(revisions.values_list("version", flat=True)) == [1, 2]
    assert len(stored_files(settings)) == 2


def test_it_uploads_a_new_revision_from_the_competitor_page(
    alice_client, alices_bot, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            alices_bot.get_absolute_url(),
            {"file": SimpleUploadedFile("agent.py", RANDOM_PLAYER)},
        )

    revision = alices_bot.revisions.get(version=2)
    assert response.status_code == 302
    assert response.url == revision.get_absolute_url()
    assert revision.is_valid


def test_it_fails_the_build_of_a_syntax_error_and_says_where(
    alice_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(alice_client, filename="broken.py", content=b"def act(:\n    pass\n")

    revision = Revision.objects.get(competitor__name="rando")
    assert revision.build_status == StepStatus.FAILED
    assert revision.validation_status == StepStatus.NONE
    page = alice_client.get(response.url)
    assert b"Build failed" in page.content
    assert b"syntax error" in page.content
    assert b"main.py, line 1" in page.content


def test_it_asks_an_anonymous_visitor_to_log_in_before_uploading(client):
    response = submit(client, filename="random_player.py", content=RANDOM_PLAYER)

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))
    assert not Competitor.objects.exists()


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("bot.exe", b"MZ", "Upload a single .py file or a .zip archive."),
        ("bot.zip", b"this is not a zip archive", "The file is not a valid zip archive."),
        ("bot.py", b"", "The submitted file is empty."),
        (
            "bot.zip",
            make_zip({"/etc/main.py": b"print(1)"}),
            "The archive holds an absolute path ('/etc/main.py')",
        ),
        (
            "bot.zip",
            make_zip({"main.py": b"x = 1", "../escape.py": b"x = 2"}),
            "The archive holds a path that leaves its folder ('../escape.py')",
        ),
        (
            "bot.zip",
            make_zip({"main.py": b"x = 1"}, symlinks={"secrets": "/etc/shadow"}),
            "The archive holds a symbolic link ('secrets')",
        ),
        (
            "bot.zip",
            make_zip({"helper.py": b"x = 1", "README.md": b"hello"}),
            "No entry point: put main.py or agent.py",
        ),
    ],
    ids=["not-py-or-zip", "not-a-zip", "empty", "absolute-path", "dot-dot", "symlink", "no-entry"],
)
def test_it_refuses_a_bad_upload_with_the_reason_and_stores_nothing(
    alice_client, settings, filename, content, message
):
    response = submit(alice_client, filename=filename, content=content)

    assert response.status_code == 400
    assert message in text(response)
    assert not Competitor.objects.filter(name="rando").exists()
    assert not Revision.objects.filter(competitor__name="rando").exists()
    assert stored_files(settings) == []


def test_it_refuses_a_file_over_the_size_cap(alice_client, settings):
    settings.ARENA_UPLOAD_MAX_BYTES = 1000

    response = submit(alice_client, filename="big.py", content=b"#" * 1001)

    assert response.status_code == 400
    assert "The file is 1,001 bytes; at most 1,000 are allowed." in text(response)
    assert not Competitor.objects.filter(name="rando").exists()
    assert stored_files(settings) == []


def test_it_refuses_a_zip_with_too_many_files(alice_client, settings):
    settings.ARENA_UPLOAD_MAX_FILES = 10
    files = {"main.py": b"x = 1", **{f"data/{n}.txt": b"" for n in range(20)}}

    response = submit(alice_client, filename="bot.zip", content=make_zip(files))

    assert response.status_code == 400
    assert "The archive holds 21 files; at most 10 are allowed." in text(response)
    assert not Competitor.objects.filter(name="rando").exists()
    assert stored_files(settings) == []


def test_it_refuses_a_zip_bomb_that_unpacks_over_the_cap(alice_client, settings):
    settings.ARENA_UPLOAD_MAX_UNPACKED_BYTES = 1_000_000
    bomb = make_zip({"main.py": b"x = 1", "zeros.bin": bytes(5_000_000)})
    assert len(bomb) < 10_000  # a small upload that would unpack to 5 MB

    response = submit(alice_client, filename="bot.zip", content=bomb)

    assert response.status_code == 400
    assert "The archive unpacks to 5,000,005 bytes; at most 1,000,000" in text(response)
    assert not Competitor.objects.filter(name="rando").exists()
    assert stored_files(settings) == []


def test_it_refuses_a_name_owned_by_someone_else(alice_client, settings):
    CompetitorFactory(owner=UserFactory(), name="taken")

    response = submit(alice_client, name="taken", filename="bot.py", content=RANDOM_PLAYER)

    assert response.status_code == 400
    assert "The name 'taken' is taken in Tic-tac-toe; choose another name." in text(response)
    assert Competitor.objects.get(name="taken").revisions.count() == 0
    assert stored_files(settings, "taken") == []


def test_it_refuses_an_upload_to_an_inactive_environment(alice_client, settings):
    Environment.objects.filter(name="tic_tac_toe").update(is_active=False)

    response = submit(alice_client, filename="bot.py", content=RANDOM_PLAYER)

    assert response.status_code == 400
    assert "Tic-tac-toe is closed to new uploads." in text(response)
    assert not Competitor.objects.filter(name="rando").exists()
    assert stored_files(settings) == []


def test_it_refuses_a_name_that_is_not_a_slug(alice_client, alice):
    response = submit(alice_client, name="no spaces!", filename="bot.py", content=RANDOM_PLAYER)

    assert response.status_code == 400
    assert "Enter a valid “slug”" in text(response)
    assert list(alice.competitors.values_list("name", flat=True)) == ["alices-bot"]


def test_it_lets_only_the_owner_upload_from_a_competitor_page(client, bob, bobs_bot, carol):
    client.force_login(carol)

    response = client.post(
        bobs_bot.get_absolute_url(), {"file": SimpleUploadedFile("agent.py", RANDOM_PLAYER)}
    )

    assert response.status_code == 404
    assert bobs_bot.revisions.count() == 1
