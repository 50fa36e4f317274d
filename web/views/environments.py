from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
)
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import ArenaError, sentence
from core.models import Environment
from core.services.online import online_model_register
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, load_info
from llm.prompts import HARNESS_VERSION
from reads.access import AuthenticatedHttpRequest, get_environment
from reads.scores import environment_score_competitions
from reads.selectors import environment_page, home_page, leaderboard_page
from web.forms import LLMPlayerForm, OnlineModelForm, SubmissionForm
from web.page_cache import cached_for_visitors, render_secret
from web.views.submissions import upload_from_form


@require_GET
@cached_for_visitors
def home(request: HttpRequest) -> HttpResponse:
    page = home_page(user=request.user)
    return render(request, "web/home.html", {"page": page})


@require_http_methods(["GET", "POST"])
@cached_for_visitors
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
    return render_environment(request, environment, form=form)


def render_environment(
    request: HttpRequest,
    environment: Environment,
    *,
    form: SubmissionForm | None = None,
    online_form: OnlineModelForm | None = None,
    llm_form: LLMPlayerForm | None = None,
) -> HttpResponse:
    """The environment page, with the forms as given (a refused one shows its errors)."""
    forms = {
        "form": form or SubmissionForm(),
        "online_form": online_form or OnlineModelForm(),
        "llm_form": llm_form or LLMPlayerForm(),
    }
    page = environment_page(
        user=request.user,
        environment=environment,
        tournaments_page=request.GET.get("tournaments"),
    )
    return render(
        request,
        "web/environment.html",
        {
            "page": page,
            "environment": environment,
            "harness_version": HARNESS_VERSION,
            "has_starter": starter_path(environment) is not None,
            "score_competitions": environment_score_competitions(
                user=request.user, environment=environment
            ),
            **forms,
        },
        status=400 if any(form.errors for form in forms.values()) else 200,
    )


@require_GET
@cached_for_visitors
def leaderboard(request: HttpRequest, name: str) -> HttpResponse:
    """The whole published leaderboard, a page at a time (``?page=N``). A one-player game
    has none: its agents are ranked by its score competitions, which the page points to
    (it leads straight to the only one)."""
    environment = get_environment(name)
    if environment.players == 1:
        competitions = environment_score_competitions(user=request.user, environment=environment)
        if len(competitions) == 1:
            return redirect(competitions[0])
        return render(
            request,
            "web/leaderboard.html",
            {"environment": environment, "score_competitions": competitions},
        )
    page = leaderboard_page(
        user=request.user, environment=environment, number=request.GET.get("page")
    )
    return render(request, "web/leaderboard.html", {"page": page, "environment": environment})


@login_required
@require_POST
def online_model_create(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    """Register an online model and show its token, once."""
    environment = get_environment(name)
    form = OnlineModelForm(request.POST)
    if form.is_valid():
        try:
            competitor, secret = online_model_register(
                owner=request.user,
                environment=environment,
                name=form.cleaned_data["name"],
                is_public=form.cleaned_data["is_public"],
            )
        except ArenaError as error:
            form.add_error("name", sentence(error.message))
        else:
            return render_secret(
                request,
                "web/online_model_created.html",
                {"competitor": competitor, "secret": secret},
            )
    return render_environment(request, environment, online_form=form)


#: What a game's ``static/`` folder may serve: its board's styles and drawer.
STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}


@require_GET
def environment_static(request: HttpRequest, name: str, filename: str) -> FileResponse:
    """A game's board stylesheet or drawer script, from its ``static/`` folder (CSS and
    JavaScript only): a built-in game's by its folder name, an OpenSpiel game's by its
    environment's name."""
    added = Environment.objects.filter(name=name).exclude(spec="").first()
    try:
        folder = load_info(added.spec if added else name).static_dir.resolve()
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        raise Http404("No such environment") from None
    path = (folder / filename).resolve()
    content_type = STATIC_TYPES.get(path.suffix)
    if content_type is None or path.parent != folder or not path.is_file():
        raise Http404("No such file")
    response = FileResponse(path.open("rb"), content_type=content_type)
    response["Cache-Control"] = "public, max-age=3600"
    return response


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """The site's icon (``web/favicon.svg``; pages name it), where browsers and feed
    readers look when nothing names it. Resolved per request: the static files' names are
    known once they are collected."""
    return HttpResponsePermanentRedirect(static("web/favicon.svg"))


#: The reference players shipped with Arena; a game's ``random_player.py`` is its starter.
EXAMPLE_PLAYERS = Path(settings.BASE_DIR) / "example_players"


def starter_path(environment: Environment) -> Path | None:
    """The starter agent of ``environment``: its reference random player (an OpenSpiel
    game's is the one for every OpenSpiel game), or None if it has none."""
    folder = "openspiel" if environment.spec else environment.name
    path = EXAMPLE_PLAYERS / folder / "random_player.py"
    return path if path.is_file() else None


@require_GET
def starter(request: HttpRequest, name: str) -> HttpResponseBase:
    """The starter agent, to download: a legal random player on the SDK, to edit."""
    environment = get_environment(name)
    path = starter_path(environment)
    if path is None:
        raise Http404(f"{environment.title} has no starter agent")
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=f"{environment.name}_agent.py",
        content_type="text/x-python",
    )
