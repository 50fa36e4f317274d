from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.jobs import dispatch
from core.models import Duel, Revision, StepStatus, User
from tests.factories import RevisionFactory

pytestmark = pytest.mark.django_db


def validation_duels(revision: Revision) -> int:
    return Duel.objects.of_revision(revision).filter(is_validation=True).count()


def test_it_rebuilds_and_revalidates(
    upload: Callable[..., Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
    alice: User,
) -> None:
    revision = upload(alice, "tic_tac_toe/random_player.py")
    assert revision.is_valid
    first_build = revision.job("build").ended_at
    assert first_build is not None

    with django_capture_on_commit_callbacks(execute=True):
        notes = run_action(Revision, "rebuild", [revision])

    revision.refresh_from_db()
    assert notes == ["Rebuilt and re-validated: 1"]
    assert revision.build_status == StepStatus.SUCCEEDED
    rebuilt = revision.job("build").ended_at
    assert rebuilt is not None and rebuilt > first_build
    assert revision.validation_status == StepStatus.SUCCEEDED
    assert validation_duels(revision) == 2


def test_it_revalidates_by_self_play(
    upload: Callable[..., Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
    alice: User,
) -> None:
    revision = upload(alice, "sum_to_10/optimal.py")

    with django_capture_on_commit_callbacks(execute=True):
        notes = run_action(Revision, "revalidate", [revision])

    revision.refresh_from_db()
    assert notes == ["Re-validated: 1"]
    assert revision.validation_status == StepStatus.SUCCEEDED
    assert validation_duels(revision) == 2


def test_it_says_why_a_revision_that_did_not_build_cannot_be_revalidated(
    upload: Callable[..., Revision],
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
    alice: User,
) -> None:
    broken = upload(alice, "sum_to_10/broken.py", content=b"def act(:\n")
    assert broken.build_status == StepStatus.FAILED

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        notes = run_action(Revision, "revalidate", [broken])

    assert notes == [f"{broken}: its build has not succeeded; rebuild it instead"]
    assert callbacks == []
    broken.refresh_from_db()
    assert broken.validation_status == StepStatus.NONE


def test_it_shows_the_build_error(
    upload: Callable[..., Revision], organizer_client: Client, alice: User
) -> None:
    broken = upload(alice, "sum_to_10/broken.py", content=b"def act(:\n")
    page = organizer_client.get(reverse("admin:core_revision_change", args=[broken.pk]))
    assert page.status_code == 200
    assert "syntax error" in page.content.decode()


def test_it_disables_and_enables(
    run_action: Callable[..., list[str]], alice: User, bob: User
) -> None:
    revisions = list(Revision.objects.all())

    run_action(Revision, "disable", revisions)
    assert Revision.objects.validated().count() == 0

    run_action(Revision, "enable", revisions)
    assert Revision.objects.validated().count() == 2


def test_it_starts_a_tournament_from_the_selected_revisions(
    organizer_client: Client, alice: User, bob: User
) -> None:
    revisions = list(Revision.objects.order_by("pk"))
    response = organizer_client.post(
        reverse("admin:core_revision_changelist"),
        {"action": "create_tournament", "_selected_action": [r.pk for r in revisions]},
    )
    assert response.status_code == 302
    url = urlparse(response["Location"])
    assert url.path == reverse("admin:core_tournament_add")
    query = parse_qs(url.query)
    assert query["environment"] == [str(revisions[0].competitor.environment_id)]
    assert sorted(query["participants"][0].split(",")) == sorted(str(r.pk) for r in revisions)
    form = organizer_client.get(response["Location"])
    assert form.status_code == 200
    chosen = form.context["adminform"].form["participants"].value()
    assert sorted(map(int, chosen)) == [revision.pk for revision in revisions]


def test_it_rebuilds_a_revision_whose_build_worker_died(
    run_action: Callable[..., list[str]], alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    monkeypatch.setattr(dispatch, "start", lambda path, **ids: started.append(path))
    stuck = RevisionFactory(
        build_status=StepStatus.RUNNING,
        build_attempts=1,
        build_lease_owner="dead-host:1",
        build_lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    building = RevisionFactory(
        build_status=StepStatus.RUNNING,
        build_attempts=1,
        build_lease_owner="live-host:1",
        build_lease_expires_at=timezone.now() + timedelta(seconds=50),
    )

    notes = run_action(Revision, "rebuild", [stuck, building])

    assert sorted(notes) == sorted(
        [
            f"{building}: not rebuilt: its build is already running; wait for it to finish",
            "Rebuilt and re-validated: 1",
        ]
    )
    stuck.refresh_from_db()
    assert (stuck.build_status, stuck.job("build").attempts, stuck.job("build").lease_owner) == (
        StepStatus.QUEUED,
        0,
        "",
    )
    assert started == ["builder.tasks.build_revision"]
