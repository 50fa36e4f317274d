"""Workflows on the shared models that belong to no single app."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import F, Max, ProtectedError, Q
from django.utils import timezone

from core import dispatch
from core.errors import ArenaError
from core.leases import Heartbeat
from core.models import Competitor, Environment, Revision, StepStatus, UploadContent, User
from core.models.submissions import LEASED_STEPS, resend_at_default
from core.uploads import UploadLimits, UploadRejected, inspect_upload, upload_limits


def competitor_get_or_create(
    *, owner: User, environment: Environment, name: str, is_public: bool = False
) -> Competitor:
    """The owner's competitor of that name, created if new; another owner's name is refused."""
    competitor, created = Competitor.objects.get_or_create(
        environment=environment,
        name=name,
        defaults={"owner": owner, "is_public": is_public},
    )
    if not created and competitor.owner_id != owner.pk:
        raise ArenaError(f"the name {name!r} is taken in {environment.title}; choose another name")
    return competitor


def revision_create(
    *,
    competitor: Competitor,
    uploaded_by: User,
    filename: str,
    content: bytes,
    limits: UploadLimits | None = None,
) -> Revision:
    """Store an upload as the competitor's next revision and queue its build.

    The upload is checked first: a bad one raises UploadRejected and stores nothing.
    """
    if not competitor.environment.is_active:
        raise UploadRejected(f"{competitor.environment.title} is closed to new uploads")
    if competitor.is_disabled:
        raise UploadRejected(f"{competitor.name} is disabled by the organizers")
    if competitor.is_online:
        raise UploadRejected(
            f"{competitor.name} plays online (its client connects over the network); upload "
            "code under another name"
        )
    if competitor.is_human:
        raise UploadRejected(
            f"{competitor.name} is you, playing in the browser; upload code under another name"
        )
    if competitor.is_llm:
        raise UploadRejected(
            f"{competitor.name} is an LLM player (Arena's harness prompts its model); upload "
            "code under another name"
        )
    summary = inspect_upload(filename, content, limits or upload_limits())
    sha256 = hashlib.sha256(content).hexdigest()
    with transaction.atomic():
        # The row lock serialises concurrent uploads, so versions never collide.
        Competitor.objects.select_for_update().get(pk=competitor.pk)
        latest = competitor.revisions.aggregate(latest=Max("version"))["latest"] or 0
        revision = Revision(
            competitor=competitor,
            version=latest + 1,
            uploaded_by=uploaded_by,
            filename=filename.rsplit("/", 1)[-1][:200],
            sha256=sha256,
            size=len(content),
            upload=upload_content_store(content=content, sha256=sha256),
            entry_point=summary.entry_point,
            has_requirements=summary.has_requirements,
            build_status=StepStatus.QUEUED,
            validation_status=StepStatus.QUEUED,
        )
        revision.source.save(revision.filename, ContentFile(content), save=False)
        revision.save()
        dispatch.start("builder.tasks.build_revision", revision_id=revision.pk)
    return revision


class UploadUnavailable(ArenaError):
    """A revision's upload cannot be read from the database: not stored, or not its bytes."""


def upload_content_store(*, content: bytes, sha256: str) -> UploadContent:
    """The stored bytes of an upload, saved unless the same bytes already are. Call in the
    transaction that creates the revision referring to them."""
    stored, _ = UploadContent.objects.get_or_create(
        sha256=sha256, defaults={"content": content, "size": len(content)}
    )
    return stored


def revision_upload_read(*, revision: Revision) -> bytes:
    """The bytes of the revision's upload, from the database (so on any host), checked
    against the SHA-256 recorded when it was uploaded. Raises UploadUnavailable."""
    stored = None
    if revision.upload_id:
        rows = UploadContent.objects.filter(pk=revision.upload_id)
        stored = rows.values_list("content", flat=True).first()
    if stored is None:
        raise UploadUnavailable(
            f"the upload of {revision} is not stored in the database (it was missing or "
            "damaged when uploads moved there); its owner must upload it again"
        )
    content = bytes(stored)
    digest = hashlib.sha256(content).hexdigest()
    if digest != revision.sha256:
        raise UploadUnavailable(
            f"the stored upload of {revision} is damaged: its SHA-256 is {digest[:12]}..., "
            f"not {revision.sha256[:12]}... as uploaded; its owner must upload it again"
        )
    return content


