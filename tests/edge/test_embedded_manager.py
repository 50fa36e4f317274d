"""The embedded default's manager thread (``run_gateway --manager``) runs the watchdog's
pass with the tournament manager's: a job whose worker died is taken up again there too,
with no ``run_watchdog`` process."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import Job, JobKind, JobStatus
from edge.management.commands.run_gateway import Command
from tests.factories import RevisionFactory
from tests.support.processes import joined
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_manager_thread_takes_up_a_build_whose_worker_died(sent):
    revision = RevisionFactory()
    Job.objects.filter(kind=JobKind.BUILD, revision=revision).update(
        status=JobStatus.RUNNING,
        attempts=1,
        lease_owner="dead-host:1",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
        resend_at=None,
    )
    stopping = threading.Event()
    manager = threading.Thread(target=Command._manage, args=(stopping, 0.05), daemon=True)
    manager.start()
    try:
        wait_for(
            lambda: Job.objects.filter(
                kind=JobKind.BUILD, revision=revision, status=JobStatus.QUEUED
            ).exists(),
            timeout=30,
            what="the manager thread to queue the build again",
        )
    finally:
        stopping.set()
        joined(manager)
    assert ("builder.tasks.build_revision", revision.pk) in sent
