"""Publishing public submissions: each validated revision of a public competitor is pushed
to a git repository (``ARENA_PUBLISH_REPOSITORY``) under ``<environment>/<competitor>/``,
one commit per revision, with a README naming its author, version and rating.

Everything goes through the ``git`` command line in a local clone kept in the work folder
(``ARENA_PUBLISH_WORKDIR``). A file lock gives that clone to one publication at a time on
a machine; publishers on other machines meet at the remote, where a push refused because
the branch moved on is made again on top of the new branch.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from datetime import UTC
from pathlib import Path

from django.conf import settings

from core.jobs.lifecycle import jobs_cancel
from core.jobs.policies import Outcome, backoff
from core.jobs.worker import Claimed, Done, GiveBack, job_run
from core.models import Job, JobKind, Rating, Revision
from core.services.publication import revision_publication_problem
from core.services.uploads import (
    UploadRejected,
    UploadUnavailable,
    extract_upload,
    revision_upload_read,
    upload_limits,
)
from publisher.git import Clone, PublishError, Transcript
from sandboxes.locks import folder_lock

#: The wait before a failed publication's next attempt; it doubles with each attempt.
RETRY_SECONDS = 60
#: Pushes tried while the remote branch keeps moving on (other publishers pushing).
PUSH_ATTEMPTS = 5
#: The commit trailer naming the revision (id and SHA-256): how a commit is found again.
TRAILER = "Arena-Revision"
README = "README.md"
#: An upload's own top-level README.md is published under this name, next to Arena's.
UPLOAD_README = "README.upload.md"


# --- deciding what to publish ------------------------------------------------------------


# --- what gets published ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SkippedFile:
    path: str
    size: int
    reason: str


def _unpack(revision: Revision, destination: Path) -> None:
    try:
        content = revision_upload_read(revision=revision)
    except UploadUnavailable as error:
        raise PublishError(error.message) from None
    try:
        extract_upload(revision.filename, content, destination, upload_limits())
    except UploadRejected as error:
        raise PublishError(f"the uploaded file cannot be unpacked: {error.message}") from None


def _copy_source(source: Path, target: Path, *, max_bytes: int) -> list[SkippedFile]:
    """Copy the unpacked upload into the competitor's folder; returns what was left out."""
    skipped = []
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(source)
        size = path.stat().st_size
        if ".git" in relative.parts:
            # git refuses to track a .git folder's files inside a repository.
            skipped.append(SkippedFile(relative.as_posix(), size, "git metadata"))
            continue
        if size > max_bytes:
            skipped.append(SkippedFile(relative.as_posix(), size, "over the size cap"))
            continue
        name = UPLOAD_README if relative.as_posix() == README else relative.as_posix()
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        # Git records only whether a file is executable; the clone is Arena's alone.
        destination.chmod(0o700 if path.stat().st_mode & 0o111 else 0o600)
    return skipped


def _readme(
    revision: Revision,
    *,
    rating: Rating | None,
    skipped: list[SkippedFile],
    has_upload_readme: bool,
) -> str:
    competitor = revision.competitor
    environment = competitor.environment
    uploaded = revision.created_at.astimezone(UTC)
    if rating is None:
        rated = "not rated yet"
    else:
        rated = (
            f"mu {rating.mu:.2f}, sigma {rating.sigma:.2f}, "
            f"mu - 3 sigma {rating.conservative:.2f} ({rating.games} games, when published)"
        )
    lines = [
        f"# {competitor.name}",
        "",
        f"An agent for {environment.title} (`{environment.name}`), published by Arena.",
        "",
        f"- Author: {competitor.owner.display_name}",
        f"- Version: v{revision.version}",
        f"- Upload: `{revision.filename}` ({revision.size:,} bytes)",
        f"- SHA-256: `{revision.sha256}`",
        f"- Uploaded: {uploaded:%Y-%m-%d %H:%M:%S} UTC",
        f"- Entry point: `{revision.entry_point}`",
        f"- Rating: {rated}",
    ]
    if has_upload_readme:
        link = f"[{UPLOAD_README}]({UPLOAD_README})"
        lines += ["", f"The upload's own {README} is published as {link}."]
    if skipped:
        cap = settings.ARENA_PUBLISH_MAX_FILE_BYTES
        lines += [
            "",
            "## Files not published",
            "",
            f"These files of the upload are not in this folder (the size cap is {cap:,} bytes):",
            "",
            *(f"- `{file.path}` ({file.size:,} bytes): {file.reason}" for file in skipped),
        ]
    return "\n".join(lines) + "\n"