def upload_content_release(*, sha256: str) -> bool:
    """Delete the stored bytes of an upload once no revision refers to them (the last one
    was deleted); returns whether they went. Call after the deletion commits: an upload
    of the same bytes committed meanwhile keeps them (the foreign key refuses the delete)."""
    try:
        with transaction.atomic():
            deleted, _ = UploadContent.objects.filter(pk=sha256, revisions__isnull=True).delete()
    except (IntegrityError, ProtectedError):
        return False
    return bool(deleted)


def revision_create_unbuilt(
    *, competitor: Competitor, created_by: User, build_log: str, validation_log: str
) -> Revision:
    """The next version of a competitor whose agent Arena neither builds nor self-plays
    (an online agent, an LLM player): a revision ready to play, checked as it plays. Its
    leaderboard entry starts afresh, as an upload's does; ``build_log`` and
    ``validation_log`` say why there was nothing to do."""
    now = timezone.now()
    with transaction.atomic():
        # The row lock serialises concurrent versions, as for uploads.
        Competitor.objects.select_for_update().get(pk=competitor.pk)
        latest = competitor.revisions.aggregate(latest=Max("version"))["latest"] or 0
        return Revision.objects.create(
            competitor=competitor,
            version=latest + 1,
            uploaded_by=created_by,
            filename="",
            sha256="",
            size=0,
            entry_point="",
            build_status=StepStatus.SUCCEEDED,
            build_started_at=now,
            build_ended_at=now,
            build_log=build_log,
            build_resend_at=None,
            validation_status=StepStatus.SUCCEEDED,
            validation_started_at=now,
            validation_ended_at=now,
            validation_log=validation_log,
        )


def competitor_create_unbuilt(
    *,
    owner: User,
    environment: Environment,
    name: str,
    is_public: bool,
    kind: str,
    taken_hint: str = "",
) -> Competitor:
    """A new competitor of a kind that uploads nothing (online, LLM); its name must be free
    (``taken_hint`` is added to the refusal). Call inside a transaction with what
    completes it."""
    if not environment.is_active:
        raise ArenaError(f"{environment.title} is closed to new competitors")
    if Competitor.objects.filter(environment=environment, name=name).exists():
        hint = f" ({taken_hint})" if taken_hint else ""
        raise ArenaError(
            f"the name {name!r} is taken in {environment.title}; choose another name{hint}"
        )
    return Competitor.objects.create(
        owner=owner, environment=environment, name=name, is_public=is_public, kind=kind
    )


#: The task that runs each step of a revision, taking ``revision_id``.
STEP_TASKS = {
    "build": "builder.tasks.build_revision",
    "validation": "duel_runner.tasks.validate_revision",
    "publication": "publisher.tasks.publish_revision",
}
#: What the user reads when a worker stopped on a step too many times or none took it up.
STEP_DOING = {"build": "building", "validation": "validating"}


def _lease() -> datetime:
    return timezone.now() + timedelta(seconds=settings.ARENA_REVISION_LEASE_SECONDS)


