from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from core.jobs.worker import job_claim, job_heartbeat, worker_name
from core.models import (
    Duel,
    DuelStatus,
    Job,
    JobKind,
    JobStatus,
    MatchLog,
    RatingChange,
    Revision,
    StepStatus,
)
from core.services.revisions import revision_requeue
from duel_runner import services
from duel_runner.services import (
    duel_play,
    sandbox_backend_close,
)
from environments.registry import load_info
from referee.results import DuelResult
from tests.factories import queued_duel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tests.support.sandboxes import AGENTS
from tournament_manager.services.tournaments import tournament_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


def two_revisions():
    owner = make_user()
    return (
        upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload(owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py"),
    )


def test_it_keeps_the_validation_duel_with_replayable_matches():
    minimax, _ = two_revisions()
    duel = Duel.objects.of_revision(minimax).get(is_validation=True)

    assert duel.status == DuelStatus.SUCCEEDED
    assert duel.matches.count() == duel.num_matches == 2
    assert all(match.actions for match in duel.matches.all())


def test_it_plays_a_stored_duel_and_records_every_match():
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=4, seed=12)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.job.attempts == 1
    assert duel.job.status == DuelStatus.SUCCEEDED
    assert duel.result == "PLAYER_1_WIN" and duel.players()[0].wins == 4
    assert [m.first_player for m in duel.matches.order_by("index")] == [1, 2, 1, 2]
    assert duel.job.lease_owner == "" and duel.played.ended_at is not None
    assert duel.played_by == worker_name()  # kept: which machine played it


def test_it_lets_only_one_worker_claim_a_duel():
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)

    first = job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="one")
    second = job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="two")

    assert first is not None and first.lease_owner == "one"
    assert second is None


def test_it_hands_over_a_duel_whose_lease_expired():
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)
    job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="lost")
    Job.objects.filter(duel=duel).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    assert duel.job.attempts == 2
    assert duel.matches.count() == 2


def test_it_leaves_a_duel_whose_live_lease_another_worker_holds():
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)
    job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="busy-elsewhere")

    duel_play(duel_id=duel.pk)  # a message delivered twice: nothing is done

    duel.refresh_from_db()
    assert duel.status == DuelStatus.RUNNING and duel.job.attempts == 1
    assert duel.job.lease_owner == "busy-elsewhere" and duel.matches.count() == 0


def test_it_drops_the_result_of_a_worker_that_lost_its_lease(monkeypatch):
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)
    play = services._duel_result

    def taken_over_meanwhile(duel: Duel) -> DuelResult:
        # The worker stalled: its lease ran out and another took the duel over.
        Job.objects.filter(duel=duel).update(lease_owner="took-over")
        return play(duel)

    monkeypatch.setattr(services, "_duel_result", taken_over_meanwhile)

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.RUNNING and duel.matches.count() == 0
    assert duel.job.lease_owner == "took-over"


def test_it_keeps_renewing_the_lease_while_a_duel_runs(settings):
    settings.ARENA_DUEL_LEASE_SECONDS = 0.3
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)
    claimed = job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="me")
    assert claimed is not None
    first_expiry = claimed.lease_expires_at

    with job_heartbeat(job=claimed, worker="me"):
        # Renewed every third of the lease: wait for a renewal, however loaded the machine.
        while Job.objects.get(pk=claimed.pk).lease_expires_at == first_expiry:
            threading.Event().wait(0.05)

    assert Job.objects.get(pk=claimed.pk).lease_expires_at > first_expiry


def test_it_stores_what_each_agent_logged_at_each_move_with_its_match(client):
    owner = make_user()
    logger = upload(owner, "sum_to_10", "logger", AGENTS / "logs_each_move.py", is_public=False)
    rando = upload(owner, "sum_to_10", "rando", AGENTS / "random_agent.py")
    duel = queued_duel([logger, rando], num_matches=2, seed=5)

    duel_play(duel_id=duel.pk)

    first = duel.matches.get(index=0)
    [log] = MatchLog.objects.filter(match=first)
    # Its moves: those after the referee's opening (``referee.openings``).
    opening = load_info("sum_to_10").opening_moves
    own_steps = [
        step
        for step, actions in enumerate(first.actions)
        if actions[0] is not None and step >= opening
    ]
    step = own_steps[0]
    assert log.player == 1
    assert [move["step"] for move in log.moves] == own_steps
    assert log.moves[0]["log"] == (
        f"match 0 starts\nmatch 0 step {step}: thinking <b>&amp;</b>\n"
        f"chose {first.actions[step][0]}"
    )
    # The second match's first move carries the end of the first (written after its last
    # answer), then its own start.
    second = MatchLog.objects.get(match__duel=duel, match__index=1, player=1)
    assert second.moves[0]["log"].startswith("match 0 ends: ")
    # Its owner reads them beside the replay, escaped.
    url = first.get_absolute_url() + f"?step={step + 1}"
    client.force_login(owner)
    assert (
        f"match 0 step {step}: thinking &lt;b&gt;&amp;amp;&lt;/b&gt;"
        in client.get(url).content.decode()
    )


