"""Uploads kept in the database, content-addressed by SHA-256, so that every worker host
reads them: stored once per content, read back checked, gone with the last revision that
uses them; the media folder keeps its copy as before."""

from __future__ import annotations

import hashlib

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from core.models import Revision, StepStatus, UploadContent
from core.services.revisions import revision_delete, revision_rebuild
from core.services.uploads import UploadUnavailable, revision_upload_read, upload_content_release
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

RANDOM = PLAYERS / "tic_tac_toe" / "random_player.py"


def test_it_stores_each_upload_in_the_database_once_per_content():
    owner = make_user()
    first = upload(owner, "tic_tac_toe", "rando", RANDOM)
    second = upload(owner, "tic_tac_toe", "rando", RANDOM)

    digest = hashlib.sha256(RANDOM.read_bytes()).hexdigest()
    assert first.upload_id == second.upload_id == first.sha256 == digest
    stored = UploadContent.objects.get()
    assert bytes(stored.content) == RANDOM.read_bytes()
    assert stored.size == RANDOM.stat().st_size
    # The media folder keeps its copy, as before: the same bytes.
    assert first.source.read() == second.source.read() == RANDOM.read_bytes()


def test_it_reads_an_upload_back_from_the_database_only(settings, tmp_path):
    revision = upload(make_user(), "tic_tac_toe", "rando", RANDOM)
    settings.MEDIA_ROOT = tmp_path / "no-media-here"  # a worker host has none

    assert revision_upload_read(revision=revision) == RANDOM.read_bytes()
    assert revision_rebuild(revision=revision)
    revision.refresh_from_db()
    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert revision.is_valid


def test_it_refuses_damaged_bytes_saying_so():
    revision = upload(make_user(), "tic_tac_toe", "rando", RANDOM)
    damaged = b"print('not what was uploaded')\n"
    UploadContent.objects.filter(pk=revision.upload_id).update(content=damaged, size=len(damaged))

    with pytest.raises(UploadUnavailable, match="damaged: its SHA-256 is"):
        revision_upload_read(revision=revision)
    assert revision_rebuild(revision=revision)
    revision.refresh_from_db()
    assert revision.build_status == StepStatus.FAILED
    assert "upload it again" in revision.job("build").error


def test_it_says_when_a_revision_has_no_stored_upload():
    revision = upload(make_user(), "tic_tac_toe", "rando", RANDOM)
    Revision.objects.filter(pk=revision.pk).update(upload=None)
    revision.refresh_from_db()

    with pytest.raises(UploadUnavailable, match="not stored in the database"):
        revision_upload_read(revision=revision)


def test_the_database_refuses_a_revision_pointing_at_other_bytes():
    revision = upload(make_user(), "tic_tac_toe", "rando", RANDOM)
    other = UploadContent.objects.create(sha256="f" * 64, content=b"x", size=1)

    with pytest.raises(IntegrityError), transaction.atomic():
        Revision.objects.filter(pk=revision.pk).update(upload=other)


def test_the_database_refuses_a_size_that_is_not_the_contents():
    with pytest.raises(IntegrityError), transaction.atomic():
        UploadContent.objects.create(sha256="e" * 64, content=b"abc", size=4)


def test_it_keeps_the_bytes_while_a_revision_uses_them_and_deletes_them_with_the_last():
    owner = make_user()
    first = upload(owner, "tic_tac_toe", "first", RANDOM)
    second = upload(owner, "tic_tac_toe", "second", RANDOM)

    assert revision_delete(revision=first).erased
    assert UploadContent.objects.filter(pk=second.sha256).exists()
    assert not upload_content_release(sha256=second.sha256)  # second still uses them
    assert revision_delete(revision=second).erased
    assert not UploadContent.objects.exists()


def test_it_serves_a_download_from_the_database(client, settings, tmp_path):
    owner = make_user()
    revision = upload(owner, "tic_tac_toe", "rando", RANDOM, is_public=True)
    settings.MEDIA_ROOT = tmp_path / "elsewhere"
    url = reverse("revision_source", args=["tic_tac_toe", "rando", revision.version])

    response = client.get(url)

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == RANDOM.read_bytes()
    assert "attachment" in response["Content-Disposition"]
    UploadContent.objects.filter(pk=revision.sha256).update(content=b"?", size=1)
    assert client.get(url).status_code == 404