def revision_step_begin(*, revision_id: int, step: str, worker: str = "") -> Revision | None:
    """Claim a step (build, validation, publication) of a revision for ``worker``.

    The conditional UPDATE makes the claim atomic: of several workers handed the same
    revision, one gets it and the others get None. A build or validation is claimed
    with a lease (see ``core.leases``): queued, or running under a lease that ran out
    (its worker died) with attempts left; each claim counts an attempt.
    """
    now = timezone.now()
    fields: dict[str, object] = {
        f"{step}_status": StepStatus.RUNNING,
        f"{step}_started_at": now,
        f"{step}_ended_at": None,
        f"{step}_error": "",
    }
    claimable = Q(**{f"{step}_status": StepStatus.QUEUED})
    if step in LEASED_STEPS:
        claimable |= Q(
            **{
                f"{step}_status": StepStatus.RUNNING,
                f"{step}_lease_expires_at__lt": now,
                f"{step}_attempts__lt": settings.ARENA_REVISION_MAX_ATTEMPTS,
            }
        )
        fields.update(
            {
                f"{step}_lease_owner": worker,
                f"{step}_lease_expires_at": _lease(),
                f"{step}_attempts": F(f"{step}_attempts") + 1,
                f"{step}_resend_at": None,
            }
        )
    updated = Revision.objects.filter(claimable, pk=revision_id).update(**fields)
    return (
        Revision.objects.select_related("competitor__environment").get(pk=revision_id)
        if updated
        else None
    )


def revision_step_renew(*, revision_id: int, step: str, worker: str) -> bool:
    """Push the worker's lease on a running step forward; False once it lost the lease."""
    return bool(
        Revision.objects.filter(
            pk=revision_id,
            **{f"{step}_status": StepStatus.RUNNING, f"{step}_lease_owner": worker},
        ).update(**{f"{step}_lease_expires_at": _lease()})
    )


def revision_step_heartbeat(*, revision: Revision, step: str, worker: str) -> Heartbeat:
    """A heartbeat that keeps the worker's lease on the step while the block runs."""
    return Heartbeat(
        lambda: revision_step_renew(revision_id=revision.pk, step=step, worker=worker),
        interval=settings.ARENA_REVISION_LEASE_SECONDS / 3,
    )


def revision_step_finish(
    *,
    revision: Revision,
    step: str,
    succeeded: bool,
    error: str = "",
    log: str = "",
    worker: str = "",
    fields: Mapping[str, object] | None = None,
) -> bool:
    """Record how a step ended, with ``fields`` (other columns) in the same UPDATE.

    A build or validation is recorded only by the worker holding its lease: a worker
    that lost it (it stalled and the step was queued again) has its outcome dropped.
    Returns whether it was recorded.
    """
    owned = Revision.objects.filter(pk=revision.pk)
    values: dict[str, object] = {
        f"{step}_status": StepStatus.SUCCEEDED if succeeded else StepStatus.FAILED,
        f"{step}_ended_at": timezone.now(),
        f"{step}_error": error,
        f"{step}_log": log,
        **(fields or {}),
    }
    if step in LEASED_STEPS:
        owned = owned.filter(
            **{f"{step}_status": StepStatus.RUNNING, f"{step}_lease_owner": worker}
        )
        values.update({f"{step}_lease_owner": "", f"{step}_lease_expires_at": None})
    recorded = bool(owned.update(**values))
    revision.refresh_from_db()
    return recorded


def _requeued(step: str) -> dict[str, object]:
    """The columns of a step queued afresh: status, times, error, attempts, lease."""
    fields: dict[str, object] = {
        f"{step}_status": StepStatus.QUEUED,
        f"{step}_started_at": None,
        f"{step}_ended_at": None,
        f"{step}_error": "",
    }
    if step in LEASED_STEPS:
        fields.update(
            {
                f"{step}_attempts": 0,
                f"{step}_lease_owner": "",
                f"{step}_lease_expires_at": None,
                f"{step}_resends": 0,
                # Sent now (the first step) or once the step before it succeeds.
                f"{step}_resend_at": None,
            }
        )
    return fields


def _requeue(*, revision: Revision, steps: tuple[str, ...], when: Q) -> bool:
    """Queue ``steps`` again when the revision still matches ``when``; start the first."""
    first = steps[0]
    fields: dict[str, object] = {}
    for step in steps:
        fields.update(_requeued(step))
    if first in LEASED_STEPS:
        fields[f"{first}_resend_at"] = resend_at_default()
    with transaction.atomic():
        if not Revision.objects.filter(when, pk=revision.pk).update(**fields):
            return False
        dispatch.start(STEP_TASKS[first], revision_id=revision.pk)
    revision.refresh_from_db()
    return True


