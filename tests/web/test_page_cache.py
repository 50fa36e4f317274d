"""The pages kept for anonymous visitors (``web.page_cache``): kept until a committed write
changes what they show, never one visitor's page shown to another.

Transactional tests: each write commits, as a worker's does in production (in a test's
open transaction the site reads no kept page: what its connection sees is not what
others see)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.jobs.lifecycle import job_reset, job_retry, jobs_cancel
from core.jobs.policies import Outcome
from core.jobs.worker import Done, job_claim, job_give_back, job_record, job_run
from core.models import Competitor, Duel, DuelStatus, Job, JobKind
from core.page_cache import UNWATCHED_TABLES, pages_version
from core.services.online import online_model_register
from duel_runner.services import duel_store_result
from referee.duel import run_duel
from tests.factories import (
    DuelFactory,
    EnvironmentFactory,
    LeaderboardEntryFactory,
    OrganizerFactory,
    TournamentFactory,
)
from tests.support.sandboxes import player
from tournament_manager.services.settlement import tournament_duel_finished

pytestmark = pytest.mark.django_db(transaction=True)


def _read(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, path
    return response.content.decode()


def _kept(client: Client, path: str) -> bool:
    """Whether the page came from the cache: reading it asked the database nothing."""
    with CaptureQueriesContext(connection) as queries:
        _read(client, path)
    return len(queries) == 0


def test_it_shows_a_stored_duel_on_the_next_read(client, alices_revision, bobs_revision, backend):
    tournament = TournamentFactory(
        environment=alices_revision.competitor.environment,
        is_public=True,
        status="running",
        matches_per_duel=2,
        duels_total=1,
    )
    alices_revision.competitor.is_public = True
    alices_revision.competitor.save()
    duel = DuelFactory(
        tournament=tournament, revisions=[alices_revision, bobs_revision], num_matches=2
    )
    pages = [tournament.get_absolute_url(), duel.get_absolute_url(), "/"]
    for path in pages:
        assert "Queued" in _read(client, path) or path == "/"
        assert _kept(client, path)  # the second read is the kept page

    result = run_duel(
        "tic_tac_toe",
        (player("tic_tac_toe/random_player.py"), player("tic_tac_toe/random_player.py")),
        backend=backend,
        matches=2,
        seed=7,
    )
    with transaction.atomic():  # as the duel's job records it
        duel_store_result(duel=duel, result=result, worker="a worker")
    tournament_duel_finished(duel=duel)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED
    duel_page = _read(client, duel.get_absolute_url())
    assert "Queued" not in duel_page and "/matches/1/" in duel_page
    assert "1 of 1 duel played" in _read(client, tournament.get_absolute_url())
    _read(client, f"/duels/{duel.pk}/matches/0/")


def test_any_committed_write_makes_the_kept_pages_stale(client, bobs_bot):
    path = bobs_bot.get_absolute_url()
    _read(client, path)
    assert _kept(client, path)
    before = pages_version()

    Competitor.objects.filter(pk=bobs_bot.pk).update(share_logs=True)  # no signal is sent

    assert pages_version() > before
    assert not _kept(client, path)
    assert "Shared: anyone may read" in _read(client, path)


def test_a_write_rolled_back_leaves_the_kept_pages(client, bobs_bot):
    path = bobs_bot.get_absolute_url()
    _read(client, path)
    before = pages_version()
    with pytest.raises(RuntimeError), transaction.atomic():
        Competitor.objects.filter(pk=bobs_bot.pk).update(name="renamed")
        raise RuntimeError("rolled back")
    assert pages_version() == before and _kept(client, path)


def test_writes_no_page_shows_leave_the_kept_pages(client, bobs_bot, duel):
    path = bobs_bot.get_absolute_url()
    _read(client, path)
    Job.objects.filter(duel=duel).update(lease_expires_at=timezone.now())  # a heartbeat
    assert _kept(client, path)


def test_signed_in_visitors_get_their_own_page(client, alice, alices_bot, bob, bobs_bot, organizer):
    """Alice's private bot shows on the leaderboard, linked for her and the organizers
    only; the anonymous visitors' kept page is never theirs, nor theirs anyone's."""
    for revision in (alices_bot.revisions.first(), bobs_bot.revisions.first()):
        LeaderboardEntryFactory(revision=revision)
    path = alices_bot.environment.get_absolute_url()
    mine = alices_bot.get_absolute_url()
    assert mine not in _read(client, path)
    assert _kept(client, path)

    as_alice, as_organizer = Client(), Client()
    as_alice.force_login(alice)
    as_organizer.force_login(organizer)
    assert "Your competitors here" in _read(as_alice, path)
    for visitor in (as_alice, as_organizer, as_alice):
        assert mine in _read(visitor, path)
    assert mine not in _read(client, path)


def test_an_online_models_page_is_never_kept(client, bob):
    competitor, _ = online_model_register(
        owner=bob,
        environment=EnvironmentFactory(name="connect_four"),
        name="remote",
        is_public=True,
    )
    path = competitor.get_absolute_url()
    _read(client, path)
    assert not _kept(client, path)


def test_the_kept_pages_read_no_table_whose_writes_leave_them(client, bobs_bot, duel, tournament):
    """Writes to ``UNWATCHED_TABLES`` do not make pages stale: no cached page may read them."""
    OrganizerFactory()
    paths = [
        "/",
        tournament.environment.get_absolute_url(),
        tournament.environment.get_absolute_url() + "leaderboard/",
        tournament.get_absolute_url(),
        duel.get_absolute_url(),
        f"/duels/{duel.pk}/matches/0/",
        bobs_bot.get_absolute_url(),
    ]
    with CaptureQueriesContext(connection) as queries:
        for path in paths:
            _read(client, path)
    read = " ".join(query["sql"] for query in queries)
    # A duel's job is read for its times and error, which change only with a watched
    # write (the next test); its heartbeats, which are not watched, change neither.
    unread = UNWATCHED_TABLES - {"core_job"}
    assert [table for table in unread if f'"{table}"' in read] == []


def test_every_change_of_a_jobs_shown_times_or_error_makes_the_pages_stale(sent):
    duel = DuelFactory(status=DuelStatus.QUEUED)

    def bumps(change: Callable[[], object]) -> bool:
        before = pages_version()
        change()
        return pages_version() > before

    claimed = job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="w:1")
    assert claimed is not None
    renewed = timezone.now() + timedelta(seconds=60)
    # A heartbeat shows on no page: it leaves the kept pages alone.
    assert not bumps(lambda: Job.objects.filter(pk=claimed.pk).update(lease_expires_at=renewed))
    assert bumps(lambda: job_give_back(job=claimed, worker="w:1", problem="no engine here"))

    def stored() -> Outcome:
        Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.SUCCEEDED, result="DRAW")
        return Outcome(True)

    assert bumps(lambda: job_claim(kind=JobKind.DUEL, subject_id=duel.pk, worker="w:2"))
    again = Job.objects.get(pk=claimed.pk)
    assert bumps(lambda: job_record(job=again, worker="w:2", store=stored))
    assert bumps(lambda: job_reset(kind=JobKind.DUEL, subject_id=duel.pk))

    def broken(_: object) -> Done:
        raise RuntimeError("a bug")

    def run_broken() -> None:
        with pytest.raises(RuntimeError):
            job_run(kind=JobKind.DUEL, subject_id=duel.pk, work=broken)

    assert bumps(run_broken)
    assert bumps(lambda: job_retry(job=Job.objects.get(pk=claimed.pk)))
    assert bumps(lambda: jobs_cancel(jobs=Job.objects.filter(pk=claimed.pk), why="not wanted"))
