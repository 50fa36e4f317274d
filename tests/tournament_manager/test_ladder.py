"""A continuous ladder with the real pipeline (in-process): uploads built and validated,
duels played by the process sandbox as the tournament manager starts them."""

from __future__ import annotations

import pytest
from django.db import transaction

from core.models import DuelStatus, Environment, Rating, TournamentFormat, TournamentStatus
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tournament_manager.daemon import run_once
from tournament_manager.services.tournaments import (
    tournament_create,
    tournament_launch,
    tournament_stop,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


def test_a_ladder_absorbs_a_new_upload_and_replaces_the_old_revision(settings):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    owner = make_user()
    optimal = upload(owner, "sum_to_10", "optimal", PLAYERS / "sum_to_10" / "optimal.py")
    rando = upload(owner, "sum_to_10", "rando", PLAYERS / "sum_to_10" / "random_player.py")
    with transaction.atomic():
        ladder = tournament_create(
            environment=Environment.objects.get(name="sum_to_10"),
            name="Ladder",
            revisions=[],
            format=TournamentFormat.LADDER,
            matches_per_duel=2,
        )
        tournament_launch(tournament=ladder)

    assert run_once()  # pairs the two; the duel is played in this process

    first = ladder.duels.get()
    assert first.status == DuelStatus.SUCCEEDED
    rated = Rating.objects.get(competitor=rando.competitor)
    assert rated.games == 2

    newer = upload(owner, "sum_to_10", "rando", PLAYERS / "sum_to_10" / "optimal.py")
    assert newer.competitor == rando.competitor and newer.version == 2
    assert run_once()

    entries = {p.revision_id: p for p in ladder.participants.all()}
    assert entries[rando.pk].withdrawn and not entries[newer.pk].withdrawn
    assert entries[rando.pk].rank == 3  # withdrawn: last
    second = ladder.duels.exclude(pk=first.pk).get()
    assert {second.revisions()[0].pk, second.revisions()[1].pk} == {optimal.pk, newer.pk}
    assert second.status == DuelStatus.SUCCEEDED
    # The competitor's rating went on from where the old revision left it.
    assert Rating.objects.get(competitor=rando.competitor).games == 4
    assert not ladder.duels.of_revision(rando).exclude(pk=first.pk).exists()

    tournament_stop(tournament=ladder)
    ladder.refresh_from_db()
    assert ladder.status == TournamentStatus.COMPLETED
    assert (ladder.duels_total, ladder.duels_done) == (2, 2)