def revision_requeue(*, revision: Revision, steps: tuple[str, ...]) -> None:
    """Queue steps again whatever their state (re-publication, the demo); start the first."""
    _requeue(revision=revision, steps=steps, when=Q())


def _idle(step: str, now: datetime) -> Q:
    """The step is not queued and no live worker holds it."""
    return Q(
        **{f"{step}_status__in": [StepStatus.NONE, StepStatus.SUCCEEDED, StepStatus.FAILED]}
    ) | Q(**{f"{step}_status": StepStatus.RUNNING, f"{step}_lease_expires_at__lt": now})


def _hosted_only(revision: Revision) -> None:
    competitor = revision.competitor
    if not competitor.is_hosted:
        raise ArenaError(
            f"{competitor.name} is {competitor.get_kind_display().lower()}: Arena has nothing "
            "to build or self-play; it is checked as it plays"
        )


def revision_rebuild(*, revision: Revision) -> bool:
    """An organizer's rebuild: build, then validate again. Returns whether it was queued.

    One conditional UPDATE decides, so of two organizers clicking at once one acts: the
    build must not be queued or held by a live worker, nor the validation running. A
    step whose worker died (its lease ran out) may be rebuilt at once.
    """
    _hosted_only(revision)
    now = timezone.now()
    return _requeue(
        revision=revision,
        steps=("build", "validation"),
        when=_idle("build", now)
        & (_idle("validation", now) | Q(validation_status=StepStatus.QUEUED)),
    )


def revision_revalidate(*, revision: Revision) -> bool:
    """An organizer's re-validation (self-play again) of a built revision; whether it acted.
    An LLM player's would spend tokens on self-play: it is checked as it plays instead."""
    _hosted_only(revision)
    return _requeue(
        revision=revision,
        steps=("validation",),
        when=Q(build_status=StepStatus.SUCCEEDED) & _idle("validation", timezone.now()),
    )


# --- recovering lost work (the tournament manager's reconcile steps) ---------------------


def revision_step_requeue_expired(*, revision: Revision, step: str) -> bool:
    """Queue again a build or validation whose worker stopped renewing its lease (it died
    or stalled), with attempts left, and start it. Returns whether this call did: the
    conditional UPDATE is the claim among several tournament managers."""
    with transaction.atomic():
        requeued = Revision.objects.filter(
            pk=revision.pk,
            **{
                f"{step}_status": StepStatus.RUNNING,
                f"{step}_lease_expires_at__lt": timezone.now(),
                f"{step}_attempts__lt": settings.ARENA_REVISION_MAX_ATTEMPTS,
            },
        ).update(
            **{
                f"{step}_status": StepStatus.QUEUED,
                f"{step}_lease_owner": "",
                f"{step}_lease_expires_at": None,
                f"{step}_resend_at": resend_at_default(),
            }
        )
        if not requeued:
            return False
        dispatch.start(STEP_TASKS[step], revision_id=revision.pk)
    return True


def revision_step_give_back(*, revision: Revision, step: str, worker: str, problem: str) -> bool:
    """A build or validation that ``worker`` holds but cannot do on its host (it could not
    build the revision there): queued again for another try, by any worker, while it has
    attempts left (``ARENA_REVISION_MAX_ATTEMPTS``: each claim counted one); after the
    last, failed with the reason, which is the platform's and not the upload's. Returns
    whether it was queued again (False: failed, or the worker no longer held it)."""
    held = Q(**{f"{step}_status": StepStatus.RUNNING, f"{step}_lease_owner": worker})
    attempts = settings.ARENA_REVISION_MAX_ATTEMPTS
    requeued = Revision.objects.filter(
        held, pk=revision.pk, **{f"{step}_attempts__lt": attempts}
    ).update(
        **{
            f"{step}_status": StepStatus.QUEUED,
            f"{step}_lease_owner": "",
            f"{step}_lease_expires_at": None,
            f"{step}_resend_at": resend_at_default(),
            f"{step}_error": f"A worker could not start it: {problem}"[:10_000],
        }
    )
    if requeued:
        return True
    _fail(
        revision,
        step,
        held & Q(**{f"{step}_attempts__gte": attempts}),
        f"The workers could not prepare this revision on their machines ({attempts} "
        "attempts). This is a problem on our side, not with your upload; an organizer can "
        f"retry it from the admin. The last: {problem}",
    )
    return False


