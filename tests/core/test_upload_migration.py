"""The migration that copies the uploads of existing revisions from the media folder into
the database: every good file copied once per content, bad ones named and left alone, the
media folder untouched, and undoing it loses nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.migrations import database_at, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0011_llm_key_reference_rule")]
AFTER = [("core", "0013_copy_uploads_into_database")]
GOOD = b"def agent(observation, configuration):\n    return 0\n"


def media_files() -> list[bytes]:
    return sorted(path.read_bytes() for path in Path(settings.MEDIA_ROOT).rglob("*.py"))


@pytest.fixture
def before_uploads_moved(settings, tmp_path) -> Iterator[object]:
    settings.MEDIA_ROOT = tmp_path / "media"
    with database_at(BEFORE) as apps:
        yield apps


def old_revision(apps, competitor, version: int, content: bytes | None, sha256: str):
    """A revision as the code before the migration stored it: its file in the media folder."""
    name = f"revisions/tic_tac_toe/{competitor.name}/v{version}/main.py"
    if content is not None:
        path = Path(settings.MEDIA_ROOT) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return apps.get_model("core", "Revision").objects.create(
        competitor=competitor,
        version=version,
        source=name,
        filename="main.py",
        sha256=sha256,
        size=len(content or b""),
        entry_point="main.py",
    )


def test_it_copies_each_good_upload_once_and_names_the_bad_ones(before_uploads_moved, capsys):
    apps = before_uploads_moved
    owner = apps.get_model("core", "User").objects.create(email="old@example.org")
    environment = apps.get_model("core", "Environment").objects.create(
        name="tic_tac_toe", title="Tic-tac-toe", description="", rules="", players=2,
        matches_per_duel=10, validation_matches=2, move_time=1, time_bank=10, startup_time=15,
        memory_mb=512, cpu_seconds=300,
    )  # fmt: skip
    competitor = apps.get_model("core", "Competitor").objects.create(
        owner=owner, environment=environment, name="old-bot"
    )
    digest = hashlib.sha256(GOOD).hexdigest()
    good = [old_revision(apps, competitor, version, GOOD, digest) for version in (1, 2)]
    missing = old_revision(apps, competitor, 3, None, "a" * 64)
    altered = old_revision(apps, competitor, 4, b"changed on disk\n", "b" * 64)
    online = apps.get_model("core", "Competitor").objects.create(
        owner=owner, environment=environment, name="online-bot", kind="online"
    )
    apps.get_model("core", "Revision").objects.create(
        competitor=online, version=1, filename="", sha256="", size=0, entry_point=""
    )
    media = media_files()

    apps = migrate(AFTER)

    revisions = apps.get_model("core", "Revision").objects
    [stored] = apps.get_model("core", "UploadContent").objects.all()
    assert (stored.sha256, bytes(stored.content), stored.size) == (digest, GOOD, len(GOOD))
    assert [revisions.get(pk=r.pk).upload_id for r in good] == [digest, digest]
    assert revisions.get(pk=missing.pk).upload_id is None
    assert revisions.get(pk=altered.pk).upload_id is None
    assert revisions.get(competitor_id=online.pk).upload_id is None
    said = capsys.readouterr().err
    assert f"revision {missing.pk} (v3)" in said and f"revision {altered.pk} (v4)" in said
    assert "not bbbbbbbbbbbb... as uploaded" in said
    assert "until its owner uploads it anew" in said
    # Nothing moved or deleted, and undoing it keeps every file.
    migrate(BEFORE)
    assert media_files() == media
