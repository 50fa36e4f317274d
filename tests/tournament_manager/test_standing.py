"""Each game's standing competition, with the real pipeline (in-process: uploads built and
validated, duels played by the process sandbox as the tournament manager starts them):
every validated revision is rated without anyone acting, organizers' tournaments come
first, and an organizer closes it or sets its pace in the admin."""

from __future__ import annotations

import datetime

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.utils import timezone

from core.jobs import dispatch
from core.models import (
    Duel,
    DuelStatus,
    Environment,
    Evaluation,
    LeaderboardEntry,
    ScoreCompetition,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from reads.scores import score_leaderboard
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tournament_manager.daemon import run_once
from tournament_manager.score_competitions import (
    score_competition_create,
    score_competition_start,
)
from tournament_manager.selectors import ladder_progress
from tournament_manager.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_launch,
    tournament_stop,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

SUM_TO_10 = PLAYERS / "sum_to_10"


def standing(name: str) -> Environment:
    """The game ``name`` with its standing competition on (the pipeline turns them off)."""
    Environment.objects.filter(name=name).update(standing_competition=True)
    return Environment.objects.get(name=name)


def standing_ladder(environment: Environment) -> Tournament:
    return Tournament.objects.get(environment=environment, is_standing=True)


def test_new_uploads_are_rated_in_the_standing_ladder_without_anyone_acting():
    game = standing("sum_to_10")
    owner = make_user()
    optimal = upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    rando = upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")

    run_once()  # opens the ladder; the two join; their first duel is played here

    ladder = standing_ladder(game)
    assert ladder.status == TournamentStatus.RUNNING and ladder.format == TournamentFormat.LADDER
    assert ladder.name == "Sum to 10 ladder"
    assert {p.revision_id for p in ladder.participants.all()} == {optimal.pk, rando.pk}
    played = ladder.duels.filter(status=DuelStatus.SUCCEEDED)
    assert played.exists()
    assert {revision.pk for revision in played.first().revisions()} == {optimal.pk, rando.pk}
    # One ladder a game: another pass opens none.
    run_once()
    assert Tournament.objects.filter(environment=game, format=TournamentFormat.LADDER).count() == 1
    # Only the games whose standing competition is on have one.
    assert not Tournament.objects.exclude(environment=game).exists()


def test_an_organizers_ladder_makes_the_standing_one_unneeded():
    game = standing("sum_to_10")
    with transaction.atomic():
        ladder = tournament_create(
            environment=game, name="The course's ladder", revisions=[], format="ladder"
        )
        tournament_launch(tournament=ladder)

    run_once()

    assert not Tournament.objects.filter(is_standing=True).exists()


def workers_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, a job sent waits in its queue: no worker takes it."""
    monkeypatch.setattr(dispatch, "start", lambda path, **ids: None)


def test_an_organizers_waiting_duels_come_first(settings, monkeypatch):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    game = standing("sum_to_10")
    owner = make_user()
    optimal = upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    rando = upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")
    workers_busy(monkeypatch)
    with transaction.atomic():
        organizers = tournament_create(
            environment=game, name="Round robin", revisions=[optimal, rando]
        )
    tournament_launch(tournament=organizers)
    assert organizers.duels.filter(status=DuelStatus.QUEUED).exists()

    run_once()

    ladder = standing_ladder(game)
    assert ladder.participants.count() == 2
    assert not ladder.duels.exists()  # the ladder waits while the round robin's duel waits
    tournament_cancel(tournament=organizers)
    run_once()
    assert ladder.duels.count() == 1


def test_an_organizer_sets_its_pace_and_closes_it(settings, monkeypatch):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    game = standing("sum_to_10")
    owner = make_user()
    for name in ("a", "b", "c", "d", "e"):
        upload(owner, "sum_to_10", name, SUM_TO_10 / "optimal.py")
    workers_busy(monkeypatch)  # duels stay queued: the pace is what is seen
    run_once()
    ladder = standing_ladder(game)
    assert ladder.duels.count() == 2

    ladder.duels.all().delete()
    Tournament.objects.filter(pk=ladder.pk).update(concurrent_duels=1, duels_total=0)
    run_once()
    assert ladder.duels.count() == 1

    # Stopped in the admin: the game's standing competition is closed, not opened again.
    tournament_stop(tournament=ladder)
    game.refresh_from_db()
    assert not game.standing_competition
    run_once()
    assert not Tournament.objects.filter(status=TournamentStatus.RUNNING).exists()
    # Ticked again: a new one opens.
    standing("sum_to_10")
    run_once()
    assert Tournament.objects.get(is_standing=True, status=TournamentStatus.RUNNING)


def test_unticked_in_the_admin_its_ladder_stops_and_keeps_its_history():
    game = standing("sum_to_10")
    owner = make_user()
    upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")
    run_once()
    ladder = standing_ladder(game)
    played = ladder.duels.filter(status=DuelStatus.SUCCEEDED).count()

    Environment.objects.filter(pk=game.pk).update(standing_competition=False)
    run_once()

    ladder.refresh_from_db()
    assert ladder.status == TournamentStatus.COMPLETED
    assert ladder.duels.filter(status=DuelStatus.SUCCEEDED).count() == played >= 1


def test_a_one_player_games_uploads_are_scored_by_themselves_newest_shown(client):
    game = standing("cartpole")
    owner = make_user()
    constant = upload(owner, "cartpole", "steady", PLAYERS / "cartpole" / "constant.py")

    run_once()  # opens the score competition and queues the evaluation, played here

    competition = ScoreCompetition.objects.get(environment=game, is_standing=True)
    assert competition.started_at is not None
    [evaluation] = competition.evaluations.all()
    assert evaluation.revision_id == constant.pk
    assert evaluation.status == DuelStatus.SUCCEEDED
    run_once()
    assert competition.evaluations.count() == 1  # evaluated once

    better = upload(owner, "cartpole", "steady", PLAYERS / "cartpole" / "balancer.py")
    run_once()

    assert Evaluation.objects.filter(competition=competition, revision=better).exists()
    [row] = score_leaderboard(user=AnonymousUser(), competition=competition)
    assert row.evaluation.revision_id == better.pk and row.rank == 1
    # Its page says where it stands.
    page = client.get(better.competitor.get_absolute_url()).content.decode()
    line = page[page.index("data-score-progress") :]
    assert "CartPole scores</a>: place 1, mean return" in line[: line.index("</div>")]


def test_an_organizers_waiting_evaluations_come_before_a_one_player_games_scores(monkeypatch):
    game = standing("cartpole")
    owner = make_user()
    steady = upload(owner, "cartpole", "steady", PLAYERS / "cartpole" / "constant.py")
    workers_busy(monkeypatch)
    organizers = score_competition_create(
        environment=game, name="Course scores", episodes=3, created_by=owner
    )
    [waiting] = score_competition_start(competition=organizers)

    run_once()

    standing_scores = ScoreCompetition.objects.get(environment=game, is_standing=True)
    assert not standing_scores.evaluations.exists()  # it waits while the organizer's waits
    Evaluation.objects.filter(pk=waiting.pk).update(status=DuelStatus.CANCELLED)
    run_once()
    [evaluation] = standing_scores.evaluations.all()
    assert evaluation.revision_id == steady.pk


def test_an_agents_page_shows_its_progress_in_the_standing_ladder(client, monkeypatch):
    standing("sum_to_10")
    owner = make_user()
    optimal = upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")
    run_once()  # a duel of two matches, played
    workers_busy(monkeypatch)
    run_once()  # the next one, waiting for a worker

    page = client.get(optimal.competitor.get_absolute_url()).content.decode()

    assert "In <a" in page and "Sum to 10 ladder</a>: 2 rated matches" in page
    assert "next duel queued, waiting for a worker" in page
    # The API says the same.
    detail = client.get("/api/v1/competitors/sum_to_10/optimal").json()
    assert detail["ladder"] == {
        "tournament": standing_ladder(optimal.competitor.environment).pk,
        "name": "Sum to 10 ladder",
        "rated_matches": 2,
        "next_duel": "queued, waiting for a worker",
    }
    # Its history: both duels, the latest first, each linking its duel (and so its replays).
    history = page[page.index("data-competitor-duels") :]
    played, waiting = ladder_duels = list(
        standing_ladder(optimal.competitor.environment).duels.order_by("pk")
    )
    assert history.index(f"#{waiting.pk}</a>") < history.index(f"#{played.pk}</a>")
    assert all(duel.get_absolute_url() in history for duel in ladder_duels)
    # The played duel's matches, each marked from its side (won, drawn or lost) and
    # linking its replay.
    for match in played.matches.all():
        assert f'<a href="{match.get_absolute_url()}" class="mark badge-' in history
        seat = 0 if played.players()[0].revision_id == optimal.pk else 1
        own, other = match.scores[seat], match.scores[1 - seat]
        said = "won" if own > other else "lost" if own < other else "drawn"
        assert f'title="Match {match.index + 1}: {said}"' in history


def test_an_idle_entry_is_told_its_place_and_when_it_plays_next_from_the_ladders_pace(client):
    game = standing("sum_to_10")
    owner = make_user()
    optimal = upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")
    run_once()
    run_once()  # two duels played, none waiting
    ladder = standing_ladder(game)
    first, second = ladder.duels.order_by("pk")
    # The ladder's pace: a duel a minute (two entries, two seats a duel: each plays one).
    now = timezone.now()
    Duel.objects.filter(pk=first.pk).update(ended_at=now - datetime.timedelta(minutes=1))
    Duel.objects.filter(pk=second.pk).update(ended_at=now)
    assert ladder_progress(optimal.pk, ladder.pk).next_duel == "in about a minute"
    Duel.objects.filter(pk=first.pk).update(ended_at=now - datetime.timedelta(minutes=20))
    assert ladder_progress(optimal.pk, ladder.pk).next_duel == "in about 20 minutes"
    # Its place, once its rank is known: the range the leaderboard gives.
    LeaderboardEntry.objects.filter(competitor=optimal.competitor).update(
        rank=1, rank_best=1, rank_worst=2
    )

    page = client.get(optimal.competitor.get_absolute_url()).content.decode()

    line = page[page.index("data-ladder-progress") :]
    line = line[: line.index("</div>")]
    assert "Sum to 10 ladder</a>: " in line
    assert " rated matches, place 1 to 2, next duel in about 20 minutes" in line


def test_it_rests_once_its_entries_have_played_their_duels_and_wakes_for_a_newcomer(settings):
    settings.ARENA_STANDING_LADDER_DUELS = 1
    game = standing("sum_to_10")
    owner = make_user()
    upload(owner, "sum_to_10", "optimal", SUM_TO_10 / "optimal.py")
    upload(owner, "sum_to_10", "rando", SUM_TO_10 / "random_player.py")
    run_once()
    ladder = standing_ladder(game)
    assert ladder.duels.count() == 1

    run_once()
    run_once()
    assert ladder.duels.count() == 1  # both settled: an idle site costs nothing
    # Its page says so, rather than promising a duel from the ladder's old pace.
    resting = ladder_progress(ladder.participants.first().revision_id, ladder.pk)
    assert resting.next_duel == (
        "when a new agent or version joins: it has played its 1 duels, "
        "and the ladder rests until then"
    )

    newcomer = upload(owner, "sum_to_10", "newcomer", SUM_TO_10 / "random_player.py")
    run_once()
    assert ladder.duels.count() == 2
    assert ladder.duels.of_revision(newcomer).count() == 1