class WorkerKilled(BaseException):
    """The worker's process dying at this point (SIGKILL): nothing after it runs."""


def test_a_worker_killed_before_its_duel_is_rated_leaves_it_to_be_played_again(monkeypatch):
    # Found by bench/bench_soak.py: the duel was stored in one transaction and rated in
    # the next, so a worker killed between the two left it succeeded and never rated.
    minimax, rando = two_revisions()
    tournament = tournament_create(
        environment=minimax.competitor.environment,
        name="Killed while rating",
        revisions=[minimax, rando],
        matches_per_duel=2,
    )
    duel = queued_duel([minimax, rando], num_matches=2, seed=3, tournament=tournament)

    def killed(**_: object) -> None:
        raise WorkerKilled

    with monkeypatch.context() as patched:
        patched.setattr("tournament_manager.services.settlement.ratings_update_from_duel", killed)
        with pytest.raises(WorkerKilled):
            duel_play(duel_id=duel.pk)

    # Neither stored nor rated: the job is still the dead worker's, until its lease ends.
    duel.refresh_from_db()
    assert duel.status == DuelStatus.RUNNING and duel.job.status == JobStatus.RUNNING
    assert duel.matches.count() == 0
    assert not RatingChange.objects.filter(duel=duel).exists()
    Job.objects.filter(duel=duel).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.job.attempts == 2
    assert duel.matches.count() == 2
    assert RatingChange.objects.filter(duel=duel).count() == 2 * 2


@pytest.fixture
def lose_confinement(monkeypatch):
    """``lose_confinement()``: this worker cannot confine agents from now on (bubblewrap
    removed, say); its sandboxes are made again without it."""
    from sandboxes import confinement
    from sandboxes.confinement import Confinement

    def lose() -> None:
        sandbox_backend_close()
        lost = Confinement(None, reason="bubblewrap is not installed")
        monkeypatch.setattr(confinement, "probe", lambda: lost)
        monkeypatch.setattr("duel_runner.services.probe", lambda: lost)

    yield lose
    sandbox_backend_close()


def test_a_worker_that_cannot_confine_agents_plays_no_attendees_code(lose_confinement):
    # Uploaded and validated while the machine confined agents; then the worker cannot:
    # the duel is the platform's failure, unscored, and says why.
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=3)
    lose_confinement()

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.FAILED
    assert "cannot confine agents (bubblewrap is not installed)" in duel.reported_error
    assert duel.matches.count() == 0
    assert not RatingChange.objects.filter(duel=duel).exists()


def test_a_worker_that_cannot_confine_agents_still_plays_organizers_code(
    lose_confinement, organizer
):
    minimax, rando = two_revisions()
    Revision.objects.filter(pk__in=[minimax.pk, rando.pk]).update(uploaded_by=organizer)
    duel = queued_duel([minimax, rando], num_matches=2, seed=3)
    lose_confinement()

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.matches.count() == 2


def test_the_operator_may_let_an_unconfined_worker_play_everyones_code(lose_confinement, settings):
    minimax, rando = two_revisions()
    duel = queued_duel([minimax, rando], num_matches=2, seed=3)
    lose_confinement()
    settings.ARENA_ALLOW_UNCONFINED_AGENTS = True

    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED


def test_a_worker_that_cannot_confine_agents_gives_back_an_attendees_validation(
    lose_confinement,
):
    minimax, _ = two_revisions()
    lose_confinement()

    revision_requeue(revision=minimax, steps=("validation",))  # the worker runs it at once

    minimax.refresh_from_db()
    # Given back, to be tried again later by this or another worker: not failed.
    assert minimax.validation_status == StepStatus.QUEUED
    job = Job.objects.of(JobKind.VALIDATION, minimax.pk).get()
    assert "cannot confine agents" in job.error
