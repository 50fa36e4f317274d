"""An attendee uploads an agent that searches the host for the platform's data and for other
competitors' uploads: through the real upload, build, validation and a duel played by the
worker's code in the embedded default's sandbox, it finds nothing and plays normally; its
stored log (what its owner reads) says so."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from core.models import Duel, DuelStatus
from duel_runner.services import duel_play
from tests.factories import queued_duel
from tests.pipeline import make_user, pipeline, upload  # noqa: F401
from tests.support.sandboxes import AGENTS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline", "confined"),
]


def searcher_upload(secret: str, guesses: list[Path]) -> bytes:
    """The searching agent as one uploaded file: what the tests give it in its environment
    is written at its top instead."""
    told = {
        "HUNT_SECRET": secret,
        "HUNT_PATHS": ":".join(str(path) for path in guesses),
        "HUNT_PORTS": str(connection.settings_dict.get("PORT") or 5432),
    }
    source = (AGENTS / "searches_the_host.py").read_text()
    return f"import os\nos.environ.update({told!r})\n{source}".encode()


def test_an_uploaded_agent_that_searches_the_host_finds_nothing_and_plays(monkeypatch):
    secret = secrets.token_hex(12)
    monkeypatch.setenv("ARENA_TEST_REFEREE_SECRET", secret)
    victim_code = (AGENTS / "random_agent.py").read_text() + f"\n# canary {secret}\n"
    bob = make_user("bob@example.org")
    private = upload(bob, "tic_tac_toe", "bobs-private", victim_code.encode(), is_public=False)
    upload_folder = Path(private.source.path).parent
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        database_folder = Path(cursor.fetchone()[0])
    guesses = [
        Path(settings.MEDIA_ROOT),
        upload_folder,
        Path(private.source.path),
        Path(settings.ARENA_BUILD_ROOT),
        Path(settings.VAR_DIR),
        Path(settings.BASE_DIR),
        database_folder,
    ]
    alice = make_user("alice@example.org")
    searcher = upload(
        alice, "tic_tac_toe", "searcher", searcher_upload(secret, guesses), is_public=False
    )
    assert private.is_valid and searcher.is_valid, searcher.job("validation").log
    duel = queued_duel([searcher, private], num_matches=2, seed=4)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    searcher_seat, victim_seat = duel.players()
    assert searcher_seat.errors == victim_seat.errors == 0
    assert "search done" in searcher_seat.log
    assert "FOUND" not in searcher_seat.log, searcher_seat.log
    assert "searched writing" in searcher_seat.log
    # Its validation (self-play, the first time its code ran) found nothing either.
    validation = Duel.objects.of_revision(searcher).get(is_validation=True)
    assert all("FOUND" not in seat.log for seat in validation.players())
