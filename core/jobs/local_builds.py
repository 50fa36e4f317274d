"""A hosted revision's build on this host: what the sandbox starts it from here.

That is its build folder (``Revision.build_dir``, under ``ARENA_BUILD_ROOT``) and, with the
docker sandbox, its image in this host's Docker engine (``Revision.image``). Every worker
host (one engine, one build root that its worker containers share) has its own: the build
makes it on the host that built the revision, and any other host makes its own from the
upload stored in the database the first time a duel or a validation wants it there (the
builder's receiver of ``core.jobs.signals.revision_build_missing``: the same steps as the
build, the same SHA-256 check, the same image tag).

Host locks keep the workers of a host from stepping on each other: an ``flock`` on a file
per revision in ``ARENA_BUILD_ROOT/.locks``, which every worker container of the host sees
(they bind-mount that folder, and the kernel is the host's). Exclusive while a build is
made or its image removed (the build, a host's own build, the image clean-up); shared
while a duel or a validation runs it. So a host builds a revision once however many duels
want it at the same moment, and its clean-up never removes an image a duel of this host
is about to start. Locks are taken one exclusive at a time and never while holding
another, so they cannot deadlock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from django.conf import settings

from core.errors import ArenaError
from core.jobs.signals import revision_build_missing
from core.models import Revision
from sandboxes import docker_images
from sandboxes.base import SandboxError
from sandboxes.locks import file_lock

#: How often a full check is tried: a build made here can be removed again by this
#: host's clean-up between being made and being locked for the duel (rare: the clean-up
#: only removes images no queued or running duel needs).
ATTEMPTS = 3


class LocalBuildFailed(ArenaError):
    """This host could not make or find a revision's build: the platform's fault, never
    the agent's."""


@dataclasses.dataclass(frozen=True)
class LocalBuild:
    """A revision's build that this host made for itself, and the seconds it took."""

    revision: Revision
    seconds: float


def _lock_path(revision_id: int) -> Path:
    return Path(settings.ARENA_BUILD_ROOT) / ".locks" / f"revision-{revision_id}"


def lock_wait_seconds() -> float:
    """The longest a worker waits for a revision's lock: another worker of this host may
    hold it for a whole build."""
    return settings.ARENA_BUILD_TIMEOUT_SECONDS + 60.0


@contextlib.contextmanager
def revision_host_lock(
    revision_id: int, *, shared: bool, timeout: float | None = None
) -> Iterator[bool]:
    """Hold this host's lock on the revision while the block runs; yields whether it was
    had. ``timeout`` 0 tries once (the clean-up skips a busy revision); None waits up to
    ``lock_wait_seconds()``, then raises LocalBuildFailed."""
    wait = lock_wait_seconds() if timeout is None else timeout
    path = _lock_path(revision_id)
    with contextlib.ExitStack() as held:
        try:
            had = held.enter_context(file_lock(path, shared=shared, timeout=wait))
        except OSError as error:
            raise LocalBuildFailed(f"cannot lock {path} on this host: {error}") from error
        if not had and timeout is None:
            raise LocalBuildFailed(
                f"revision {revision_id} stayed locked on this host for {wait:.0f} s "
                "(another worker here was building it)"
            )
        yield had


def uses_image(revision: Revision) -> bool:
    """Whether the sandbox starts the revision from its image (else from its build folder),
    as ``duel_runner.services.revision_agent_source`` decides."""
    return settings.ARENA_SANDBOX == "docker" and bool(revision.image)


def local_build_present(revision: Revision) -> bool:
    """Whether this host has what the sandbox starts the revision from."""
    if uses_image(revision):
        try:
            return docker_images.image_exists(revision.image)
        except SandboxError as error:
            raise LocalBuildFailed(f"this host's Docker engine failed: {error}") from error
    # The build renames a finished folder into place: there means complete.
    return revision.build_dir.is_dir()


def _build_here(revision: Revision) -> LocalBuild | None:
    """Make the revision's build on this host unless another worker here just did."""
    with revision_host_lock(revision.pk, shared=False):
        if local_build_present(revision):
            return None
        started = time.monotonic()
        revision_build_missing.send(sender=Revision, revision=revision)
        seconds = time.monotonic() - started
        if not local_build_present(revision):
            raise LocalBuildFailed(f"{revision} was not built on this host (no builder answered)")
    return LocalBuild(revision=revision, seconds=seconds)


@contextlib.contextmanager
def revisions_built_here(revisions: Sequence[Revision]) -> Iterator[list[LocalBuild]]:
    """Hold this host's build of each hosted revision while the block runs (a duel, a
    validation): made first where missing, then kept under the shared lock so that the
    host's clean-up leaves it. Yields the builds this host made, with their durations, to
    be logged; they happen before the block, off every player's clock.

    Raises LocalBuildFailed (or the builder's ArenaError) when a build cannot be made
    here: an infrastructure failure, to be retried, never charged to an agent.
    """
    hosted = sorted(
        {revision.pk: revision for revision in revisions if revision.competitor.is_hosted}.values(),
        key=lambda revision: revision.pk,
    )
    made: list[LocalBuild] = []
    for _attempt in range(ATTEMPTS):
        with contextlib.ExitStack() as held:
            for revision in hosted:
                held.enter_context(revision_host_lock(revision.pk, shared=True))
            missing = [revision for revision in hosted if not local_build_present(revision)]
            if not missing:
                yield made
                return
        # Built outside every shared lock, one at a time: no lock is held while waiting.
        for revision in missing:
            build = _build_here(revision)
            if build is not None:
                made.append(build)
    names = ", ".join(str(revision) for revision in hosted)
    raise LocalBuildFailed(
        f"the builds of {names} kept disappearing from this host (its image clean-up?)"
    )
