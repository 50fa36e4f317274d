from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path, reverse_lazy
from django.views import View

from web.forms import EmailAuthenticationForm
from web.views import (
    accounts,
    competitions,
    competitors,
    docs,
    environments,
    llm,
    play,
    scores,
    submissions,
    tournaments,
)

ENVIRONMENT = "environments/<slug:name>/"
COMPETITOR = "environments/<slug:environment_name>/competitors/<slug:name>/"
REVISION = "environments/<slug:environment_name>/competitors/<slug:competitor_name>/v<int:version>/"
COMPETITION = "c/<slug:slug>/"
TEAM = COMPETITION + "team/"
DUEL = "duels/<int:pk>/"
MATCH = "duels/<int:duel_pk>/matches/<int:index>/"
EVALUATION = "evaluations/<int:pk>/"


def _account_page(route: str, view: type[View[Any]], name: str, **options: Any) -> URLPattern:
    """One of Django's account views at ``accounts/<route>``, with Arena's template
    ``web/accounts/<name>.html`` unless ``options`` names another."""
    options.setdefault("template_name", f"web/accounts/{name}.html")
    return path(f"accounts/{route}", view.as_view(**options), name=name)


urlpatterns = [
    path("", environments.home, name="home"),
    # Where browsers and feed readers look without a page's <link rel="icon">.
    path("favicon.ico", environments.favicon, name="favicon"),
    path(ENVIRONMENT, environments.environment, name="environment"),
    path(ENVIRONMENT + "leaderboard/", environments.leaderboard, name="leaderboard"),
    path(ENVIRONMENT + "starter-agent/", environments.starter, name="starter_agent"),
    path(
        ENVIRONMENT + "online-models/", environments.online_model_create, name="online_model_create"
    ),
    path(ENVIRONMENT + "llm-players/", llm.llm_player_create, name="llm_player_create"),
    path(
        ENVIRONMENT + "static/<str:filename>",
        environments.environment_static,
        name="environment_static",
    ),
    path(COMPETITOR, submissions.competitor, name="competitor"),
    path(COMPETITOR + "llm/", llm.llm_player_edit, name="llm_player_edit"),
    path(COMPETITOR + "move-logs/", competitors.move_logs, name="competitor_move_logs"),
    path(COMPETITOR + "visibility/", competitors.visibility, name="competitor_visibility"),
    path(COMPETITOR + "play-state/", competitors.play_state, name="competitor_play_state"),
    path(COMPETITOR + "delete/", competitors.remove, name="competitor_delete"),
    path(COMPETITOR + "test-duels/", competitors.test_duel, name="competitor_test_duel"),
    path(COMPETITOR + "final/", competitors.final, name="competitor_final"),
    path(COMPETITOR + "revalidate/", competitors.revalidate, name="competitor_revalidate"),
    path(COMPETITOR + "play/", play.play_start, name="play_start"),
    path(DUEL + "play/", play.play, name="play"),
    path(DUEL + "rematch/", play.play_rematch, name="play_rematch"),
    path("games/", play.games, name="my_games"),
    path(REVISION, submissions.revision, name="revision"),
    path(REVISION + "source", submissions.revision_source, name="revision_source"),
    path("c/", competitions.competition_list, name="competitions"),
    path(COMPETITION, competitions.competition, name="competition"),
    path(COMPETITION + "teams/", competitions.team_new, name="competition_team_create"),
    path(TEAM + "invitations/", competitions.team_invite, name="competition_invite"),
    path(TEAM + "leave/", competitions.team_quit, name="competition_team_leave"),
    path(TEAM + "rename/", competitions.team_name_change, name="competition_team_rename"),
    path(
        TEAM + "invitations/<int:pk>/revoke/",
        competitions.invitation_withdraw,
        name="competition_invitation_revoke",
    ),
    path(
        COMPETITION + "invitations/<int:pk>/accept/",
        competitions.invitation_take,
        name="competition_invitation_accept",
    ),
    path(COMPETITION + "join/", competitions.join, name="competition_join"),
    path(COMPETITION + "uploads/", competitions.upload, name="competition_upload"),
    path("tournaments/<int:pk>/", tournaments.tournament, name="tournament"),
    path(DUEL, tournaments.duel, name="duel"),
    path("scores/<int:pk>/", scores.score_competition, name="score_competition"),
    path("scores/<int:pk>/entries/", scores.score_entry, name="score_entry"),
    path("scores/<int:pk>/entries/withdraw/", scores.score_entry_remove, name="score_entry_remove"),
    path(EVALUATION, scores.evaluation, name="evaluation"),
    path(
        EVALUATION + "conversations.jsonl",
        scores.evaluation_conversations,
        name="evaluation_conversations",
    ),
    path(EVALUATION + "episodes/<int:index>/", scores.episode, name="evaluation_episode"),
    path(MATCH, tournaments.match, name="match"),
    path(DUEL + "conversations.jsonl", llm.duel_conversations, name="duel_conversations"),
    path(MATCH + "conversations.jsonl", llm.match_conversations, name="match_conversations"),
    path("docs/", docs.docs, name="docs"),
    path("docs/<path:path>", docs.docs, name="docs_page"),
    path("llm/", llm.llm_index, name="llm_index"),
    # A model's name may hold slashes (``org/model``): the rest of the path is the name.
    path("llm/models/<path:model>/", llm.llm_model, name="llm_model"),
    path("accounts/register/", accounts.register, name="register"),
    path("accounts/profile/", accounts.profile, name="profile"),
    path("accounts/tokens/", accounts.token_create, name="token_create"),
    path("accounts/tokens/<int:pk>/revoke/", accounts.token_revoke, name="token_revoke"),
    # Accounts: Django's views, with Arena's templates.
    _account_page(
        "login/",
        auth_views.LoginView,
        "login",
        authentication_form=EmailAuthenticationForm,
        redirect_authenticated_user=True,
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    _account_page(
        "password/change/",
        auth_views.PasswordChangeView,
        "password_change",
        success_url=reverse_lazy("password_change_done"),
    ),
    _account_page(
        "password/change/done/", auth_views.PasswordChangeDoneView, "password_change_done"
    ),
    _account_page(
        "password/reset/",
        auth_views.PasswordResetView,
        "password_reset",
        template_name="web/accounts/password_reset_form.html",
        email_template_name="web/accounts/password_reset_email.txt",
        subject_template_name="web/accounts/password_reset_subject.txt",
        success_url=reverse_lazy("password_reset_done"),
    ),
    _account_page("password/reset/sent/", auth_views.PasswordResetDoneView, "password_reset_done"),
    _account_page(
        "password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView,
        "password_reset_confirm",
        success_url=reverse_lazy("password_reset_complete"),
    ),
    _account_page(
        "password/reset/complete/", auth_views.PasswordResetCompleteView, "password_reset_complete"
    ),
]
