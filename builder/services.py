"""Building a revision: unpacking it into its own folder and checking that it can start
(entry point present, Python files compile, ``requirements.txt`` within the rules, the
same checks whatever the sandbox); for the ``docker`` sandbox also building its own image
with its dependencies (``builder.requirements``, ``builder.revision_image``).
And the clean-up of the images no revision needs any more.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from packaging.requirements import Requirement

from builder import selectors
from builder.requirements import (
    BuildTimedOut,
    RequirementsPolicy,
    RequirementsRejected,
    WheelSet,
    requirements_parse,
    requirements_policy,
    wheels_download,
)
from builder.revision_image import (
    DEPS_ROLE,
    LABEL_ENVIRONMENT,
    LABEL_INSTANCE,
    ROLE,
    base_numpy_version,
    revision_image_build,
    revision_image_tag,
)
from core.errors import ArenaError
from core.jobs.local_builds import revision_host_lock, uses_image
from core.jobs.policies import Outcome
from core.jobs.worker import Claimed, Done, job_run
from core.models import JobKind, Revision
from core.services.uploads import (
    REQUIREMENTS,
    UploadRejected,
    extract_upload,
    revision_upload_read,
    upload_limits,
)
from sandboxes import docker_images
from sandboxes.base import AgentSource, InvalidAgent, SandboxError
from sandboxes.base_image import BaseImageError, base_image_build
from sandboxes.docker_engine import LABEL_REVISION, LABEL_ROLE, EngineError, EngineTimeout

#: What the build log keeps of the engine's and pip's output: the start and the end.
BUILD_LOG_CHARS = 100_000
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _compile_errors(folder: Path) -> list[str]:
    errors = []
    for path in sorted(folder.rglob("*.py")):
        try:
            compile(path.read_bytes(), str(path.relative_to(folder)), "exec")
        except SyntaxError as error:
            where = f"{error.filename}, line {error.lineno}"
            errors.append(f"{where}: {error.msg}\n    {(error.text or '').rstrip()}")
        except ValueError as error:  # null bytes
            errors.append(f"{path.relative_to(folder)}: {error}")
    return errors


class BuildFailed(ArenaError):
    """The platform could not build the revision (not the upload's fault)."""


def _bounded(text: str, limit: int = BUILD_LOG_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit // 4
    dropped = len(text) - limit
    return f"{text[:head]}\n[... {dropped:,} characters dropped ...]\n{text[-(limit - head) :]}"


def instance_label() -> str:
    """Which deployment's images these are: ``ARENA_INSTANCE``, else the database's identity.

    Several deployments (or test runs) may share one Docker engine; the clean-up only
    looks at images of its own instance, whose revision ids mean something to it.
    """
    if settings.ARENA_INSTANCE:
        return settings.ARENA_INSTANCE
    database = connection.settings_dict
    identity = "|".join(str(database.get(key) or "") for key in ("ENGINE", "HOST", "PORT", "NAME"))
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _base_image(report: Callable[[str], None]) -> str:
    """The image revisions are built on: ``ARENA_DOCKER_IMAGE``, else this checkout's base
    image, built now if it is missing (the same choice as ``DockerSandbox``)."""
    configured = settings.ARENA_DOCKER_IMAGE
    if configured:
        if not docker_images.image_exists(configured):
            raise BuildFailed(f"the agents' image {configured} (ARENA_DOCKER_IMAGE) does not exist")
        return configured
    return base_image_build(**base_image_options(), report=report).tag


def base_image_options() -> dict[str, Any]:
    """The base image settings, as ``sandboxes.base_image`` takes them."""
    return {
        "source": settings.ARENA_BASE_IMAGE_SOURCE,
        "mirror": settings.ARENA_DEBIAN_MIRROR,
        "cache": settings.ARENA_BASE_IMAGE_CACHE,
    }


def _requirements_checked(
    folder: Path, *, policy: RequirementsPolicy, log: list[str]
) -> list[Requirement] | None:
    """The requirements of the upload in ``folder``, checked against ``policy``; None
    without a ``requirements.txt``. Raises RequirementsRejected.

    Every sandbox runs this, so an upload gets the same verdict and the same message
    whichever one the platform uses.
    """
    requirements_file = folder / REQUIREMENTS
    if not requirements_file.is_file():
        return None
    try:
        text = requirements_file.read_text("utf-8")
    except UnicodeDecodeError:
        raise RequirementsRejected("requirements.txt must be UTF-8 text") from None
    requirements = requirements_parse(text, policy=policy)
    log.append("requirements: " + (", ".join(str(r) for r in requirements) or "none listed"))
    return requirements


def _revision_image(
    *,
    revision: Revision,
    folder: Path,
    requirements: list[Requirement] | None,
    policy: RequirementsPolicy,
    deadline: float,
    log: list[str],
) -> str:
    """Build the revision's image from its unpacked files in ``folder`` and its checked
    ``requirements``; returns its tag."""
    source = AgentSource.from_path(folder)
    base = _base_image(log.append)
    if time.monotonic() > deadline:
        raise BuildTimedOut("making the base image")
    wheels: WheelSet | None = None
    if requirements is not None:
        started = time.monotonic()
        wheels = wheels_download(
            requirements=requirements,
            policy=policy,
            deadline=deadline,
            base_numpy=lambda: base_numpy_version(base),
            report=log.append,
        )
        how = "reused" if wheels.reused else f"downloaded in {time.monotonic() - started:.1f} s"
        log.append(
            f"wheels to install: {', '.join(wheels.wheels) or 'none'} "
            f"({wheels.total_bytes:,} bytes, {how})"
        )
    tag = revision_image_tag(revision_id=revision.pk, sha256=revision.sha256)
    log.append(f"building the image {tag} from {base}")
    started = time.monotonic()
    build_log = revision_image_build(
        tag=tag,
        base=base,
        agent_dir=folder,
        entry=source.entry,
        kind=source.kind,
        wheels=wheels,
        labels={
            LABEL_REVISION: str(revision.pk),
            LABEL_ENVIRONMENT: revision.competitor.environment.name,
            LABEL_INSTANCE: instance_label(),
        },
        deadline=deadline,
    )
    log.append(ANSI_ESCAPE.sub("", "\n".join(line for line in build_log if line.strip())))
    log.append(f"built {tag} in {time.monotonic() - started:.1f} s")
    return tag


def _failure_message(error: BaseException, *, timeout: int) -> str:
    if isinstance(error, BuildTimedOut | EngineTimeout):
        doing = error.message if isinstance(error, BuildTimedOut) else "building the image"
        return (
            f"the build did not finish within {timeout} s, its time limit ({doing}); "
            "fewer or smaller dependencies build faster"
        )
    if isinstance(error, EngineError) and "returned a non-zero code" in error.message:
        return (
            f"installing the dependencies failed in the image:\n{error.message}\n"
            "Check that the packages in requirements.txt work on CPython 3.11 on Linux."
        )
    if isinstance(error, BaseImageError | BuildFailed | EngineError):
        return (
            f"the platform could not build the image: {error.message}\n"
            "This is not a problem with your upload: an organizer can rebuild the revision."
        )
    return getattr(error, "message", None) or str(error)


def revision_build(*, revision_id: int) -> None:
    """The build job (``core.jobs.worker.job_run``): build the revision under a renewed
    lease and record the outcome (and so, when it succeeded, start the validation that
    waits for it). A worker that lost its lease meanwhile records nothing."""
    job_run(kind=JobKind.BUILD, subject_id=revision_id, work=_build)


def _make(
    revision: Revision, *, folder: Path, with_image: bool, deadline: float, log: list[str]
) -> str:
    """Unpack the revision's stored upload (its SHA-256 checked) into ``folder``, check it
    and, ``with_image``, build its image; returns the image's tag ('' without one).

    The build runs this, and so does a host that makes its own copy of a built revision
    (``revision_build_here``): the same bytes, the same checks, the same image tag.
    """
    content = revision_upload_read(revision=revision)
    summary = extract_upload(revision.filename, content, folder, upload_limits())
    log.append(f"unpacked {len(summary.files)} file(s), {summary.unpacked_bytes:,} bytes")
    errors = _compile_errors(folder)
    if errors:
        raise UploadRejected("syntax error:\n" + "\n".join(errors))
    AgentSource.from_path(folder)
    log.append(f"entry point: {summary.entry_point}")
    policy = requirements_policy()
    requirements = _requirements_checked(folder, policy=policy, log=log)
    if with_image:
        return _revision_image(
            revision=revision,
            folder=folder,
            requirements=requirements,
            policy=policy,
            deadline=deadline,
            log=log,
        )
    if requirements:
        log.append(
            "requirements checked but not installed: "
            + ", ".join(str(requirement) for requirement in requirements)
            + ". The process sandbox runs agents on this host's Python, so these "
            "must already be importable there."
        )
    return ""


def _staging(revision: Revision) -> Path:
    target = revision.build_dir
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))


