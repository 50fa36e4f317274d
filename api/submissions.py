"""Your submissions (the revisions of your competitors): upload, list, read, delete.
Needs a token with the ``submit`` scope. An upload goes through the site's own service
(``core.services.revisions.revision_upload``): the same checks, then the same build and validation.
"""

from __future__ import annotations

from typing import Annotated

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import (
    File,
    FilterLookup,
    FilterSchema,
    Form,
    Query,
    Schema,
    Status,
    UploadedFile,
)
from ninja.errors import HttpError

from api import auth
from api.competitors import Deletion, RevisionDetailOut, RevisionOut
from api.environments import environment_named
from api.errors import documented
from api.limits import takes_upload
from api.pagination import paginated
from api.params import Id, Slug
from api.selectors import submissions_of
from core.models import Revision, StepStatus
from core.services.revisions import RevisionDeletion, revision_delete, revision_upload
from reads.access import AuthenticatedHttpRequest, get_own_revision
from reads.competitions import get_competition_for_user

router = auth.ArenaRouter(tags=["submissions"], auth=auth.submit)


class SubmissionIn(Schema):
    environment: Slug
    #: Your competitor's name: a new one is created, an existing one of yours gets a new
    #: revision. Letters, digits, hyphens and underscores.
    competitor: Slug
    #: Applies when the competitor is created: anyone may then see its code (its logs only
    #: once you share them, ``share_logs``).
    is_public: bool = False
    #: A competition over ``environment`` (its slug): the upload is your team's, within
    #: the competition's limits (a team of one is made for you if you have none).
    competition: Slug | None = None


class DeletionOut(Deletion):
    #: The withdrawn revision; None once erased (with its self-play).
    submission: RevisionOut | None = None

    @staticmethod
    def resolve_message(deletion: RevisionDeletion) -> str:
        if deletion.erased:
            return "Erased, with its validation duel and its uploaded file."
        return (
            f"Withdrawn rather than erased: {deletion.reason}. It plays no more, and what it "
            "played stays."
        )

    @staticmethod
    def resolve_submission(deletion: RevisionDeletion) -> Revision | None:
        return deletion.kept


class SubmissionFilters(FilterSchema):
    environment: Annotated[Slug | None, FilterLookup("competitor__environment__name")] = None
    competitor: Annotated[Slug | None, FilterLookup("competitor__name")] = None
    build_status: StepStatus | None = None
    validation_status: StepStatus | None = None
    is_disabled: bool | None = None


def _refuse_oversized(file: UploadedFile) -> None:
    # Checked before the file is read into memory, as the site's form does; 413 rather
    # than the service's 422, since it is the size alone.
    limit = settings.ARENA_UPLOAD_MAX_BYTES
    if file.size is not None and file.size > limit:
        raise HttpError(413, f"The file is {file.size:,} bytes; at most {limit:,} are allowed.")


@router.post("/submissions", response=documented({201: RevisionOut}, 400, 404, 413))
@takes_upload
def submission_create(
    request: AuthenticatedHttpRequest, submission: Form[SubmissionIn], file: File[UploadedFile]
) -> Status[Revision]:
    """Upload an agent: a new revision of your competitor

    A multipart form: `environment`, `competitor`, `is_public` and `file` (a single `.py`
    file, or a `.zip` with `main.py`, `agent.py` or an executable named `agent` at its top).
    The revision is then built and validated by self-play, as an upload on the site is:
    follow its `build` and `validation`. A refused upload (`upload_rejected`, 422; a file
    over the size limit, 413; a name another user has, 400) stores nothing.

    With `competition` (a competition's slug), the upload is your team's agent in it (a
    team of one is made for you if you are in none): refused (`upload_rejected`, 422)
    before the competition opens, while its uploads are closed, or over its daily or
    total limit, the message saying when the next upload is allowed.
    """
    _refuse_oversized(file)
    competition = None
    if submission.competition is not None:
        competition = get_competition_for_user(request.user, submission.competition)
    revision = revision_upload(
        owner=request.user,
        environment=environment_named(submission.environment),
        competitor_name=submission.competitor,
        is_public=submission.is_public,
        filename=file.name or "",
        content=file.read(),
        competition=competition,
    )
    return Status(201, revision)


@router.get("/submissions", response=documented({200: list[RevisionOut]}))
@paginated
def submissions_list(
    request: AuthenticatedHttpRequest, filters: Query[SubmissionFilters]
) -> QuerySet[Revision]:
    """Your submissions, newest first"""
    return filters.filter(submissions_of(request.user))


@router.get("/submissions/{submission_id}", response=documented({200: RevisionDetailOut}, 404))
def submission_detail(request: HttpRequest, submission_id: Id) -> Revision:
    """One of your submissions, with its logs"""
    return get_own_revision(request.user, submission_id)


@router.delete("/submissions/{submission_id}", response=documented({200: DeletionOut}, 404))
def submission_delete(request: HttpRequest, submission_id: Id) -> RevisionDeletion:
    """Delete one of your submissions

    Erases it when nothing but its own validation refers to it: the revision, its self-play
    and its file go (and the competitor, when it was its last revision, freeing the name). A
    revision that is entered in a tournament, played duels against others, is on the
    leaderboard or changed ratings, or that a worker is building or validating right now, is
    withdrawn instead: disabled, so it plays no more, while everything it played stays for
    its opponents.
    """
    return revision_delete(revision=get_own_revision(request.user, submission_id))
