"""A ladder pairs an online model only while its client holds its stream: presence is the
stream as the seat bus sees it, not when a gateway last wrote to the database. A model
whose stream has closed is never paired again, however recently it was seen."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.jobs import dispatch
from core.models import OnlineSeat, TournamentFormat
from core.services.online import online_model_register, online_queue_join, seat_bus
from tests.factories import (
    CompetitorFactory,
    EnvironmentFactory,
    RevisionFactory,
    TournamentFactory,
    UserFactory,
)
from tests.support.loops import run_apart
from tournament_manager.services.ladder import ladder_matchmake
from tournament_manager.services.tournaments import tournament_launch

pytestmark = pytest.mark.django_db


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The tasks the duels were handed to (nothing is played)."""
    tasks: list[tuple[str, int]] = []
    monkeypatch.setattr(dispatch, "start", lambda task, **ids: tasks.append((task, ids["duel_id"])))
    return tasks


def connection(seat: str, *, open: bool) -> None:
    """What the gateway tells the seat bus when a client's stream opens or closes."""
    bus = seat_bus()
    if open:
        run_apart(lambda: bus.connection_open(seat, "stream"))
    else:
        run_apart(lambda: bus.connection_close(seat, "stream"))


def test_a_queued_model_is_paired_only_while_its_stream_is_open(settings, started, finish):
    settings.ARENA_ONLINE_BUS_URL = ""  # this process's bus, as the embedded default's
    settings.ARENA_ONLINE_FILL_SECONDS = 0  # paired with a hosted agent at once
    environment = EnvironmentFactory()
    RevisionFactory(competitor=CompetitorFactory(environment=environment), validated=True)
    model, _ = online_model_register(owner=UserFactory(), environment=environment, name="net")
    ladder = tournament_launch(
        tournament=TournamentFactory(
            environment=environment, format=TournamentFormat.LADDER, matches_per_duel=2
        )
    )
    online_queue_join(competitor=model)
    # Seen a moment ago, as a gateway records it: it does not make the model present.
    OnlineSeat.objects.filter(competitor=model).update(last_seen_at=timezone.now())

    assert ladder_matchmake(tournament=ladder) == 0

    connection(model.seat, open=True)
    assert ladder_matchmake(tournament=ladder) == 1
    duel = ladder.duels.get()
    assert model.pk in {duel.revisions()[0].competitor_id, duel.revisions()[1].competitor_id}

    finish(duel)
    connection(model.seat, open=False)
    assert ladder_matchmake(tournament=ladder) == 0
    assert ladder.duels.count() == 1

    connection(model.seat, open=True)  # back: its absence was the only reason
    assert ladder_matchmake(tournament=ladder) == 1


def test_a_model_being_evaluated_in_a_score_competition_is_not_paired(settings, started):
    from core.models import DuelStatus, Evaluation
    from tests.factories import EvaluationFactory, ScoreCompetitionFactory

    settings.ARENA_ONLINE_BUS_URL = ""
    settings.ARENA_ONLINE_FILL_SECONDS = 0
    environment = EnvironmentFactory()
    RevisionFactory(competitor=CompetitorFactory(environment=environment), validated=True)
    model, _ = online_model_register(owner=UserFactory(), environment=environment, name="net")
    ladder = tournament_launch(
        tournament=TournamentFactory(
            environment=environment, format=TournamentFormat.LADDER, matches_per_duel=2
        )
    )
    online_queue_join(competitor=model)
    connection(model.seat, open=True)
    # Its seat is taken by an evaluation (of another game's competition, for the test).
    evaluation = EvaluationFactory(
        competition=ScoreCompetitionFactory(), revision=model.revisions.get()
    )

    assert ladder_matchmake(tournament=ladder) == 0

    Evaluation.objects.filter(pk=evaluation.pk).update(status=DuelStatus.FAILED)
    assert ladder_matchmake(tournament=ladder) == 1