def _put_in_place(staging: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


#: What a build or a host's own copy may fail with; anything else is a bug, and raised.
BUILD_ERRORS = (ArenaError, SandboxError, InvalidAgent, OSError)


def _build(claimed: Claimed) -> Done:
    revision = Revision.objects.select_related("competitor__environment").get(
        pk=claimed.job.subject_id
    )
    timeout = settings.ARENA_BUILD_TIMEOUT_SECONDS
    # The Celery task's own limits are a little longer: this one fails the build cleanly.
    deadline = time.monotonic() + timeout
    log: list[str] = [f"building {revision} from {revision.filename} ({revision.size:,} bytes)"]
    staging = _staging(revision)
    try:
        # Exclusive on this host: no duel here starts the revision's previous image while
        # it is replaced, and no other worker here makes the same build meanwhile.
        with revision_host_lock(revision.pk, shared=False):
            image = _make(
                revision,
                folder=staging,
                with_image=settings.ARENA_SANDBOX == "docker",
                deadline=deadline,
                log=log,
            )
            _put_in_place(staging, revision.build_dir)
    except BUILD_ERRORS as error:
        shutil.rmtree(staging, ignore_errors=True)
        message = _failure_message(error, timeout=timeout)
        log.append(f"build failed: {message}")
        # The validation waiting for it is cancelled with it (``core.jobs``).
        failed = Outcome(succeeded=False, error=message, log=_bounded("\n".join(log)))
        return Done(store=lambda: _stored(revision, image="", outcome=failed))
    # The validation waiting for it is sent (``core.jobs``).
    built = Outcome(succeeded=True, log=_bounded("\n".join(log)))
    return Done(store=lambda: _stored(revision, image=image, outcome=built))


def _stored(revision: Revision, *, image: str, outcome: Outcome) -> Outcome:
    """The build's outcome, with the image it made written on its revision."""
    Revision.objects.filter(pk=revision.pk).update(image=image)
    return outcome


def revision_build_here(*, revision: Revision) -> None:
    """Make this host's build of a revision built elsewhere (``core.jobs.local_builds``): its
    folder and, when its duels start an image, that image, from the upload stored in the
    database, by the build's own steps (``_make``); its requirements' wheels come from this
    host's cache or are downloaded here, as a build's would. Records nothing: the build
    that succeeded did. The caller holds the revision's exclusive lock on this host.

    Raises BuildFailed with the reason, which is the platform's problem, not the upload's:
    the upload passed these very steps when it was built.
    """
    timeout = settings.ARENA_BUILD_TIMEOUT_SECONDS
    deadline = time.monotonic() + timeout
    log: list[str] = []
    staging = _staging(revision)
    try:
        image = _make(
            revision, folder=staging, with_image=uses_image(revision), deadline=deadline, log=log
        )
        if image != (revision.image if uses_image(revision) else ""):
            raise BuildFailed(f"this host made the image {image}, not {revision.image}")
        _put_in_place(staging, revision.build_dir)
    except BUILD_ERRORS as error:
        shutil.rmtree(staging, ignore_errors=True)
        detail = _failure_message(error, timeout=timeout)
        raise BuildFailed(f"{revision} could not be built on this host: {detail}") from error


@dataclasses.dataclass(frozen=True)
class PrunedImage:
    image: str
    revision_id: int | None
    #: Why it went (or, when ``removed`` is False, why it should have and could not).
    reason: str
    removed: bool = True


def _removal_reason(
    image: docker_images.ImageSummary, use: selectors.RevisionImageUse | None
) -> str | None:
    """Why a revision image can go, or None while it is needed."""
    if use is None:
        return "its revision no longer exists"
    if use.building:
        return None
    if use.image not in image.tags:
        return "a later build of its revision replaced it"
    return use.removal_reason


def revision_images_prune() -> list[PrunedImage]:
    """Remove this instance's revision images that no revision needs any more.

    An image stays while its revision is being built or validated, while a queued or
    running duel needs it, while it is the newest validated revision of its competitor,
    or while it is entered in a tournament that is not finished (a draft one included:
    it is about to run). Images of deleted or disabled revisions, of superseded ones and
    earlier builds of a revision go, and the build cache of dependencies older than a day.
    An image a container still runs cannot go; it is reported and tried again next time.
    """
    instance = instance_label()
    images = docker_images.images_labelled({LABEL_ROLE: ROLE, LABEL_INSTANCE: instance})
    revision_ids: set[int] = set()
    for image in images:
        label = image.labels.get(LABEL_REVISION, "")
        if label.isdigit():
            revision_ids.add(int(label))
    uses = selectors.revision_image_uses(revision_ids=revision_ids)
    pruned = []
    for image in images:
        label = image.labels.get(LABEL_REVISION, "")
        revision_id = int(label) if label.isdigit() else None
        use = uses.get(revision_id) if revision_id is not None else None
        reason = _removal_reason(image, use)
        if reason is None:
            continue
        name = image.tags[0] if image.tags else image.id
        if revision_id is None:
            pruned.append(PrunedImage(name, None, reason, docker_images.image_remove(name)))
            continue
        # Exclusive on this host, and asked again under it: a duel of this host that
        # started with the image holds it shared, and one claimed since the first look
        # makes it needed again.
        with revision_host_lock(revision_id, shared=False, timeout=0) as had:
            if not had:
                busy = "a duel or build on this host holds it"
                pruned.append(PrunedImage(name, revision_id, busy, removed=False))
                continue
            use = selectors.revision_image_uses(revision_ids=[revision_id]).get(revision_id)
            reason = _removal_reason(image, use)
            if reason is not None:
                removed = docker_images.image_remove(name)
                pruned.append(PrunedImage(name, revision_id, reason, removed))
    for image_id in docker_images.images_prune_dangling(
        {LABEL_ROLE: DEPS_ROLE, LABEL_INSTANCE: instance}, older_than="24h"
    ):
        pruned.append(PrunedImage(image_id, None, "build cache of dependencies, a day old"))
    return pruned
