"""Uploading, listing and deleting one's submissions through the API: the same upload
service as the site, so the same checks, build and validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.models import (
    Competitor,
    Duel,
    Environment,
    Participant,
    Revision,
    StepStatus,
)
from tests.factories import DuelFactory, RevisionFactory
from tests.pipeline import PLAYERS, make_zip, pipeline, stored_files  # noqa: F401
from tests.support.responses import body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pipeline")]

RANDOM_PLAYER = (PLAYERS / "tic_tac_toe" / "random_player.py").read_bytes()
URL = "/api/v1/submissions"


def upload(client, headers, *, filename="agent.py", content=RANDOM_PLAYER, **fields):
    form = {"environment": "tic_tac_toe", "competitor": "rando", "is_public": "true", **fields}
    return client.post(URL, {**form, "file": SimpleUploadedFile(filename, content)}, **headers)


def nothing_stored(settings) -> bool:
    return not Competitor.objects.filter(name="rando").exists() and stored_files(settings) == []


def test_it_uploads_an_agent_that_is_then_built_and_validated_as_on_the_site(
    client, alice, bearer, settings, django_capture_on_commit_callbacks
):
    headers = bearer(alice, "submit")

    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, headers)

    assert response.status_code == 201, response.content
    created = body(response)
    assert (created["competitor"], created["version"], created["filename"]) == (
        "rando",
        1,
        "agent.py",
    )
    assert created["build"]["status"] == "queued"  # answered before the build starts
    revision = Revision.objects.get(pk=created["id"])
    assert revision.competitor.owner == alice and revision.competitor.is_public
    submission = body(client.get(f"{URL}/{revision.pk}", **headers))
    assert submission["build"]["status"] == "succeeded"
    assert submission["validation"]["status"] == "succeeded", submission["validation"]["error"]
    assert submission["is_valid"] is True
    assert submission["validation_duel"] is not None
    assert len(stored_files(settings)) == 1


def test_it_adds_a_revision_to_an_existing_competitor_of_ones_own(client, alice, bearer):
    headers = bearer(alice, "submit")

    response = upload(
        client,
        headers,
        competitor="alices-bot",
        is_public="true",
        filename="bot.zip",
        content=make_zip({"bot/main.py": RANDOM_PLAYER}),
    )

    assert response.status_code == 201, response.content
    assert body(response)["version"] == 2
    assert body(response)["entry_point"] == "main.py"
    assert Competitor.objects.get(name="alices-bot").is_public is False  # set at creation only


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("bot.exe", b"MZ", "Upload a single .py file or a .zip archive."),
        ("bot.zip", b"this is not a zip archive", "The file is not a valid zip archive."),
        ("bot.py", b"", "The file is empty."),
        ("bot.py", b"\xff\xfe not utf-8", "A .py file must be UTF-8 text."),
        (
            "bot.zip",
            make_zip({"/etc/main.py": b"print(1)"}),
            "The archive holds an absolute path ('/etc/main.py'); zip relative paths.",
        ),
        (
            "bot.zip",
            make_zip({"main.py": b"x = 1", "../escape.py": b"x = 2"}),
            "The archive holds a path that leaves its folder ('../escape.py').",
        ),
        (
            "bot.zip",
            make_zip({"main.py": b"x = 1"}, symlinks={"secrets": "/etc/shadow"}),
            "The archive holds a symbolic link ('secrets'); links are not allowed.",
        ),
        (
            "bot.zip",
            make_zip({"helper.py": b"x = 1"}),
            "No entry point: put main.py or agent.py (or an executable named 'agent') at the "
            "top of the archive.",
        ),
        (
            "bot.zip",
            make_zip({"agent": b"#!/bin/sh"}),
            "The entry point 'agent' is not executable; set its executable bit (chmod +x "
            "agent) before zipping.",
        ),
    ],
    ids=[
        "not-py-or-zip",
        "not-a-zip",
        "empty",
        "not-utf-8",
        "absolute-path",
        "dot-dot",
        "symlink",
        "no-entry",
        "not-executable",
    ],
)
def test_it_refuses_a_bad_upload_with_the_reason_and_stores_nothing(
    client, alice, bearer, settings, filename, content, message
):
    response = upload(client, bearer(alice, "submit"), filename=filename, content=content)

    assert response.status_code == 422
    assert body(response) == {
        "error": {"code": "upload_rejected", "message": message, "details": []}
    }
    assert nothing_stored(settings)


@pytest.mark.parametrize(
    ("setting", "value", "content", "message"),
    [
        (
            "ARENA_UPLOAD_MAX_FILES",
            10,
            make_zip({"main.py": b"x = 1", **{f"data/{n}.txt": b"" for n in range(20)}}),
            "The archive holds 21 files; at most 10 are allowed.",
        ),
        (
            "ARENA_UPLOAD_MAX_UNPACKED_BYTES",
            1_000_000,
            make_zip({"main.py": b"x = 1", "zeros.bin": bytes(5_000_000)}),
            "The archive unpacks to 5,000,005 bytes; at most 1,000,000 are allowed.",
        ),
    ],
    ids=["too-many-files", "zip-bomb"],
)
def test_it_refuses_an_archive_over_the_caps(
    client, alice, bearer, settings, setting, value, content, message
):
    setattr(settings, setting, value)

    response = upload(client, bearer(alice, "submit"), filename="bot.zip", content=content)

    assert response.status_code == 422
    assert body(response)["error"]["message"] == message
    assert nothing_stored(settings)


def test_it_refuses_a_file_over_the_size_cap_with_413(client, alice, bearer, settings):
    settings.ARENA_UPLOAD_MAX_BYTES = 1000

    response = upload(client, bearer(alice, "submit"), content=b"#" * 1001)

    assert response.status_code == 413
    assert body(response)["error"] == {
        "code": "too_large",
        "message": "The file is 1,001 bytes; at most 1,000 are allowed.",
        "details": [],
    }
    assert nothing_stored(settings)


def test_it_refuses_a_body_over_the_cap_before_reading_it(client, alice, bearer, settings):
    settings.ARENA_UPLOAD_MAX_BYTES = 1000

    response = upload(client, bearer(alice, "submit"), content=b"#" * 200_000)

    assert response.status_code == 413
    assert "at most 66,536 are allowed here" in body(response)["error"]["message"]
    assert nothing_stored(settings)


def test_it_refuses_a_name_another_user_has(client, alice, bob, bearer, settings):
    response = upload(client, bearer(alice, "submit"), competitor="bobs-bot")

    assert response.status_code == 400
    assert body(response)["error"] == {
        "code": "refused",
        "message": "The name 'bobs-bot' is taken in Tic-tac-toe; choose another name.",
        "details": [],
    }
    assert Competitor.objects.get(name="bobs-bot").revisions.count() == 1


def test_it_refuses_an_upload_to_a_closed_or_unknown_environment(client, alice, bearer, settings):
    headers = bearer(alice, "submit")
    Environment.objects.filter(name="tic_tac_toe").update(is_active=False)

    closed = upload(client, headers)
    unknown = upload(client, headers, environment="chess")

    assert closed.status_code == 422
    assert body(closed)["error"]["message"] == "Tic-tac-toe is closed to new uploads."
    assert unknown.status_code == 404
    assert nothing_stored(settings)


def test_it_names_each_invalid_field(client, alice, bearer, settings):
    headers = bearer(alice, "submit")

    bad_name = upload(client, headers, competitor="no spaces!")
    no_file = client.post(URL, {"environment": "tic_tac_toe", "competitor": "rando"}, **headers)

    assert bad_name.status_code == 422
    [detail] = body(bad_name)["error"]["details"]
    assert detail["location"] == ["form", "competitor"]
    assert no_file.status_code == 422
    assert ["file", "file"] in [d["location"] for d in body(no_file)["error"]["details"]]
    assert nothing_stored(settings)


def test_uploading_needs_a_token_with_the_submit_scope(client, alice, bearer, settings):
    anonymous = upload(client, {})
    reader = upload(client, bearer(alice, "read"))

    assert anonymous.status_code == 401
    assert reader.status_code == 403
    assert "lacks the scope(s) submit" in body(reader)["error"]["message"]
    assert nothing_stored(settings)


def test_it_lists_only_ones_own_submissions_newest_first(client, alice, bob, bearer):
    newer = RevisionFactory(competitor=alice.competitors.get(), build_status=StepStatus.FAILED)
    headers = bearer(alice, "submit")

    mine = body(client.get(URL, **headers))
    failed = body(client.get(f"{URL}?build_status=failed", **headers))
    elsewhere = body(client.get(f"{URL}?environment=connect_four", **headers))

    assert [(s["competitor"], s["version"]) for s in mine["items"]] == [
        ("alices-bot", 2),
        ("alices-bot", 1),
    ]
    assert [s["id"] for s in failed["items"]] == [newer.pk]
    assert elsewhere["count"] == 0
    assert client.get(URL, **bearer(alice, "read")).status_code == 403


def test_anothers_submission_is_a_404(client, alice, bobs_revision, bearer):
    headers = bearer(alice, "submit")

    assert client.get(f"{URL}/{bobs_revision.pk}", **headers).status_code == 404
    assert client.delete(f"{URL}/{bobs_revision.pk}", **headers).status_code == 404
    assert Revision.objects.filter(pk=bobs_revision.pk, is_disabled=False).exists()


def test_deleting_a_revision_that_never_played_erases_it_its_self_play_and_its_file(
    client, alice, bearer, settings, validation_duel, django_capture_on_commit_callbacks
):
    headers = bearer(alice, "submit")
    first = validation_duel.revisions()[0]
    second = RevisionFactory(competitor=first.competitor)
    files = [Path(first.source.path), Path(second.source.path)]
    assert all(path.exists() for path in files)

    # Files are removed once the deletion commits.
    with django_capture_on_commit_callbacks(execute=True):
        with_one_left = client.delete(f"{URL}/{second.pk}", **headers)
        last = client.delete(f"{URL}/{first.pk}", **headers)

    assert with_one_left.status_code == 200
    assert body(with_one_left) == {
        "outcome": "erased",
        "message": "Erased, with its validation duel and its uploaded file.",
        "submission": None,
    }
    assert body(last)["outcome"] == "erased"
    assert not Revision.objects.filter(pk__in=[first.pk, second.pk]).exists()
    assert not Duel.objects.filter(pk=validation_duel.pk).exists()
    # Its last revision gone, the competitor goes too, and its name is free again.
    assert not Competitor.objects.filter(name="alices-bot").exists()
    assert not any(path.exists() for path in files)


def test_deleting_a_revision_that_played_others_withdraws_it_and_keeps_its_games(
    client, alice, bearer, duel
):
    revision = duel.revisions()[0]

    response = client.delete(f"{URL}/{revision.pk}", **bearer(alice, "submit"))

    assert response.status_code == 200
    deletion = body(response)
    assert deletion["outcome"] == "withdrawn"
    assert deletion["message"].startswith(
        "Withdrawn rather than erased: it is entered in a tournament"
    )
    assert deletion["submission"]["is_disabled"] is True
    revision.refresh_from_db()
    assert revision.is_disabled
    assert Duel.objects.filter(pk=duel.pk).exists()
    assert duel.matches.count() == 1
    assert Participant.objects.filter(revision=revision).exists()


def test_deleting_a_revision_a_worker_is_building_withdraws_it(client, alice, bearer):
    building = RevisionFactory(competitor=alice.competitors.get(), build_status=StepStatus.RUNNING)

    response = client.delete(f"{URL}/{building.pk}", **bearer(alice, "submit"))

    assert body(response)["outcome"] == "withdrawn"
    assert "a worker is building, validating or publishing it" in body(response)["message"]
    assert Revision.objects.get(pk=building.pk).is_disabled


def test_deleting_a_revision_that_played_outside_a_tournament_withdraws_it(
    client, alice, bob, bearer
):
    revision = alice.competitors.get().revisions.get()
    DuelFactory(tournament=None, revisions=[revision, bob.competitors.get().revisions.get()])

    response = client.delete(f"{URL}/{revision.pk}", **bearer(alice, "submit"))

    assert body(response)["outcome"] == "withdrawn"
    assert "it played duels" in body(response)["message"]


def test_it_refuses_an_attendees_upload_where_agents_cannot_be_confined(
    client, alice, bearer, settings, monkeypatch
):
    from core.services import confinement
    from sandboxes.confinement import Confinement

    reason = "bubblewrap is not installed"
    monkeypatch.setattr(confinement, "probe", lambda: Confinement(None, reason=reason))

    refused = upload(client, bearer(alice, "submit"))

    assert refused.status_code == 422
    assert body(refused)["error"]["code"] == "upload_rejected"
    assert "accepts uploads from organizers only" in body(refused)["error"]["message"]
    assert nothing_stored(settings)