def _fail(revision: Revision, step: str, when: Q, error: str) -> bool:
    fields: dict[str, object] = {
        f"{step}_status": StepStatus.FAILED,
        f"{step}_ended_at": timezone.now(),
        f"{step}_lease_owner": "",
        f"{step}_lease_expires_at": None,
        f"{step}_resend_at": None,
        f"{step}_error": error,
    }
    if step == "build":
        # Nothing to validate without a build.
        fields["validation_status"] = StepStatus.NONE
    return bool(Revision.objects.filter(when, pk=revision.pk).update(**fields))


def revision_step_fail_exhausted(*, revision: Revision, step: str) -> bool:
    """Fail a build or validation whose worker stopped on its last allowed attempt
    (``ARENA_REVISION_MAX_ATTEMPTS``), saying so. Returns whether this call did."""
    attempts = settings.ARENA_REVISION_MAX_ATTEMPTS
    advice = {
        "build": "an organizer can rebuild it from the admin. If it happens again, the "
        "build may need more memory or time than a worker has (large dependencies?).",
        "validation": "an organizer can re-validate it from the admin. If it happens "
        "again, your agent may use more memory or CPU than a worker can give it.",
    }[step]
    return _fail(
        revision,
        step,
        Q(
            **{
                f"{step}_status": StepStatus.RUNNING,
                f"{step}_lease_expires_at__lt": timezone.now(),
                f"{step}_attempts__gte": attempts,
            }
        ),
        f"The worker {STEP_DOING[step]} this revision stopped {attempts} times before it "
        f"finished (it was killed or lost contact with the platform). This is usually a "
        f"problem on our side rather than with your upload: {advice}",
    )


def revision_step_resend(*, revision: Revision, step: str) -> bool:
    """Send again the queue message of a build or validation that sat queued past its
    ``<step>_resend_at`` (the message was lost, or no worker is there to take it); the
    next re-send waits twice as long. After ``ARENA_MAX_RESENDS`` re-sends the step
    fails with the reason. Returns whether this call did either.

    A message sent twice does no harm: a worker must claim the step first, so only
    one of them runs it.
    """
    now = timezone.now()
    due = Q(
        **{
            f"{step}_status": StepStatus.QUEUED,
            f"{step}_resend_at__lt": now,
            f"{step}_resends": getattr(revision, f"{step}_resends"),
        }
    )
    if step == "validation":
        due &= Q(build_status=StepStatus.SUCCEEDED)
    resends = getattr(revision, f"{step}_resends")
    if resends >= settings.ARENA_MAX_RESENDS:
        return _fail(
            revision,
            step,
            due,
            f"No worker took up {STEP_DOING[step]} this revision: it was sent to the "
            f"workers {resends + 1} times and stayed queued. The platform's workers may be "
            f"down; this is not a problem with your upload. An organizer can "
            f"{'rebuild' if step == 'build' else 're-validate'} it from the admin once "
            f"they are back.",
        )
    wait = timedelta(seconds=settings.ARENA_RESEND_AFTER_SECONDS * 2 ** (resends + 1))
    with transaction.atomic():
        resent = Revision.objects.filter(due, pk=revision.pk).update(
            **{f"{step}_resends": resends + 1, f"{step}_resend_at": now + wait}
        )
        if not resent:
            return False
        dispatch.start(STEP_TASKS[step], revision_id=revision.pk)
    return True