def _write_folder(revision: Revision, *, source: Path, target: Path, rating: Rating | None) -> None:
    """Make ``target`` hold the unpacked upload ``source`` and Arena's README, nothing else."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    skipped = _copy_source(source, target, max_bytes=settings.ARENA_PUBLISH_MAX_FILE_BYTES)
    readme = _readme(
        revision, rating=rating, skipped=skipped, has_upload_readme=(source / README).is_file()
    )
    (target / README).write_text(readme, encoding="utf-8")


def _commit_message(revision: Revision) -> list[str]:
    """Subject, body and trailer: the subject is how ``Clone.published_version`` reads the
    version back, the trailer how a revision's commit is found again."""
    competitor = revision.competitor
    uploaded = revision.created_at.astimezone(UTC)
    return [
        f"{competitor.environment.name}/{competitor.name} v{revision.version}",
        f"{competitor.name} v{revision.version} by {competitor.owner.display_name}, "
        f"uploaded {uploaded:%Y-%m-%d %H:%M} UTC.",
        f"{TRAILER}: {revision.pk} {revision.sha256}",
    ]


def _publish(revision: Revision, transcript: Transcript) -> str:
    """Push the revision; returns what was done, for the log. Raises PublishError."""
    competitor = revision.competitor
    folder = f"{competitor.environment.name}/{competitor.name}"
    message = _commit_message(revision)
    trailer = message[-1]
    rating = Rating.objects.filter(competitor=competitor).first()
    workdir = Path(settings.ARENA_PUBLISH_WORKDIR)
    with tempfile.TemporaryDirectory(prefix="arena-publish-") as temporary:
        source = Path(temporary)
        _unpack(revision, source)
        # One publication at a time in a work folder, which the workers of a machine share.
        with folder_lock(workdir):
            clone = Clone(
                workdir / "repository",
                url=settings.ARENA_PUBLISH_REPOSITORY,
                branch=settings.ARENA_PUBLISH_BRANCH,
                transcript=transcript,
            )
            clone.open()
            for _attempt in range(PUSH_ATTEMPTS):
                if clone.sync():
                    # Looked up on every attempt: another worker may have pushed it meanwhile.
                    existing = clone.commit_with(trailer)
                    if existing:
                        return f"published already as commit {existing}; not committed again"
                    # Tasks may run out of order; the folder must keep showing the newest.
                    newer = clone.published_version(folder)
                    if newer is not None and newer > revision.version:
                        return f"v{newer} is published already; not overwritten by this older one"
                _write_folder(revision, source=source, target=clone.path / folder, rating=rating)
                commit = clone.commit(folder, message)
                if clone.push():
                    return f"pushed commit {commit} to {clone.branch}"
                transcript.add("# the branch moved on (another publisher pushed): trying again")
    raise PublishError(
        f"the branch {settings.ARENA_PUBLISH_BRANCH} kept moving during {PUSH_ATTEMPTS} "
        "attempts to push; try again later"
    )


# --- the publication step -----------------------------------------------------------------


def revision_publish(*, revision_id: int) -> None:
    """The publication job (``core.jobs.worker.job_run``): push a queued revision's source
    to the publication repository.

    Idempotent: when a commit for the revision is on the branch already, none is added. A
    push that fails gives the job back (queued, showing the error and git's transcript)
    while it has attempts left (``ARENA_PUBLICATION_MAX_ATTEMPTS``), to be sent again
    after 1, 2, 4... minutes; after the last, it fails with the error.
    """
    job_run(kind=JobKind.PUBLICATION, subject_id=revision_id, work=_publication_work)


def _publication_work(claimed: Claimed) -> Done | None:
    job = claimed.job
    revision = Revision.objects.select_related("competitor__environment", "competitor__owner").get(
        pk=job.subject_id
    )
    problem = revision_publication_problem(revision)
    if problem:
        # Changed since it was queued: made private, disabled, or publishing turned off.
        jobs_cancel(
            jobs=Job.objects.filter(pk=job.pk), why=f"not published: {problem}", running=True
        )
        return None
    transcript = Transcript(settings.ARENA_PUBLISH_REPOSITORY)
    try:
        done = _publish(revision, transcript)
    except PublishError as error:
        wait = backoff(RETRY_SECONDS, job.attempts - 1)
        raise GiveBack(error.message, retry_in=wait, log=transcript.text()) from error
    transcript.add(f"# {done}")
    published = Outcome(True, log=transcript.text())
    return Done(store=lambda: published)
