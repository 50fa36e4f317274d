"""Fixtures for tests that run the real pipeline: upload, build, validation, duels (and a
stand-in for the worker that plays them, ``referee_when_queued``).

Import the fixtures into a test module (``from tests.pipeline import pipeline``).
"""

from __future__ import annotations

import contextlib
import io
import shutil
import stat
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from core.models import Competitor, Duel, DuelStatus, Environment, Revision, User
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create
from duel_runner.services import duel_play
from tests.support.docker import remove_revision_images
from tests.support.workers import wait_for

PLAYERS = Path(__file__).resolve().parents[1] / "example_players"


@pytest.fixture
def pipeline(settings, tmp_path) -> Iterator[None]:
    """Private folders for uploads, builds and sandboxes; environments imported, their
    standing competitions off (a test that plays one turns it on): the tournament
    manager would otherwise open a ladder beside the tournaments a test plays."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_BUILD_ROOT = tmp_path / "builds"
    # Sandbox users must be able to traverse the parents, so not under pytest's tmp_path.
    sandboxes = Path(tempfile.mkdtemp(prefix="arena-test-sandboxes-"))
    settings.ARENA_SANDBOX_ROOT = sandboxes
    environments_import()
    Environment.objects.update(standing_competition=False)
    yield
    shutil.rmtree(sandboxes, ignore_errors=True)
    # Builds in the docker sandbox (here or in a worker) made an image per revision.
    remove_revision_images()


def upload(
    owner: User,
    environment: str,
    name: str,
    content: bytes | Path,
    *,
    filename: str = "main.py",
    is_public: bool = True,
) -> Revision:
    """Upload as the owner, run the build and validation it triggers, return the revision."""
    if isinstance(content, Path):
        filename, content = content.name, content.read_bytes()
    with transaction.atomic():
        competitor: Competitor = competitor_get_or_create(
            owner=owner,
            environment=Environment.objects.get(name=environment),
            name=name,
            is_public=is_public,
        )
        revision = revision_create(
            competitor=competitor, uploaded_by=owner, filename=filename, content=content
        )
    revision.refresh_from_db()
    return revision


def make_user(email: str = "owner@example.org") -> User:
    return User.objects.create_user(
        email, "a long enough password", display_name=email.split("@")[0]
    )


def make_zip(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    """A zip archive of ``files`` (name to content) and of symbolic links (name to target)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def upload_zip(name: str, files: dict[str, bytes], environment: str = "tic_tac_toe") -> Revision:
    """``upload`` of a zip of ``files`` by a new user ``name``, as their competitor ``name``."""
    return upload(
        make_user(f"{name}@example.org"), environment, name, make_zip(files), filename="bot.zip"
    )


def stored_files(settings: Any, name: str = "rando") -> list[Path]:
    """Files stored for the competitor ``name`` of tic-tac-toe."""
    folder = Path(settings.MEDIA_ROOT) / "revisions" / "tic_tac_toe" / name
    return [path for path in folder.rglob("*") if path.is_file()]


def upload_validated(*args: Any, **kwargs: Any) -> Revision:
    """``upload`` where tasks go to a real broker (``celery_workers``, with a worker on
    the build and duels queues started): returns the revision once validated."""
    revision = upload(*args, **kwargs)
    wait_for(
        lambda: Revision.objects.validated().filter(pk=revision.pk).exists(),
        timeout=120,
        what=f"{revision} to be validated",
    )
    return Revision.objects.get(pk=revision.pk)


def referee_when_queued(stop: threading.Event) -> None:
    """Play each game a page starts, as a worker takes up a queued duel, until ``stop``."""
    try:
        while not stop.is_set():
            duel = Duel.objects.filter(status=DuelStatus.QUEUED).first()
            if duel is None:
                time.sleep(0.1)
                continue
            duel_play(duel_id=duel.pk)
    finally:
        connection.close()


@contextlib.contextmanager
def referees_playing(count: int = 1) -> Iterator[None]:
    """``count`` worker threads playing each queued game (``referee_when_queued``) while the
    block runs: with two, two games are played at once (each claims its own job)."""
    stop = threading.Event()
    threads = [threading.Thread(target=referee_when_queued, args=(stop,)) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