def environments_import() -> list[Environment]:
    """Create or update an Environment row for every game folder's ``info.yml`` (the
    OpenSpiel games an organizer added are left as they are)."""
    from environments.registry import environment_names, load_info

    imported = []
    for name in environment_names():
        info = load_info(name)
        if Environment.objects.filter(name=name).exclude(spec="").exists():
            raise ArenaError(
                f"The OpenSpiel environment {name!r} has the name of the built-in game "
                f"environments/{name}: give it another name in the admin, then import again."
            )
        environment, _ = Environment.objects.update_or_create(
            name=name,
            defaults={
                "title": info.title,
                "description": info.description,
                "rules": info.rules,
                "players": info.players,
                "matches_per_duel": info.matches_per_duel,
                "ladder_matches_per_duel": info.ladder_matches_per_duel,
                "validation_matches": info.validation_matches,
                "move_time": info.move_time,
                "time_bank": info.time_bank,
                "startup_time": info.startup_time,
                "memory_mb": info.memory_mb,
                "cpu_seconds": info.cpu_seconds,
            },
        )
        imported.append(environment)
    return imported


#: The limits an organizer may set for an OpenSpiel game (the defaults are ``games.yml``'s).
OPENSPIEL_LIMITS = (
    "matches_per_duel",
    "ladder_matches_per_duel",
    "validation_matches",
    "move_time",
    "time_bank",
    "startup_time",
    "memory_mb",
    "cpu_seconds",
)


def openspiel_slug(spec: str) -> str:
    """A default environment name for a spec: ``openspiel:go(board_size=9)`` gives
    ``go_board_size_9``."""
    body = spec.removeprefix("openspiel:")
    return re.sub(r"[^a-z0-9]+", "_", body.lower()).strip("_")[:64]


def environment_openspiel_values(
    *,
    spec: str,
    name: str = "",
    title: str = "",
    limits: Mapping[str, float | int | None] | None = None,
) -> dict[str, object]:
    """The fields of a new OpenSpiel game's environment: its spec written one way, its
    texts, and its default limits (``environments/openspiel/games.yml``) where ``limits``
    gives none.

    ArenaError when the spec does not load (unknown game, bad parameter, a game Arena
    cannot play), or the game or the name is already there.
    """
    from environments.openspiel import canonical_spec
    from environments.registry import (
        InvalidEnvironmentInfo,
        UnknownEnvironment,
        environment_names,
        load_info,
    )

    try:
        spec = canonical_spec(spec.strip())
        info = load_info(spec)
    except (UnknownEnvironment, InvalidEnvironmentInfo) as error:
        raise ArenaError(str(error)) from None
    name = name or openspiel_slug(spec)
    if name in environment_names():
        raise ArenaError(f"{name!r} is the name of a built-in game: choose another name.")
    existing = Environment.objects.filter(Q(name=name) | Q(spec=spec)).first()
    if existing is not None:
        what = "game" if existing.spec == spec else "name"
        raise ArenaError(
            f"The {what} is already an environment: {existing.name} "
            f"({existing.spec or 'built in'})."
        )
    values: dict[str, object] = {key: getattr(info, key) for key in OPENSPIEL_LIMITS}
    values.update({key: value for key, value in (limits or {}).items() if value is not None})
    return {
        "name": name,
        "spec": spec,
        "title": title or info.title,
        "description": info.description,
        "rules": info.rules,
        "players": info.players,
        **values,
    }


def environment_add_openspiel(
    *,
    spec: str,
    name: str = "",
    title: str = "",
    limits: Mapping[str, float | int | None] | None = None,
) -> Environment:
    """Create the environment of an OpenSpiel game (``environment_openspiel_values``)."""
    values = environment_openspiel_values(spec=spec, name=name, title=title, limits=limits)
    try:
        return Environment.objects.create(**values)
    except IntegrityError:
        raise ArenaError(f"The name {values['name']!r} or the game was just taken.") from None
