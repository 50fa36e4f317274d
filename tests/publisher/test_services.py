"""The publisher pushes for real: a bare repository in the test's folder is the publication
repository, uploads are built and validated in this process, and what was published is read
back from a fresh clone of the bare repository."""

from __future__ import annotations

import html
import io
import subprocess
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from core.jobs.lifecycle import job_reset
from core.jobs.watchdog import jobs_recover
from core.models import (
    Competitor,
    Environment,
    Job,
    JobKind,
    JobStatus,
    Rating,
    Revision,
    StepStatus,
    User,
)
from core.services.publication import competitor_publish_latest
from publisher.git import Clone
from publisher.services import revision_publish
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("pipeline")]

CONNECT_FOUR = PLAYERS / "connect_four" / "random_player.py"
TIC_TAC_TOE = PLAYERS / "tic_tac_toe" / "random_player.py"


def git(*args: str, cwd: Path) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return completed.stdout


@pytest.fixture
def remote(settings, tmp_path: Path) -> Path:
    """An empty bare repository, configured as the publication repository."""
    bare = tmp_path / "published.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(bare), cwd=tmp_path)
    settings.ARENA_PUBLISH_REPOSITORY = str(bare)
    settings.ARENA_PUBLISH_BRANCH = "main"
    settings.ARENA_PUBLISH_WORKDIR = tmp_path / "publisher"
    return bare


def checkout(remote: Path, tmp_path: Path) -> Path:
    """A fresh clone of what was pushed."""
    destination = tmp_path / f"checkout-{len(list(tmp_path.glob('checkout-*')))}"
    git("clone", "--quiet", "--branch", "main", str(remote), str(destination), cwd=tmp_path)
    return destination


def subjects(remote: Path) -> list[str]:
    return git("log", "--format=%s", "main", cwd=remote).splitlines()


def files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()
    )


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def author(display_name: str, email: str = "ada@example.org") -> User:
    user = make_user(email)
    user.display_name = display_name
    user.save()
    return user


def queue_again(*revisions: Revision) -> None:
    """As a task handed the revision again would find it: queued (its message not sent
    here; the test runs the task)."""
    for revision in revisions:
        job_reset(kind=JobKind.PUBLICATION, subject_id=revision.pk, send=False)
        # As if its message had been sent.
        Job.objects.of(JobKind.PUBLICATION, revision.pk).update(resend_at=timezone.now())


def test_it_pushes_a_public_validated_revision_with_a_readme(remote, tmp_path):
    ada = author("Ada Lovelace")
    competitor = Competitor.objects.create(
        owner=ada,
        environment=Environment.objects.get(name="connect_four"),
        name="deep-thought",
        is_public=True,
    )
    Rating.objects.create(competitor=competitor, mu=27.5, sigma=2.5, games=12)

    revision = upload(ada, "connect_four", "deep-thought", CONNECT_FOUR)

    assert revision.validation_status == StepStatus.SUCCEEDED
    assert revision.publication_status == StepStatus.SUCCEEDED, revision.job("publication").error
    folder = checkout(remote, tmp_path) / "connect_four" / "deep-thought"
    assert files(folder) == ["README.md", "main.py"]
    assert (folder / "main.py").read_bytes() == CONNECT_FOUR.read_bytes()
    readme = (folder / "README.md").read_text()
    assert "# deep-thought" in readme
    assert "Connect Four (`connect_four`)" in readme
    assert "- Author: Ada Lovelace" in readme
    assert "- Version: v1" in readme
    assert revision.sha256 in readme
    assert "mu 27.50, sigma 2.50, mu - 3 sigma 20.00 (12 games" in readme
    assert subjects(remote) == ["connect_four/deep-thought v1"]
    message = git("log", "-1", "--format=%an <%ae>%n%B", "main", cwd=remote)
    assert message.startswith("Arena <arena@localhost>\n")
    assert f"Arena-Revision: {revision.pk} {revision.sha256}" in message
    assert "pushed commit" in revision.job("publication").log


