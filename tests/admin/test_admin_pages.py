from __future__ import annotations

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone

from core.models import (
    Competition,
    CompetitionPhase,
    Competitor,
    Match,
    MatchLog,
    Team,
    TeamMember,
    Tournament,
    User,
)
from tests.factories import (
    ApiTokenFactory,
    DuelFactory,
    EvaluationFactory,
    LeaderboardEntryFactory,
    LLMPlayerFactory,
    MatchConversationFactory,
    MatchFactory,
    ParticipantFactory,
    RatingChangeFactory,
    RevisionFactory,
    TournamentFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

# The apps' admin modules register with the URLconf, not at start (SimpleAdminConfig).
get_resolver().url_patterns  # noqa: B018
CORE_MODELS = [model for model in admin.site._registry if model._meta.app_label == "core"]


@pytest.fixture
def one_of_everything(alice: User, bob: User, organizer: User, invite: object) -> None:
    ApiTokenFactory(user=alice)
    tournament = TournamentFactory(created_by=organizer)
    ParticipantFactory(tournament=tournament)
    ParticipantFactory(tournament=tournament)
    duel = DuelFactory(tournament=tournament, finished=True)
    MatchFactory(duel=duel)
    DuelFactory(validation=True, finished=True)
    RatingChangeFactory(rating__competitor=alice.competitors.get())
    LeaderboardEntryFactory(revision=alice.competitors.get().revisions.get())
    MatchConversationFactory(match=MatchFactory(duel=duel, index=1))
    LLMPlayerFactory(competitor__owner=bob)
    EvaluationFactory(finished=True)
    cup = Competition.objects.create(
        environment=tournament.environment, slug="cup", title="Cup", created_by=organizer
    )
    CompetitionPhase.objects.create(competition=cup, name="development", starts_at=timezone.now())
    team = Team.objects.create(competition=cup, name="Blue", created_by=bob)
    TeamMember.objects.create(team=team, competition=cup, user=bob)
    RevisionFactory(competitor__team=team, competitor__owner=bob, validated=True)


def test_it_registers_every_core_model() -> None:
    names = {model.__name__ for model in CORE_MODELS}
    assert names >= {
        "User",
        "InviteCode",
        "ApiToken",
        "Environment",
        "Competitor",
        "Revision",
        "Tournament",
        "Duel",
        "Match",
        "Rating",
        "RatingChange",
        "LeaderboardEntry",
        "LLMPlayer",
        "MatchConversation",
        "ScoreCompetition",
        "Evaluation",
        "Competition",
        "Team",
    }


@pytest.mark.parametrize("model", CORE_MODELS, ids=lambda model: model.__name__)
def test_it_renders_the_list_and_a_change_page(
    organizer_client: Client, one_of_everything: None, model: type[Model]
) -> None:
    meta = model._meta
    listing = organizer_client.get(reverse(f"admin:core_{meta.model_name}_changelist"))
    assert listing.status_code == 200
    obj = model._default_manager.order_by("pk").first()
    assert obj is not None
    page = organizer_client.get(reverse(f"admin:core_{meta.model_name}_change", args=[obj.pk]))
    assert page.status_code == 200


def test_it_never_shows_a_token_hash(organizer_client: Client, alice: User) -> None:
    token = ApiTokenFactory(user=alice)
    page = organizer_client.get(reverse("admin:core_apitoken_change", args=[token.pk]))
    assert page.status_code == 200
    assert token.token_hash not in page.content.decode()
    assert token.hint in page.content.decode()


@pytest.mark.parametrize("url", ["admin:core_user_add", "admin:core_invitecode_add"])
def test_it_renders_the_add_pages(organizer_client: Client, url: str) -> None:
    assert organizer_client.get(reverse(url)).status_code == 200


def test_it_renders_the_tournament_form_before_and_after_the_environment_is_chosen(
    organizer_client: Client, alice: User, bob: User
) -> None:
    environment = alice.competitors.get().environment
    url = reverse("admin:core_tournament_add")
    first = organizer_client.get(url)
    assert first.status_code == 200
    assert f"?environment={environment.pk}" in first.content.decode()
    second = organizer_client.get(url, {"environment": environment.pk})
    assert second.status_code == 200
    assert "alices-bot v1" in second.content.decode()
    assert "bobs-bot v1" in second.content.decode()
    assert Tournament.objects.count() == 0


def test_it_sends_attendees_to_the_login_page(client: Client, carol: User) -> None:
    client.force_login(carol)
    response = client.get(reverse("admin:core_revision_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_it_refuses_staff_without_the_organizer_role(client: Client) -> None:
    client.force_login(UserFactory(is_staff=True))
    assert client.get(reverse("admin:core_revision_changelist")).status_code == 403
    assert client.get(reverse("admin:core_user_changelist")).status_code == 403


def test_it_sends_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_it_shows_the_move_logs_setting_and_a_matchs_move_logs(
    organizer_client: Client, bobs_bot: Competitor, match: Match
) -> None:
    bobs_bot.share_logs = True
    bobs_bot.save()
    MatchLog.objects.create(match=match, player=2, moves=[{"step": 1, "log": "<b>bob</b>"}])

    competitor = organizer_client.get(
        reverse("admin:core_competitor_change", args=[bobs_bot.pk])
    ).content.decode()
    listing = organizer_client.get(
        reverse("admin:core_competitor_changelist") + "?share_logs__exact=1"
    ).content.decode()
    replay = organizer_client.get(
        reverse("admin:core_match_change", args=[match.pk])
    ).content.decode()

    assert "Share logs" in competitor
    assert "bobs-bot" in listing
    assert "&lt;b&gt;bob&lt;/b&gt;" in replay and "<b>bob</b>" not in replay
