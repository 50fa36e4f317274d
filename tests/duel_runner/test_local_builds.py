"""A host that lacks a revision's build makes it itself before playing, from the upload in
the database, once however many duels want it, off every clock; when it cannot, the duel
(or validation) goes back to the queue for another worker, and after its last attempt
fails as the platform's fault, never scored.

"Another host" here is an empty ``ARENA_BUILD_ROOT``: what a worker machine has before
its first duel of a revision (the process sandbox; the docker sandbox's images are in
``tests/builder/test_docker_build.py`` and ``tests/duel_runner/test_second_host.py``).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from core.jobs.local_builds import LocalBuildFailed, revision_host_lock, revisions_built_here
from core.jobs.worker import GIVE_BACK_SECONDS
from core.models import DuelStatus, RatingChange, Revision, StepStatus, UploadContent
from core.services.revisions import revision_revalidate
from duel_runner.services import duel_play
from duel_runner.validation import revision_validate
from tests.factories import queued_duel
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]


@pytest.fixture
def another_host(settings, tmp_path):
    """Two revisions built here, then a host with an empty build folder."""
    owner = make_user()
    revisions = (
        upload(owner, "connect_four", "minimax", PLAYERS / "connect_four" / "minimax.py"),
        upload(owner, "connect_four", "rando", PLAYERS / "connect_four" / "random_player.py"),
    )
    assert all(revision.is_valid for revision in revisions)
    settings.ARENA_BUILD_ROOT = tmp_path / "host-2-builds"
    return revisions


def damage(revision: Revision) -> None:
    UploadContent.objects.filter(pk=revision.upload_id).update(content=b"?", size=1)


def test_it_builds_a_revision_built_elsewhere_before_playing_it(another_host, caplog):
    minimax, rando = another_host
    duel = queued_duel([minimax, rando], num_matches=4, seed=3)

    with caplog.at_level(logging.INFO, logger="core.jobs.worker"):
        duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    assert duel.matches.count() == 4 and duel.job.attempts == 1
    assert duel.played_by and ":" in duel.played_by
    assert minimax.build_dir.is_dir() and rando.build_dir.is_dir()
    assert (minimax.build_dir / "main.py").read_bytes() == (
        PLAYERS / "connect_four" / "minimax.py"
    ).read_bytes()
    built = [r.getMessage() for r in caplog.records if "on this host in" in r.getMessage()]
    assert len(built) == 2 and all("before play" in line for line in built)
    # Built before the referee started: no agent was charged for it.
    assert [seat.errors for seat in duel.players()] == [0, 0]
    assert all(not match.faults for match in duel.matches.all())


def test_it_validates_a_revision_built_elsewhere():
    owner = make_user()
    revision = upload(owner, "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py")
    revision.build_dir.rename(revision.build_dir.with_name("elsewhere"))

    assert revision_revalidate(revision=revision)

    revision.refresh_from_db()
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert revision.build_dir.is_dir()


def test_it_builds_once_when_two_duels_want_it_at_the_same_moment(another_host, monkeypatch):
    minimax, _ = another_host
    from builder import services as builder_services

    builds = []
    real = builder_services.revision_build_here

    def slow_build(*, revision: Revision) -> None:
        builds.append(revision.pk)
        time.sleep(0.3)  # long enough for the other thread to arrive meanwhile
        real(revision=revision)

    monkeypatch.setattr(builder_services, "revision_build_here", slow_build)
    made: list[int] = []

    def play() -> None:
        try:
            with revisions_built_here([minimax]) as built:
                made.extend(build.revision.pk for build in built)
                assert minimax.build_dir.is_dir()
        finally:
            connection.close()  # the thread's own

    threads = [threading.Thread(target=play) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert builds == [minimax.pk] and made == [minimax.pk]


def test_the_builds_a_duel_plays_are_held_from_the_host_clean_up(another_host):
    minimax, rando = another_host

    with revisions_built_here([minimax, rando]):
        with revision_host_lock(minimax.pk, shared=False, timeout=0) as had:
            assert not had
        # Another duel of the same revisions runs beside it.
        with revisions_built_here([rando]) as built:
            assert built == []

    with revision_host_lock(minimax.pk, shared=False, timeout=0) as had:
        assert had


def test_it_gives_up_waiting_for_a_build_another_worker_holds(another_host, monkeypatch):
    minimax, _ = another_host
    monkeypatch.setattr("core.jobs.local_builds.lock_wait_seconds", lambda: 0.3)

    with (
        revision_host_lock(minimax.pk, shared=False),
        pytest.raises(LocalBuildFailed, match="stayed locked on this host"),
        revisions_built_here([minimax]),
    ):
        pass


def test_a_duel_whose_agent_cannot_be_built_here_goes_back_then_fails_unscored(
    another_host, settings
):
    minimax, rando = another_host
    damage(rando)
    duel = queued_duel([minimax, rando], num_matches=2, seed=1)

    before = timezone.now()
    duel_play(duel_id=duel.pk)

    duel.refresh_from_db()
    assert (duel.status, duel.job.attempts, duel.job.lease_owner) == (DuelStatus.QUEUED, 1, "")
    # The watchdog sends it again shortly, for any worker of any host.
    resend_in = (duel.job.resend_at - before).total_seconds()
    assert GIVE_BACK_SECONDS <= resend_in <= GIVE_BACK_SECONDS + 60
    assert "Attempt 1 of 3 did not finish (trying again later)" in duel.job.error
    assert "could not be built on this host" in duel.job.error and "damaged" in duel.job.error
    for _ in range(settings.ARENA_DUEL_MAX_ATTEMPTS - 1):
        duel_play(duel_id=duel.pk)
    duel.refresh_from_db()
    assert duel.status == DuelStatus.FAILED and duel.result == ""
    assert duel.job.attempts == settings.ARENA_DUEL_MAX_ATTEMPTS
    assert "not the agents' fault" in duel.reported_error
    assert duel.matches.count() == 0 and not RatingChange.objects.filter(duel=duel).exists()
    assert [seat.errors for seat in duel.players()] == [0, 0]


def test_a_validation_that_cannot_be_built_here_goes_back_then_fails_saying_whose_fault(
    another_host, settings
):
    _, rando = another_host
    damage(rando)

    assert revision_revalidate(revision=rando)  # run here, eagerly: given back

    rando.refresh_from_db()
    assert rando.validation_status == StepStatus.QUEUED and rando.job("validation").attempts == 1
    assert "could not be built on this host" in rando.job("validation").error
    for _ in range(settings.ARENA_REVISION_MAX_ATTEMPTS - 1):
        revision_validate(revision_id=rando.pk)
    rando.refresh_from_db()
    assert rando.validation_status == StepStatus.FAILED
    assert "not your upload's fault" in rando.job("validation").error


def test_a_build_folder_that_cannot_be_locked_is_the_platforms_failure(
    another_host, settings, tmp_path
):
    minimax, _ = another_host
    settings.ARENA_BUILD_ROOT = tmp_path / "not-a-folder"
    settings.ARENA_BUILD_ROOT.write_text("a file where the build folder should be")

    with (
        pytest.raises(LocalBuildFailed, match=r"cannot lock .* on this host"),
        revisions_built_here([minimax]),
    ):
        pass
