"""Tournaments made of factory rows, whose duels are started by nobody: ``dispatched``
records which duels were handed to the workers, and ``finish`` plays one on paper."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.jobs import dispatch
from core.models import Duel, DuelResult, DuelSeat, DuelStatus, Job, Tournament, TournamentFormat
from referee.results import ranks_from_scores
from tests.factories import ParticipantFactory, TournamentFactory
from tournament_manager.services.settlement import tournament_duel_finished

MakeTournament = Callable[..., Tournament]
Finish = Callable[..., Duel]


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The duel ids sent to ``play_duel``, each recorded when its transaction commits
    (from any thread); nothing is played."""
    started: list[int] = []
    lock = threading.Lock()

    def start(path: str, **ids: int) -> None:
        assert path == "duel_runner.tasks.play_duel"

        def record() -> None:
            with lock:
                started.append(ids["duel_id"])

        transaction.on_commit(record)

    monkeypatch.setattr(dispatch, "start", start)
    return started


@pytest.fixture
def make_tournament() -> MakeTournament:
    """``make_tournament(4, format=...)``: a draft with that many validated entrants."""

    def make(
        players: int, *, format: str = TournamentFormat.ROUND_ROBIN, **fields: object
    ) -> Tournament:
        tournament = TournamentFactory(format=format, matches_per_duel=2, **fields)
        for _ in range(players):
            ParticipantFactory(tournament=tournament)
        return tournament

    return make


@pytest.fixture
def finish() -> Finish:
    """``finish(duel, DuelResult.PLAYER_1_WIN, scores=(2, 0))``: record the duel as played
    (no matches) the way a worker does, and tell its tournament."""

    def finish(
        duel: Duel,
        result: str = DuelResult.PLAYER_1_WIN,
        *,
        scores: tuple[float, float] | None = None,
        failed: bool = False,
    ) -> Duel:
        if scores is None:
            points: dict[str, tuple[float, float]] = {
                DuelResult.PLAYER_1_WIN: (2, 0),
                DuelResult.PLAYER_2_WIN: (0, 2),
            }
            scores = points.get(result, (1, 1))
        now = timezone.now()
        status = DuelStatus.FAILED if failed else DuelStatus.SUCCEEDED
        times = {"started_at": now - timedelta(seconds=60), "ended_at": now}
        Duel.objects.filter(pk=duel.pk).update(
            status=status, result="" if failed else result, error="lost" if failed else ""
        )
        ranks = ranks_from_scores(list(scores))
        for number, (score, rank) in enumerate(zip(scores, ranks, strict=True), start=1):
            DuelSeat.objects.filter(duel=duel, number=number).update(
                score=0 if failed else score, rank=None if failed else rank
            )
        Job.objects.filter(duel=duel).update(status=status, attempts=1, resend_at=None, **times)
        duel.refresh_from_db()
        tournament_duel_finished(duel=duel)
        return duel

    return finish