def test_it_replaces_the_files_with_the_next_revision_in_one_commit(remote, tmp_path):
    ada = author("Ada Lovelace")
    first = upload(
        ada,
        "tic_tac_toe",
        "rando",
        zipped({"main.py": TIC_TAC_TOE.read_bytes(), "helpers/moves.py": b"MOVES = 9\n"}),
        filename="rando.zip",
    )
    assert files(checkout(remote, tmp_path) / "tic_tac_toe" / "rando") == [
        "README.md",
        "helpers/moves.py",
        "main.py",
    ]

    second = upload(ada, "tic_tac_toe", "rando", TIC_TAC_TOE.read_bytes() + b"# v2\n")

    assert first.publication_status == second.publication_status == StepStatus.SUCCEEDED
    folder = checkout(remote, tmp_path) / "tic_tac_toe" / "rando"
    assert files(folder) == ["README.md", "main.py"]
    assert (folder / "main.py").read_bytes().endswith(b"# v2\n")
    assert "- Version: v2" in (folder / "README.md").read_text()
    assert subjects(remote) == ["tic_tac_toe/rando v2", "tic_tac_toe/rando v1"]


def test_it_does_not_commit_a_revision_twice(remote, settings, tmp_path):
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    assert revision.publication_status == StepStatus.SUCCEEDED

    # Again, from another machine's work folder: only the remote's history can tell.
    settings.ARENA_PUBLISH_WORKDIR = tmp_path / "another-machine"
    queue_again(revision)
    revision_publish(revision_id=revision.pk)

    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.SUCCEEDED
    assert "published already as commit" in revision.job("publication").log
    assert subjects(remote) == ["tic_tac_toe/rando v1"]


def test_it_skips_files_over_the_cap_and_names_them_in_the_readme(remote, settings, tmp_path):
    settings.ARENA_PUBLISH_MAX_FILE_BYTES = 10_000
    content = zipped({"main.py": TIC_TAC_TOE.read_bytes(), "weights.bin": b"\x01" * 20_000})

    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "heavy", content, filename="heavy.zip")

    assert revision.publication_status == StepStatus.SUCCEEDED, revision.job("publication").error
    folder = checkout(remote, tmp_path) / "tic_tac_toe" / "heavy"
    assert files(folder) == ["README.md", "main.py"]
    readme = (folder / "README.md").read_text()
    assert "## Files not published" in readme
    assert "- `weights.bin` (20,000 bytes): over the size cap" in readme
    assert "10,000 bytes" in readme


def test_it_does_not_publish_a_private_competitor(remote):
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "secret", TIC_TAC_TOE, is_public=False)

    assert revision.validation_status == StepStatus.SUCCEEDED
    assert revision.publication_status == StepStatus.NONE
    assert git("for-each-ref", cwd=remote) == ""


def test_it_fails_clearly_when_the_repository_is_unreachable_and_the_page_says_so(
    remote, settings, tmp_path
):
    missing = tmp_path / "no-such-repository.git"
    settings.ARENA_PUBLISH_REPOSITORY = str(missing)
    ada = author("Ada Lovelace")

    revision = upload(ada, "tic_tac_toe", "rando", TIC_TAC_TOE)

    # Tried again later (the remote may be back), the error shown meanwhile.
    assert revision.publication_status == StepStatus.QUEUED
    assert revision.job("publication").error == (
        "Attempt 1 of 6 did not finish (trying again later): "
        f"cannot reach the publication repository {missing}: '{missing}' does not appear to "
        "be a git repository; check ARENA_PUBLISH_REPOSITORY and this worker's access to it"
    )
    assert "git ls-remote" in revision.job("publication").log
    client = Client()
    client.force_login(ada)
    page = html.unescape(client.get(revision.get_absolute_url()).content.decode())
    assert "Publication not done yet: trying again" in page
    assert revision.job("publication").error in page


def test_it_publishes_the_latest_validated_revision_when_a_competitor_is_made_public(
    remote, tmp_path, organizer
):
    ada = author("Ada Lovelace")
    first = upload(ada, "tic_tac_toe", "shy", TIC_TAC_TOE, is_public=False)
    second = upload(ada, "tic_tac_toe", "shy", TIC_TAC_TOE.read_bytes() + b"# v2\n")
    broken = upload(ada, "tic_tac_toe", "shy", b"def act(:\n")
    assert second.publication_status == StepStatus.NONE
    assert broken.build_status == StepStatus.FAILED

    client = Client()
    client.force_login(organizer)
    changelist = reverse("admin:core_competitor_changelist")
    response = client.post(
        changelist,
        {"action": "make_public", "_selected_action": [second.competitor_id]},
        follow=True,
    )

    notes = [str(message) for message in response.context["messages"]]
    assert notes == ["1 competitor(s) are public.", "Queued for publication: shy v2."]
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.publication_status == StepStatus.SUCCEEDED, second.job("publication").error
    assert first.publication_status == StepStatus.NONE
    folder = checkout(remote, tmp_path) / "tic_tac_toe" / "shy"
    assert "- Version: v2" in (folder / "README.md").read_text()
    assert subjects(remote) == ["tic_tac_toe/shy v2"]
    # Published already: making it public again queues nothing.
    assert competitor_publish_latest(competitor=second.competitor) is None


