from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ArenaError, sentence
from core.services.accounts import api_token_create, api_token_revoke, user_register
from reads.access import AuthenticatedHttpRequest, get_own_token
from reads.selectors import profile_page
from web.forms import ProfileForm, RegistrationForm, TokenForm
from web.page_cache import render_secret


@require_http_methods(["GET", "POST"])
def register(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("profile")
    form = RegistrationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_register(
                code=form.cleaned_data["invite_code"],
                email=form.cleaned_data["email"],
                display_name=form.cleaned_data["display_name"],
                team=form.cleaned_data["team"],
                password=form.cleaned_data["password1"],
            )
        except ArenaError as error:
            form.add_error(None, sentence(error.message))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(
                request,
                f"Welcome, {user.display_name}! Your account is ready. Next: pick a game below, "
                "download its starter agent, and upload it: it is validated at once, then "
                "rated in the game's ladder.",
            )
            return redirect("home")
    return render(
        request,
        "web/accounts/register.html",
        {"form": form},
        status=400 if form.errors else 200,
    )


def _render_profile(
    request: AuthenticatedHttpRequest,
    profile_form: ProfileForm,
    token_form: TokenForm,
    status: int = 200,
) -> HttpResponse:
    page = profile_page(user=request.user)
    return render(
        request,
        "web/accounts/profile.html",
        {"page": page, "profile_form": profile_form, "token_form": token_form},
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ProfileForm(request.POST or None, instance=request.user)
    if request.method == "POST":
        if form.is_valid():
            form.save()
            messages.success(request, "Your profile is saved.")
            return redirect("profile")
        return _render_profile(request, form, TokenForm(), status=400)
    return _render_profile(request, form, TokenForm())


@login_required
@require_POST
def token_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            token, secret = api_token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
            )
        except ArenaError as error:
            form.add_error("name", sentence(error.message))
        else:
            return render_secret(
                request, "web/accounts/token_created.html", {"token": token, "secret": secret}
            )
    return _render_profile(request, ProfileForm(instance=request.user), form, status=400)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_own_token(request.user, pk)
    api_token_revoke(token=token)
    messages.success(request, f"The token {token.name} is revoked: it no longer works.")
    return redirect("profile")
