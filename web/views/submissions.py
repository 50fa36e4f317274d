from __future__ import annotations

import io
import mimetypes

from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_http_methods

from core.errors import ArenaError, sentence
from core.models import Competitor, Environment, Revision, User
from core.services.revisions import revision_upload
from core.services.uploads import UploadUnavailable, revision_upload_read
from reads.access import (
    get_competitor_for_user,
    get_own_competitor,
    get_revision_for_user,
)
from reads.competitions import competitor_finals
from reads.competitors import competitor_page
from reads.llm import player_stats
from reads.scores import revision_validation_evaluation
from reads.selectors import revision_page
from web.forms import LLMSettingsForm, MoveLogsForm, UploadForm
from web.page_cache import cached_for_visitors


def upload_from_form(
    request: HttpRequest,
    form: UploadForm,
    *,
    environment: Environment,
    competitor: Competitor | None = None,
) -> Revision | None:
    """Store a valid upload form's file as a new revision, or put the refusal on the form.

    Without ``competitor`` the form names it (the environment page's SubmissionForm).
    Its callers let only a signed-in user through: the uploader or the competitor's owner.
    """
    owner = request.user
    assert isinstance(owner, User)
    if not form.is_valid():
        return None
    try:
        revision = revision_upload(
            owner=owner,
            environment=environment,
            competitor_name=competitor.name if competitor else form.cleaned_data["name"],
            is_public=competitor.is_public if competitor else form.cleaned_data["is_public"],
            filename=form.cleaned_data["file"].name,
            content=form.content(),
        )
    except ArenaError as error:
        form.add_error(None, sentence(error.message))
        return None
    messages.success(request, f"Uploaded {revision}.")
    return revision


@require_http_methods(["GET", "POST"])
@cached_for_visitors
def competitor(request: HttpRequest, environment_name: str, name: str) -> HttpResponse:
    competitor = get_competitor_for_user(request.user, environment_name, name)
    form = UploadForm()
    if request.method == "POST":
        competitor = get_own_competitor(request.user, environment_name, name)
        form = UploadForm(request.POST, request.FILES)
        revision = upload_from_form(
            request,
            form,
            environment=competitor.environment,
            competitor=competitor,
        )
        if revision is not None:
            return redirect(revision)
    return render_competitor(request, competitor, form=form)


def render_competitor(
    request: HttpRequest,
    competitor: Competitor,
    *,
    form: UploadForm | None = None,
    llm_form: LLMSettingsForm | None = None,
    logs_form: MoveLogsForm | None = None,
) -> HttpResponse:
    """The competitor's page; an LLM player's shows its settings, statistics and (to its
    owner) the form that changes them."""
    form = form or UploadForm()
    if competitor.is_llm and llm_form is None:
        llm_form = llm_settings_form(competitor)
    page = competitor_page(
        user=request.user,
        competitor=competitor,
        revisions_page=request.GET.get("revisions"),
        tournaments_page=request.GET.get("tournaments"),
        duels_page=request.GET.get("duels"),
    )
    response = render(
        request,
        "web/competitor.html",
        {
            "page": page,
            "competitor": competitor,
            "finals": competitor_finals(user=request.user, competitor=competitor),
            "form": form,
            "llm_form": llm_form,
            "logs_form": logs_form or MoveLogsForm(initial={"share_logs": competitor.share_logs}),
            "test_duels_per_hour": settings.ARENA_TEST_DUELS_PER_HOUR,
            "llm_stats": player_stats(user=request.user, competitor=competitor)
            if competitor.is_llm
            else [],
        },
        status=400
        if form.errors or any(other is not None and other.errors for other in (llm_form, logs_form))
        else 200,
    )
    if competitor.is_online:
        # Whether its client is connected is the seat bus's, not the database's: no write
        # tells the pages' cache it changed.
        patch_cache_control(response, no_cache=True)
    return response


def llm_settings_form(competitor: Competitor) -> LLMSettingsForm:
    """The edit form, filled in with the player's settings (never its key)."""
    player = competitor.llm
    initial = {
        name: getattr(player, name)
        for name in LLMSettingsForm.base_fields
        if name not in ("api_key", "is_public")
    }
    return LLMSettingsForm(
        initial={**initial, "is_public": competitor.is_public}, has_key=player.has_key
    )


@require_GET
def revision(
    request: HttpRequest, environment_name: str, competitor_name: str, version: int
) -> HttpResponse:
    revision = get_revision_for_user(request.user, environment_name, competitor_name, version)
    page = revision_page(user=request.user, revision=revision)
    return render(
        request,
        "web/revision.html",
        {
            "page": page,
            "revision": revision,
            "validation_evaluation": revision_validation_evaluation(revision),
        },
    )


@require_GET
def revision_source(
    request: HttpRequest, environment_name: str, competitor_name: str, version: int
) -> FileResponse:
    revision = get_revision_for_user(request.user, environment_name, competitor_name, version)
    try:
        content = revision_upload_read(revision=revision)
    except UploadUnavailable:
        raise Http404("The uploaded file is no longer stored") from None
    content_type = mimetypes.guess_type(revision.filename)[0] or "application/octet-stream"
    return FileResponse(
        io.BytesIO(content),
        as_attachment=True,
        filename=revision.filename,
        content_type=content_type,
    )
