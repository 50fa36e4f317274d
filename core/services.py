"""Workflows on the shared models that belong to no single app."""

from __future__ import annotations

import hashlib

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Max

from builder.archives import UploadLimits, UploadRejected, inspect_upload
from core import dispatch
from core.errors import ArenaError
from core.models import Competitor, Environment, Revision, StepStatus, User


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
    from builder.services import upload_limits

    summary = inspect_upload(filename, content, limits or upload_limits())
    with transaction.atomic():
        # The row lock serialises concurrent uploads, so versions never collide.
        Competitor.objects.select_for_update().get(pk=competitor.pk)
        latest = competitor.revisions.aggregate(latest=Max("version"))["latest"] or 0
        revision = Revision(
            competitor=competitor,
            version=latest + 1,
            uploaded_by=uploaded_by,
            filename=filename.rsplit("/", 1)[-1][:200],
            sha256=hashlib.sha256(content).hexdigest(),
            size=len(content),
            entry_point=summary.entry_point,
            has_requirements=summary.has_requirements,
            build_status=StepStatus.QUEUED,
            validation_status=StepStatus.QUEUED,
        )
        revision.source.save(revision.filename, ContentFile(content), save=False)
        revision.save()
        dispatch.start("builder.tasks.build_revision", revision_id=revision.pk)
    return revision


def revision_step_begin(*, revision_id: int, step: str) -> Revision | None:
    """Claim a queued step (build, validation, publication) of a revision.

    The conditional UPDATE makes the claim atomic: of several workers handed the same
    revision, one gets it and the others get None.
    """
    from django.utils import timezone

    claimed = Revision.objects.filter(pk=revision_id, **{f"{step}_status": StepStatus.QUEUED})
    updated = claimed.update(
        **{
            f"{step}_status": StepStatus.RUNNING,
            f"{step}_started_at": timezone.now(),
            f"{step}_ended_at": None,
            f"{step}_error": "",
        }
    )
    return (
        Revision.objects.select_related("competitor__environment").get(pk=revision_id)
        if updated
        else None
    )


def revision_step_finish(
    *, revision: Revision, step: str, succeeded: bool, error: str = "", log: str = ""
) -> None:
    from django.utils import timezone

    Revision.objects.filter(pk=revision.pk).update(
        **{
            f"{step}_status": StepStatus.SUCCEEDED if succeeded else StepStatus.FAILED,
            f"{step}_ended_at": timezone.now(),
            f"{step}_error": error,
            f"{step}_log": log,
        }
    )
    revision.refresh_from_db()


def revision_requeue(*, revision: Revision, steps: tuple[str, ...]) -> None:
    """Queue steps again (an organizer's rebuild, revalidation, re-publication); start the first."""
    fields: dict[str, object] = {}
    for step in steps:
        fields.update(
            {
                f"{step}_status": StepStatus.QUEUED,
                f"{step}_started_at": None,
                f"{step}_ended_at": None,
                f"{step}_error": "",
            }
        )
    Revision.objects.filter(pk=revision.pk).update(**fields)
    first = steps[0]
    service = {
        "build": "builder.tasks.build_revision",
        "validation": "duel_runner.tasks.validate_revision",
        "publication": "publisher.tasks.publish_revision",
    }[first]
    dispatch.start(service, revision_id=revision.pk)


def environments_import() -> list[Environment]:
    """Create or update an Environment row for every game folder's ``info.yml``."""
    from environments.registry import environment_names, load_info

    imported = []
    for name in environment_names():
        info = load_info(name)
        environment, _ = Environment.objects.update_or_create(
            name=name,
            defaults={
                "title": info.title,
                "description": info.description,
                "rules": info.rules,
                "players": info.players,
                "matches_per_duel": info.matches_per_duel,
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
