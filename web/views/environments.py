from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, load_info
from web.access import get_environment
from web.forms import SubmissionForm
from web.selectors import environment_page, home_page
from web.views.submissions import upload_from_form


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    page = home_page(user=request.user)
    return render(request, "web/home.html", {"page": page})


@require_http_methods(["GET", "POST"])
def environment(request: HttpRequest, name: str) -> HttpResponse:
    environment = get_environment(name)
    form = SubmissionForm()
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        form = SubmissionForm(request.POST, request.FILES)
        revision = upload_from_form(request, form, environment=environment)
        if revision is not None:
            return redirect(revision)
    page = environment_page(user=request.user, environment=environment)
    return render(
        request,
        "web/environment.html",
        {"page": page, "environment": environment, "form": form},
        status=400 if form.errors else 200,
    )


@require_GET
def environment_static(request: HttpRequest, name: str, filename: str) -> FileResponse:
    """A game's replay stylesheet, from ``environments/<name>/static/`` (CSS only)."""
    try:
        folder = load_info(name).static_dir.resolve()
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        raise Http404("No such environment") from None
    path = (folder / filename).resolve()
    if path.suffix != ".css" or path.parent != folder or not path.is_file():
        raise Http404("No such stylesheet")
    response = FileResponse(path.open("rb"), content_type="text/css; charset=utf-8")
    response["Cache-Control"] = "public, max-age=3600"
    return response
