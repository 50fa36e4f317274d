"""A duel's worker stores its public events for spectators while it plays, in batches,
and drops them once the duel (and so its replay) is stored."""

from __future__ import annotations

import json

import pytest
from django.db.models.signals import post_save

from core.models import DuelStatus, LiveEvent
from duel_runner.services import duel_play
from tests.factories import queued_duel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.live import assert_told_as_recorded

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


def test_it_stores_every_step_while_playing_and_drops_them_once_recorded(settings):
    # A batch per half second: this duel's 25 or so events take about 0.1 s on a quiet
    # machine and several times longer on a loaded one, where 0.05 s batches could hold
    # two events or fewer and fail the check below. What is left goes on close, at once.
    settings.ARENA_LIVE_FLUSH_SECONDS = 0.5
    owner = make_user()
    minimax = upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py")
    rando = upload(owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py")
    duel = queued_duel([minimax, rando], num_matches=2, seed=3)
    LiveEvent.objects.create(duel=duel, lines='{"type":"match","match":0,"seed":1}')  # stale
    stored: list[LiveEvent] = []

    def keep(sender: type, instance: LiveEvent, created: bool, **_: object) -> None:
        stored.append(instance)

    post_save.connect(keep, sender=LiveEvent)
    try:
        duel_play(duel_id=duel.pk)
    finally:
        post_save.disconnect(keep, sender=LiveEvent)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    events = [json.loads(line) for row in stored for line in row.lines.splitlines()]
    assert_told_as_recorded(events, duel.matches.order_by("index"))
    # Batches, not a write per move.
    assert len(stored) < len(events) / 2
    assert not LiveEvent.objects.filter(duel=duel).exists()