def test_an_owner_who_makes_a_competitor_public_on_its_page_has_it_published(remote):
    ada = author("Ada Lovelace")
    revision = upload(ada, "tic_tac_toe", "shy", TIC_TAC_TOE, is_public=False)
    assert revision.publication_status == StepStatus.NONE
    client = Client()
    client.force_login(ada)

    response = client.post(
        reverse("competitor_visibility", args=["tic_tac_toe", "shy"]), {"public": "1"}, follow=True
    )

    notes = [str(message) for message in response.context["messages"]]
    assert notes == ["shy is public: anyone may see it; shy v1 is queued for publication."]
    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.SUCCEEDED, revision.job("publication").error
    assert subjects(remote) == ["tic_tac_toe/shy v1"]


def test_it_pushes_both_revisions_when_another_publisher_pushed_in_between(
    remote, settings, tmp_path, monkeypatch
):
    settings.ARENA_PUBLISH_REPOSITORY = ""  # upload both first, publish them together below
    mine = upload(author("Ada Lovelace"), "tic_tac_toe", "mine", TIC_TAC_TOE)
    grace = author("Grace Hopper", "grace@example.org")
    theirs = upload(grace, "sum_to_10", "theirs", PLAYERS / "sum_to_10" / "random_player.py")
    settings.ARENA_PUBLISH_REPOSITORY = str(remote)
    queue_again(mine, theirs)
    real_push = Clone.push
    interleaved: list[object] = []

    def push_after_another_publisher(clone: Clone) -> bool:
        # Between our fetch and our push, a worker on another machine pushes its revision.
        if not interleaved:
            interleaved.append(theirs)
            with override_settings(ARENA_PUBLISH_WORKDIR=tmp_path / "another-machine"):
                revision_publish(revision_id=theirs.pk)
        return real_push(clone)

    monkeypatch.setattr(Clone, "push", push_after_another_publisher)
    revision_publish(revision_id=mine.pk)

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert theirs.publication_status == StepStatus.SUCCEEDED, theirs.job("publication").error
    assert mine.publication_status == StepStatus.SUCCEEDED, mine.job("publication").error
    assert "the branch moved on" in mine.job("publication").log
    assert subjects(remote) == ["tic_tac_toe/mine v1", "sum_to_10/theirs v1"]
    published = checkout(remote, tmp_path)
    assert (published / "tic_tac_toe" / "mine" / "main.py").is_file()
    assert (published / "sum_to_10" / "theirs" / "main.py").is_file()


def test_it_does_not_overwrite_a_newer_version_with_an_older_one(remote, settings, tmp_path):
    ada = author("Ada Lovelace")
    settings.ARENA_PUBLISH_REPOSITORY = ""  # v1's publication is delayed: see below
    first = upload(ada, "tic_tac_toe", "rando", TIC_TAC_TOE)
    settings.ARENA_PUBLISH_REPOSITORY = str(remote)
    upload(ada, "tic_tac_toe", "rando", TIC_TAC_TOE.read_bytes() + b"# v2\n")

    queue_again(first)  # v1's task arrives after v2 was published
    revision_publish(revision_id=first.pk)

    first.refresh_from_db()
    assert first.publication_status == StepStatus.SUCCEEDED
    assert "v2 is published already" in first.job("publication").log
    readme = (checkout(remote, tmp_path) / "tic_tac_toe" / "rando" / "README.md").read_text()
    assert "- Version: v2" in readme
    assert subjects(remote) == ["tic_tac_toe/rando v2"]


def test_it_queues_a_failed_attempt_again_while_retries_are_left(remote, settings, tmp_path):
    settings.ARENA_PUBLISH_REPOSITORY = ""
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    settings.ARENA_PUBLISH_REPOSITORY = str(tmp_path / "down.git")
    queue_again(revision)
    before = timezone.now()

    revision_publish(revision_id=revision.pk)

    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.QUEUED
    job = revision.job("publication")
    assert "Attempt 1 of 6 did not finish (trying again later)" in job.error
    assert "cannot reach the publication repository" in job.error
    # Sent again by the watchdog after a minute; the next waits twice as long.
    assert 60 <= (job.resend_at - before).total_seconds() <= 120


