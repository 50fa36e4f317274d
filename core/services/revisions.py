"""Competitors and their revisions: uploads made into revisions, their build and
validation queued, rebuilt, re-validated and deleted."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Literal

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Max

from core.errors import ArenaError
from core.jobs.lifecycle import idle, job_done, job_reset, jobs_queue
from core.models import (
    Competition,
    Competitor,
    Duel,
    Environment,
    JobKind,
    LeaderboardEntry,
    Participant,
    RatingChange,
    Revision,
    StepStatus,
    Team,
    User,
)
from core.models.submissions import STEPS
from core.services.competitions import upload_refusal as competition_upload_refusal
from core.services.confinement import upload_refusal
from core.services.teams import team_for
from core.services.uploads import (
    UploadLimits,
    UploadRejected,
    inspect_upload,
    upload_content_release,
    upload_content_store,
    upload_limits,
)


def competitor_get_or_create(
    *,
    owner: User,
    environment: Environment,
    name: str,
    is_public: bool = False,
    team: Team | None = None,
) -> Competitor:
    """The competitor of that name that ``owner`` manages (theirs, or their team's),
    created if new (entered in ``team``'s competition with a team); another's name is
    refused, as is one outside the team's competition."""
    competitor, created = Competitor.objects.get_or_create(
        environment=environment,
        name=name,
        defaults={"owner": owner, "is_public": is_public, "team": team},
    )
    if not created and not competitor.is_managed_by(owner):
        raise ArenaError(f"the name {name!r} is taken in {environment.title}; choose another name")
    if not created and team is not None and competitor.team_id != team.pk:
        raise ArenaError(
            f"{name} is not entered in {team.competition.title}; choose another name for "
            "the competition's agent"
        )
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
        raise UploadRejected(competitor.disabled_message)
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
    refusal = upload_refusal(uploaded_by)
    if refusal:
        raise UploadRejected(refusal)
    summary = inspect_upload(filename, content, limits or upload_limits())
    sha256 = hashlib.sha256(content).hexdigest()
    with transaction.atomic():
        # The row lock serialises concurrent uploads, so versions never collide.
        Competitor.objects.select_for_update().get(pk=competitor.pk)
        closed = competition_upload_refusal(competitor)
        if closed:
            raise UploadRejected(closed)
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
        jobs_queue(kind=JobKind.BUILD, subject_ids=[revision.pk])
        # Sent when the build succeeds.
        jobs_queue(kind=JobKind.VALIDATION, subject_ids=[revision.pk], send=False)
    return revision


def revision_create_unbuilt(
    *, competitor: Competitor, created_by: User, build_log: str, validation_log: str = ""
) -> Revision:
    """The next version of a competitor whose agent Arena does not build (an online agent,
    an LLM player): ``build_log`` says why there was nothing to build. With
    ``validation_log``, nothing to validate either (it is checked as it plays): the
    revision is ready to play at once; without, its validation is queued (an LLM player's
    one request to its server, ``duel_runner.validation``). Its leaderboard entry starts
    afresh, as an upload's does."""
    if competitor.is_disabled:
        raise ArenaError(competitor.disabled_message)
    with transaction.atomic():
        # The row lock serialises concurrent versions, as for uploads.
        Competitor.objects.select_for_update().get(pk=competitor.pk)
        latest = competitor.revisions.aggregate(latest=Max("version"))["latest"] or 0
        revision = Revision.objects.create(
            competitor=competitor,
            version=latest + 1,
            uploaded_by=created_by,
            filename="",
            sha256="",
            size=0,
            entry_point="",
        )
        job_done(kind=JobKind.BUILD, subject_id=revision.pk, log=build_log)
        if validation_log:
            job_done(kind=JobKind.VALIDATION, subject_id=revision.pk, log=validation_log)
        else:
            Revision.objects.filter(pk=revision.pk).update(validation_status=StepStatus.QUEUED)
            jobs_queue(kind=JobKind.VALIDATION, subject_ids=[revision.pk])
    revision.refresh_from_db()
    return revision


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


def revision_requeue(*, revision: Revision, steps: tuple[str, ...]) -> None:
    """Queue steps again whatever their state (re-publication, the demo): the first is
    started, the others wait for the one before them."""
    with transaction.atomic():
        for number, step in enumerate(steps):
            job_reset(kind=step, subject_id=revision.pk, send=number == 0)
    revision.refresh_from_db()


#: What ``revision_create_or_reuse`` did: uploaded the bytes, found them uploaded before,
#: or found them uploaded before and queued their build and validation again.
Reuse = Literal["created", "reused", "requeued"]


def revision_create_or_reuse(
    *, competitor: Competitor, uploaded_by: User, filename: str, content: bytes
) -> tuple[Revision, Reuse]:
    """The competitor's revision with these bytes: its newest one that has them, built and
    validated again if that failed, was cut short, or its build folder was removed since
    (a disabled one is left as it is); or a new upload (``revision_create``). A build and
    validation start once the transaction commits."""
    sha256 = hashlib.sha256(content).hexdigest()
    revision = competitor.revisions.filter(sha256=sha256).order_by("-version").first()
    done: Reuse = "reused"
    if revision is None:
        revision = revision_create(
            competitor=competitor, uploaded_by=uploaded_by, filename=filename, content=content
        )
        done = "created"
    elif not revision.is_disabled and (not revision.is_valid or not revision.build_dir.is_dir()):
        revision_requeue(revision=revision, steps=("build", "validation"))
        done = "requeued"
    revision.refresh_from_db()
    return revision, done


def _hosted_only(revision: Revision) -> None:
    competitor = revision.competitor
    if not competitor.is_hosted:
        raise ArenaError(
            f"{competitor.name} is {competitor.get_kind_display().lower()}: Arena has nothing "
            "to build or self-play; it is checked as it plays"
        )


def revision_rebuild(*, revision: Revision) -> bool:
    """An organizer's rebuild: build, then validate again. Returns whether it was queued.

    The build must not be queued or held by a live worker, nor the validation running; a
    step whose worker died (its lease ran out) may be rebuilt at once. Conditional
    UPDATEs decide, so of two organizers clicking at once one acts.
    """
    _hosted_only(revision)
    rebuilt = job_reset(kind=JobKind.BUILD, subject_id=revision.pk, when=idle())
    revision.refresh_from_db()
    return rebuilt


def revision_revalidate(*, revision: Revision) -> bool:
    """A re-validation of a built revision (an organizer's, or its owner's when ladders
    paused it); whether it acted. An upload's is self-play again; an LLM player's, one
    request to its server (``llm.probe``), as when it was registered. An online model has
    none: it is checked as it plays."""
    competitor = revision.competitor
    if not (competitor.is_hosted or competitor.is_llm):
        raise ArenaError(
            f"{competitor.name} is {competitor.get_kind_display().lower()}: it has no "
            "validation; it is checked as it plays"
        )
    # Only once built: the validation waits for its build (``core.jobs``).
    revalidated = job_reset(kind=JobKind.VALIDATION, subject_id=revision.pk, when=idle())
    revision.refresh_from_db()
    return revalidated


def revision_upload(
    *,
    owner: User,
    environment: Environment,
    competitor_name: str,
    is_public: bool,
    filename: str,
    content: bytes,
    competition: Competition | None = None,
) -> Revision:
    """The next revision of the owner's competitor, created with the competitor if new
    (for ``competition``: entered by the owner's team, a team of one made if they have
    none).

    One transaction: when the upload is refused (ArenaError, UploadRejected) a competitor
    created for it disappears too, so a refused upload leaves no row behind. The build
    starts once the transaction commits.
    """
    with transaction.atomic():
        team = None
        if competition is not None:
            if competition.environment_id != environment.pk:
                raise ArenaError(f"{competition.title} is played in {competition.environment}")
            team = team_for(user=owner, competition=competition)
        competitor = competitor_get_or_create(
            owner=owner,
            environment=environment,
            name=competitor_name,
            is_public=is_public,
            team=team,
        )
        return revision_create(
            competitor=competitor,
            uploaded_by=owner,
            filename=filename,
            content=content,
            limits=upload_limits(),
        )


@dataclasses.dataclass(frozen=True)
class RevisionDeletion:
    #: The withdrawn (disabled) revision; None once it is erased.
    kept: Revision | None
    #: Why it was withdrawn rather than erased ("" when erased).
    reason: str

    @property
    def erased(self) -> bool:
        return self.kept is None


def _why_kept(revision: Revision) -> str:
    """Why erasing the revision would lose someone else's data, or break a worker; ''
    when nothing but its own validation refers to it."""
    if any(getattr(revision, f"{step}_status") == StepStatus.RUNNING for step in STEPS):
        # The worker holding the step would write to a row that is gone.
        return "a worker is building, validating or publishing it"
    if Participant.objects.filter(revision=revision).exists():
        return "it is entered in a tournament (its standings keep it)"
    if Duel.objects.of_revision(revision).filter(is_validation=False).exists():
        return "it played duels (its opponents' results and replays keep it)"
    if revision.evaluations.filter(is_validation=False).exists():
        return "it played in a score competition (its leaderboard keeps it)"
    if LeaderboardEntry.objects.filter(revision=revision).exists():
        return "it is on the leaderboard"
    if RatingChange.objects.filter(duel__in=Duel.objects.of_revision(revision)).exists():
        return "its matches changed ratings"
    return ""


def revision_delete(*, revision: Revision) -> RevisionDeletion:
    """The owner's delete: erase a revision nothing else depends on, else withdraw it.

    Erased: the row, its validation duels (self-play, with their matches) and its stored
    upload; the competitor too when it has no revision left, which frees its name. A
    revision that other rows keep (tournaments, duels against others, the leaderboard,
    rating changes), or whose step a worker holds, is disabled instead: it plays no more
    and leaves the tournaments it is in (the tournament manager withdraws it), while
    everything it played stays. Deleting a withdrawn revision again erases it once nothing
    keeps it any more.
    """
    with transaction.atomic():
        # Locked, so that between the checks below and the delete no worker claims a step
        # of it (claims are UPDATEs of this row), no duel or entry comes to refer to it (a
        # foreign key check waits on the lock), and no upload adds a revision to the
        # competitor (uploads lock the competitor's row).
        revision = (
            Revision.objects.select_for_update(of=("self", "competitor"))
            .select_related("competitor__environment", "competitor__owner")
            .get(pk=revision.pk)
        )
        reason = _why_kept(revision)
        if reason:
            Revision.objects.filter(pk=revision.pk).update(is_disabled=True)
            revision.is_disabled = True
            return RevisionDeletion(kept=revision, reason=reason)
        upload, storage = revision.source.name, revision.source.storage
        content = revision.upload_id
        competitor = revision.competitor
        Duel.objects.of_revision(revision).filter(is_validation=True).delete()
        # A one-player game's revision is validated by an evaluation instead.
        revision.evaluations.filter(is_validation=True).delete()
        revision.delete()
        if not competitor.revisions.exists():
            competitor.delete()
        if upload:
            transaction.on_commit(lambda: storage.delete(upload))
        if content:
            # Other revisions may share the same bytes: they go with the last of them.
            transaction.on_commit(lambda: upload_content_release(sha256=content))
    return RevisionDeletion(kept=None, reason="")
