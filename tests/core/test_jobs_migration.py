"""The migration that moves the lifecycle of duels and evaluations into jobs, on a
database made by the code before it: queued, running, failed and finished work of each
kind carried over with nothing lost (status, attempts, lease, re-sends, times, error),
validation work left to its revision, and undoing it puts every column back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.migrations import database_at, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0020_online_presence_is_the_stream")]
AFTER = [("core", "0022_duel_and_evaluation_lifecycle_in_jobs")]
LIFECYCLE = ("attempts", "lease_owner", "lease_expires_at", "resends", "resend_at")


@pytest.fixture
def before_jobs() -> Iterator[object]:
    with database_at(BEFORE) as apps:
        yield apps


def old_competitor(apps):
    """A competitor in tic-tac-toe, made with the models of the migration state ``apps``."""
    model = apps.get_model
    owner = model("core", "User").objects.create(email="old@example.org")
    environment = model("core", "Environment").objects.create(
        name="tic_tac_toe", title="Tic-tac-toe", description="", rules="", players=2,
        matches_per_duel=10, validation_matches=2, move_time=1, time_bank=10, startup_time=15,
        memory_mb=512, cpu_seconds=300,
    )  # fmt: skip
    return model("core", "Competitor").objects.create(
        owner=owner, environment=environment, name="old-bot"
    )


def states(now):
    """Work in every state, as the code before stored it."""
    return {
        "queued": {"status": "queued", "resends": 2, "resend_at": now + timedelta(minutes=5)},
        "running": {
            "status": "running",
            "attempts": 2,
            "lease_owner": "host:12",
            "lease_expires_at": now + timedelta(seconds=40),
            "resend_at": None,
            "started_at": now - timedelta(seconds=20),
        },
        "failed": {
            "status": "failed",
            "attempts": 3,
            "resend_at": None,
            "started_at": now - timedelta(minutes=3),
            "ended_at": now - timedelta(minutes=1),
            "error": "Not played: its worker stopped answering",
        },
        "succeeded": {
            "status": "succeeded",
            "attempts": 1,
            "resend_at": None,
            "started_at": now - timedelta(minutes=2),
            "ended_at": now - timedelta(minutes=1),
        },
    }


def test_it_carries_every_duel_and_evaluation_into_its_job_and_back(before_jobs):
    apps = before_jobs
    model = apps.get_model
    now = timezone.now().replace(microsecond=0)
    competitor = old_competitor(apps)
    environment = competitor.environment
    revision = model("core", "Revision").objects.create(
        competitor=competitor, version=1, source="x", filename="main.py", sha256="a" * 64,
        size=1, entry_point="main.py",
    )  # fmt: skip
    tournament = model("core", "Tournament").objects.create(
        environment=environment, name="Cup", matches_per_duel=2
    )
    work = states(now)
    duels, evaluations = {}, {}
    for name, fields in work.items():
        result = {"result": "DRAW"} if name == "succeeded" else {}
        duels[name] = model("core", "Duel").objects.create(
            tournament=tournament, revision_1=revision, revision_2=revision, num_matches=2,
            seed=1, **fields, **result,
        )  # fmt: skip
        competition = model("core", "ScoreCompetition").objects.create(
            environment=environment, name=f"{name} cup", episodes=2, seed=5
        )  # an evaluation per competition and revision
        scored = {"mean_return": 1.5} if name == "succeeded" else {}
        evaluations[name] = model("core", "Evaluation").objects.create(
            competition=competition, revision=revision, seeds=[1, 2], **fields, **scored
        )
    validation_duel = model("core", "Duel").objects.create(
        revision_1=revision, revision_2=revision, num_matches=2, seed=1, is_validation=True,
        status="succeeded", result="DRAW", attempts=1, resend_at=None,
    )  # fmt: skip

    apps = migrate(AFTER)

    Job = apps.get_model("core", "Job")
    for kind, rows in (("duel", duels), ("evaluation", evaluations)):
        for name, row in rows.items():
            job = Job.objects.get(kind=kind, **{f"{kind}_id": row.pk})
            expected = {"attempts": 0, "lease_owner": "", "lease_expires_at": None, **work[name]}
            for field in (*LIFECYCLE, "status", "started_at", "ended_at"):
                if field in expected:
                    assert getattr(job, field) == expected[field], (kind, name, field)
            assert job.error == work[name].get("error", "")
            subject = apps.get_model("core", kind.capitalize()).objects.get(pk=row.pk)
            assert subject.status == work[name]["status"]  # the subject keeps its copy
    assert not Job.objects.filter(duel_id=validation_duel.pk).exists()
    assert Job.objects.count() == 2 * len(work)

    apps = migrate(BEFORE)

    for kind, rows in (("duel", duels), ("evaluation", evaluations)):
        for name, row in rows.items():
            restored = apps.get_model("core", kind.capitalize()).objects.get(pk=row.pk)
            for field in LIFECYCLE:
                assert getattr(restored, field) == getattr(row, field), (kind, name, field)


BEFORE_STEPS = [("core", "0022_duel_and_evaluation_lifecycle_in_jobs")]
AFTER_STEPS = [("core", "0024_revision_step_columns_removed")]
STEP_FIELDS = ("status", "started_at", "ended_at", "error", "log")


@pytest.fixture
def before_step_jobs() -> Iterator[object]:
    with database_at(BEFORE_STEPS) as apps:
        yield apps


def revision_states(now):
    """Revisions at every point of their pipeline, as the code before stored them."""
    later = now + timedelta(minutes=5)
    built = {
        "build_status": "succeeded",
        "build_attempts": 1,
        "build_resend_at": None,
        "build_started_at": now - timedelta(minutes=9),
        "build_ended_at": now - timedelta(minutes=8),
        "build_log": "unpacked 1 file(s)",
    }
    return {
        "build queued": {"build_resends": 1, "build_resend_at": later},
        "build running": {
            "build_status": "running",
            "build_attempts": 2,
            "build_lease_owner": "host:7",
            "build_lease_expires_at": later,
            "build_resend_at": None,
            "build_started_at": now - timedelta(seconds=30),
        },
        "build failed": {
            "build_status": "failed",
            "build_attempts": 1,
            "build_resend_at": None,
            "build_error": "syntax error: main.py, line 1",
            "build_log": "build failed",
            "validation_status": "none",
        },
        "validation sent": {
            **built,
            "validation_status": "queued",
            "validation_resend_at": later,
            "validation_resends": 1,
        },
        # Sent when the build succeeded, as the code before did, but its time not kept.
        "validation unsent": {**built, "validation_status": "queued"},
        "publication dropped": {
            **built,
            "validation_status": "succeeded",
            "publication_log": "not published: its competitor is private",
        },
        "validation running": {
            **built,
            "validation_status": "running",
            "validation_attempts": 1,
            "validation_lease_owner": "host:8",
            "validation_lease_expires_at": later,
            "validation_started_at": now - timedelta(seconds=10),
        },
        "published": {
            **built,
            "validation_status": "succeeded",
            "validation_attempts": 1,
            "validation_log": "validated: 2 self-play matches",
            "publication_status": "succeeded",
            "publication_log": "pushed commit abc",
            "publication_started_at": now - timedelta(minutes=2),
            "publication_ended_at": now - timedelta(minutes=1),
        },
        "publication running": {
            **built,
            "validation_status": "succeeded",
            "publication_status": "running",
            "publication_started_at": now - timedelta(minutes=40),
        },
        "publication failed": {
            **built,
            "validation_status": "succeeded",
            "publication_status": "failed",
            "publication_error": "cannot reach the publication repository",
        },
    }


def test_it_carries_every_revision_step_into_its_job_and_back(before_step_jobs):
    apps = before_step_jobs
    model = apps.get_model
    now = timezone.now().replace(microsecond=0)
    competitor = old_competitor(apps)
    work = revision_states(now)
    revisions = {}
    for version, (name, fields) in enumerate(work.items(), start=1):
        revisions[name] = model("core", "Revision").objects.create(
            competitor=competitor, version=version, source="x", filename="main.py",
            sha256="a" * 64, size=1, entry_point="main.py", **fields,
        )  # fmt: skip

    apps = migrate(AFTER_STEPS)

    Job = apps.get_model("core", "Job")
    Revision = apps.get_model("core", "Revision")
    for name, old in revisions.items():
        revision = Revision.objects.get(pk=old.pk)
        for step in ("build", "validation", "publication"):
            status = getattr(old, f"{step}_status")
            assert getattr(revision, f"{step}_status") == status, (name, step)
            job = Job.objects.filter(kind=step, revision_id=old.pk).first()
            if status == "none" and not getattr(old, f"{step}_log"):
                assert job is None, (name, step)
                continue
            assert job is not None, (name, step)
            for field in STEP_FIELDS:
                expected = getattr(old, f"{step}_{field}")
                if field == "status" and expected == "none":
                    expected = "cancelled"  # asked for, then dropped: its log kept
                assert getattr(job, field) == expected, (name, step, field)
            if name == "validation unsent" and step == "validation":
                assert job.resend_at is not None  # the watchdog sends it
            elif step != "publication":
                for field in LIFECYCLE:
                    expected = getattr(old, f"{step}_{field}")
                    assert getattr(job, field) == expected, (name, step, field)
    # A publication had no lease: a running one's runs out at the old task's time limit.
    running = Job.objects.get(kind="publication", revision_id=revisions["publication running"].pk)
    assert running.lease_expires_at == now - timedelta(minutes=40) + timedelta(minutes=31)
    # A validation waiting for its build is not sent until the build succeeds.
    waiting = Job.objects.get(kind="validation", revision_id=revisions["build queued"].pk)
    assert (waiting.status, waiting.resend_at) == ("queued", None)

    apps = migrate(BEFORE_STEPS)

    Revision = apps.get_model("core", "Revision")
    for name, old in revisions.items():
        restored = Revision.objects.get(pk=old.pk)
        for step in ("build", "validation", "publication"):
            fields = STEP_FIELDS + (LIFECYCLE if step != "publication" else ())
            for field in fields:
                column = f"{step}_{field}"
                if (name, column) == ("validation unsent", "validation_resend_at"):
                    continue  # now due: the watchdog sends it
                assert getattr(restored, column) == getattr(old, column), (name, column)
    assert not apps.get_model("core", "Job").objects.filter(revision__isnull=False).exists()