def test_it_fails_a_publication_after_its_last_attempt(remote, settings, tmp_path):
    settings.ARENA_PUBLISH_REPOSITORY = ""
    settings.ARENA_PUBLICATION_MAX_ATTEMPTS = 2
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    settings.ARENA_PUBLISH_REPOSITORY = str(tmp_path / "down.git")
    queue_again(revision)

    revision_publish(revision_id=revision.pk)
    revision_publish(revision_id=revision.pk)

    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.FAILED
    job = revision.job("publication")
    assert (job.status, job.attempts) == (JobStatus.FAILED, 2)
    assert job.error.startswith("Not done after 2 attempts")
    assert "cannot reach the publication repository" in job.error
    assert "git ls-remote" in job.log  # what git said, kept with the failure


def test_the_watchdog_sends_a_failed_publication_again_when_its_wait_is_over(
    remote, settings, tmp_path
):
    settings.ARENA_PUBLISH_REPOSITORY = ""
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    settings.ARENA_PUBLISH_REPOSITORY = str(tmp_path / "down.git")
    queue_again(revision)
    revision_publish(revision_id=revision.pk)
    job = revision.job("publication")

    assert not jobs_recover()  # its minute is not over: nothing sent
    Job.objects.filter(pk=job.pk).update(resend_at=timezone.now() - timedelta(seconds=1))
    settings.ARENA_PUBLISH_REPOSITORY = str(remote)
    assert jobs_recover()  # sent again, and published (eagerly)

    revision.refresh_from_db()
    job.refresh_from_db()
    assert revision.publication_status == StepStatus.SUCCEEDED
    assert (job.status, job.attempts, job.error) == (JobStatus.SUCCEEDED, 2, "")
    assert subjects(remote) == ["tic_tac_toe/rando v1"]


def test_it_republishes_a_failed_revision_from_the_admin(remote, settings, tmp_path, organizer):
    settings.ARENA_PUBLISH_REPOSITORY = str(tmp_path / "down.git")
    settings.ARENA_PUBLICATION_MAX_ATTEMPTS = 1
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    assert revision.publication_status == StepStatus.FAILED
    settings.ARENA_PUBLISH_REPOSITORY = str(remote)

    client = Client()
    client.force_login(organizer)
    response = client.post(
        reverse("admin:core_revision_changelist"),
        {"action": "republish", "_selected_action": [revision.pk]},
        follow=True,
    )

    assert [str(message) for message in response.context["messages"]] == ["Re-published: 1"]
    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.SUCCEEDED, revision.job("publication").error
    assert revision.job("publication").error == ""
    assert subjects(remote) == ["tic_tac_toe/rando v1"]


def test_it_republishes_only_a_running_publication_that_a_killed_worker_left(
    remote, settings, tmp_path, organizer
):
    settings.ARENA_PUBLISH_REPOSITORY = ""
    revision = upload(author("Ada Lovelace"), "tic_tac_toe", "rando", TIC_TAC_TOE)
    settings.ARENA_PUBLISH_REPOSITORY = str(remote)
    client = Client()
    client.force_login(organizer)

    def republish(lease_left_seconds: int) -> list[str]:
        queue_again(revision)  # then taken up by a worker, which holds it for a while
        Job.objects.filter(kind=JobKind.PUBLICATION, revision=revision).update(
            status=JobStatus.RUNNING,
            lease_owner="publisher:1",
            lease_expires_at=timezone.now() + timedelta(seconds=lease_left_seconds),
        )
        Revision.objects.filter(pk=revision.pk).update(publication_status=StepStatus.RUNNING)
        response = client.post(
            reverse("admin:core_revision_changelist"),
            {"action": "republish", "_selected_action": [revision.pk]},
            follow=True,
        )
        return [str(message) for message in response.context["messages"]]

    assert republish(lease_left_seconds=40) == [
        "rando v1: not re-published: its publication is already running; wait for it to finish"
    ]
    assert git("for-each-ref", cwd=remote) == ""
    # Its worker stopped renewing the lease: killed, so taken over.
    assert republish(lease_left_seconds=-5) == ["Re-published: 1"]
    revision.refresh_from_db()
    assert revision.publication_status == StepStatus.SUCCEEDED, revision.job("publication").error
    assert subjects(remote) == ["tic_tac_toe/rando v1"]
