"""Competitors, their revisions and rating history through the API; pagination and the
filters every list shares."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import StepStatus
from tests.factories import (
    CompetitorFactory,
    EnvironmentFactory,
    RatingChangeFactory,
    RatingFactory,
    RevisionFactory,
)
from tests.support.responses import body

pytestmark = pytest.mark.django_db


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["name"] for item in body(response)["items"]]


def test_it_lists_public_competitors_to_anyone_and_private_ones_to_owner_and_organizers(
    client, alice, bob, carol, organizer, bearer
):
    assert names(client.get("/api/v1/competitors")) == ["bobs-bot"]
    assert names(client.get("/api/v1/competitors", **bearer(carol))) == ["bobs-bot"]
    assert names(client.get("/api/v1/competitors", **bearer(alice))) == ["alices-bot", "bobs-bot"]
    assert names(client.get("/api/v1/competitors", **bearer(organizer))) == [
        "alices-bot",
        "bobs-bot",
    ]


def test_it_describes_a_competitor_in_a_list(client, bob):
    [bot] = body(client.get("/api/v1/competitors"))["items"]

    assert bot == {
        "environment": "tic_tac_toe",
        "name": "bobs-bot",
        "owner": "Bob",
        "owner_id": bob.pk,
        "is_public": True,
        "share_logs": False,
        "is_disabled": False,
        "disabled_by": "",
        "created_at": bot["created_at"],
        "rating": None,
    }


def test_it_filters_competitors_by_environment_owner_and_mine(client, alice, bob, bearer):
    CompetitorFactory(
        owner=bob,
        name="bobs-four",
        is_public=True,
        environment=EnvironmentFactory(name="connect_four"),
    )
    alice_headers = bearer(alice)

    assert names(client.get("/api/v1/competitors?environment=connect_four")) == ["bobs-four"]
    assert names(client.get(f"/api/v1/competitors?owner_id={bob.pk}")) == ["bobs-four", "bobs-bot"]
    assert names(client.get("/api/v1/competitors?mine=true", **alice_headers)) == ["alices-bot"]
    assert names(client.get("/api/v1/competitors?mine=true")) == []
    assert names(client.get("/api/v1/competitors?environment=chess")) == []


def test_it_pages_a_list_with_the_count_and_links_to_the_next_and_previous_pages(client, bob):
    for number in range(4):
        CompetitorFactory(owner=bob, name=f"bot-{number}", is_public=True)

    first = body(client.get("/api/v1/competitors?limit=2&environment=tic_tac_toe"))
    second = body(client.get(first["next"]))
    third = body(client.get(second["next"]))

    assert first["count"] == 5
    assert [bot["name"] for bot in first["items"]] == ["bobs-bot", "bot-0"]
    assert first["previous"] is None
    assert first["next"] == (
        "http://testserver/api/v1/competitors?environment=tic_tac_toe&limit=2&offset=2"
    )
    assert [bot["name"] for bot in second["items"]] == ["bot-1", "bot-2"]
    assert second["previous"].endswith("offset=0")
    assert [bot["name"] for bot in third["items"]] == ["bot-3"]
    assert third["next"] is None
    beyond = body(client.get("/api/v1/competitors?offset=50"))
    assert beyond["items"] == [] and beyond["count"] == 5 and beyond["next"] is None


def test_it_refuses_a_page_over_the_largest_limit_and_says_why(client):
    response = client.get("/api/v1/competitors?limit=101")

    assert response.status_code == 422
    error = body(response)["error"]
    assert error["code"] == "invalid"
    assert error["details"][0]["location"] == ["query", "limit"]
    assert "less than or equal to 100" in error["details"][0]["message"]


def test_it_gives_a_competitor_with_its_rating_revisions_and_leaderboard_place(
    client, bobs_bot, ratings, leaderboard
):
    RevisionFactory(competitor=bobs_bot)

    bot = body(client.get("/api/v1/competitors/tic_tac_toe/bobs-bot"))

    assert bot["rating"] == {"mu": 20.0, "sigma": 4.0, "conservative": 8.0, "games": 10}
    assert bot["revisions"] == 2
    assert bot["latest_version"] == 2
    assert bot["leaderboard"]["rank"] == 2
    assert bot["leaderboard"]["provisional"] is False
    assert bot["leaderboard"]["revision"] == 1
    assert bot["leaderboard"]["score"] == 1512.6


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/revisions",
        "/revisions/1",
        "/ratings",
    ],
)
def test_a_private_competitor_is_a_404_to_others_as_on_the_site(
    client, alice, carol, organizer, bearer, path
):
    url = f"/api/v1/competitors/tic_tac_toe/alices-bot{path}"

    assert client.get(url).status_code == 404
    assert client.get(url, **bearer(carol)).status_code == 404
    assert client.get(url, **bearer(alice)).status_code == 200
    assert client.get(url, **bearer(organizer)).status_code == 200
    assert body(client.get(url))["error"]["code"] == "not_found"


def test_it_lists_a_competitors_revisions_with_each_steps_status_times_and_attempts(
    client, bobs_bot
):
    RevisionFactory(
        competitor=bobs_bot,
        build_status=StepStatus.FAILED,
        build_error="syntax error in main.py, line 1",
        build_attempts=2,
        validation_status=StepStatus.NONE,
    )

    page = body(client.get("/api/v1/competitors/tic_tac_toe/bobs-bot/revisions"))
    failed = body(
        client.get("/api/v1/competitors/tic_tac_toe/bobs-bot/revisions?build_status=failed")
    )

    assert [revision["version"] for revision in page["items"]] == [2, 1]
    second, first = page["items"]
    assert second["build"]["status"] == "failed"
    assert second["build"]["error"] == "syntax error in main.py, line 1"
    assert second["build"]["attempts"] == 2
    assert second["validation"]["status"] == "none"
    assert second["is_valid"] is False
    assert first["validation"]["status"] == "succeeded"
    assert first["build"]["duration"] == pytest.approx(60, abs=1)
    assert first["is_valid"] is True
    assert "log" not in first["build"]
    assert [revision["version"] for revision in failed["items"]] == [2]


def test_it_gives_a_revision_with_its_logs_and_validation_duel(
    client, alice, bearer, validation_duel
):
    revision = body(
        client.get("/api/v1/competitors/tic_tac_toe/alices-bot/revisions/1", **bearer(alice))
    )

    assert revision["build"]["log"] == "built"
    assert revision["validation"]["log"] == "validated by self-play"
    assert revision["publication"]["status"] == "none"
    assert revision["validation_duel"] == validation_duel.pk
    assert revision["sha256"] and revision["filename"] == "random_player.py"


def test_an_unknown_revision_is_a_404(client, bob):
    assert client.get("/api/v1/competitors/tic_tac_toe/bobs-bot/revisions/7").status_code == 404


def test_it_gives_the_rating_history_oldest_first(client, bobs_bot):
    rating = RatingFactory(competitor=bobs_bot, mu=25.0, sigma=8.0)
    now = timezone.now()
    RatingChangeFactory(rating=rating, created_at=now)
    RatingChangeFactory(rating=rating, reason="reset", mu_before=26, mu_after=25, created_at=now)
    # created_at is set on insert: order them explicitly.
    changes = list(rating.changes.order_by("pk"))
    changes[0].created_at = now - timedelta(hours=1)
    changes[0].save()

    history = body(client.get("/api/v1/competitors/tic_tac_toe/bobs-bot/ratings"))
    resets = body(client.get("/api/v1/competitors/tic_tac_toe/bobs-bot/ratings?reason=reset"))

    assert [(change["reason"], change["mu_after"]) for change in history["items"]] == [
        ("match", 26.0),
        ("reset", 25.0),
    ]
    assert history["items"][0]["sigma_after"] == pytest.approx(7.6)
    assert history["items"][0]["duel"] is None
    assert resets["count"] == 1


def test_a_page_of_competitors_takes_as_many_queries_for_one_as_for_many(
    client, bob, django_assert_max_num_queries
):
    with django_assert_max_num_queries(3) as one:
        names(client.get("/api/v1/competitors"))
    for number in range(10):
        RatingFactory(competitor=CompetitorFactory(is_public=True, name=f"bot-{number}"))

    with django_assert_max_num_queries(len(one.captured_queries)):
        assert len(names(client.get("/api/v1/competitors"))) == 11


def test_the_owner_shares_a_competitors_move_logs_with_a_submit_token(client, alice, bearer):
    url = "/api/v1/competitors/tic_tac_toe/alices-bot"
    assert body(client.get(url, **bearer(alice)))["share_logs"] is False

    response = client.patch(
        url, {"share_logs": True}, content_type="application/json", **bearer(alice, "submit")
    )

    assert response.status_code == 200, response.content
    assert body(response)["share_logs"] is True
    assert body(client.get(url, **bearer(alice)))["share_logs"] is True
    unchanged = client.patch(url, {}, content_type="application/json", **bearer(alice, "submit"))
    assert body(unchanged)["share_logs"] is True


def test_no_one_else_changes_whether_move_logs_are_shared(
    client, alice, bob, alices_bot, bobs_bot, bearer
):
    bobs = "/api/v1/competitors/tic_tac_toe/bobs-bot"
    patch = {"content_type": "application/json"}

    assert client.patch(bobs, {"share_logs": True}, **patch).status_code == 401
    read_only = client.patch(bobs, {"share_logs": True}, **patch, **bearer(bob))
    assert read_only.status_code == 403
    others = client.patch(bobs, {"share_logs": True}, **patch, **bearer(alice, "submit"))
    assert others.status_code == 404
    not_a_bool = client.patch(bobs, {"share_logs": "yes"}, **patch, **bearer(bob, "submit"))
    assert not_a_bool.status_code == 422
    bobs_bot.refresh_from_db()
    assert not bobs_bot.share_logs


def test_the_owner_makes_a_competitor_public_disables_and_enables_it(
    client, alice, bob, alices_bot, bearer
):
    url = "/api/v1/competitors/tic_tac_toe/alices-bot"
    patch = {"content_type": "application/json", **bearer(alice, "submit")}
    assert client.get(url, **bearer(bob)).status_code == 404  # private

    public = client.patch(url, {"is_public": True}, **patch)
    assert public.status_code == 200, public.content
    assert body(public)["is_public"] is True
    assert client.get(url, **bearer(bob)).status_code == 200

    disabled = body(client.patch(url, {"is_disabled": True}, **patch))
    assert (disabled["is_disabled"], disabled["disabled_by"]) == (True, "owner")
    enabled = body(client.patch(url, {"is_disabled": False}, **patch))
    assert (enabled["is_disabled"], enabled["disabled_by"]) == (False, "")


def test_an_owner_cannot_enable_what_the_organizers_disabled(client, alice, alices_bot, bearer):
    alices_bot.is_disabled, alices_bot.disabled_by = True, "organizers"
    alices_bot.save()
    url = "/api/v1/competitors/tic_tac_toe/alices-bot"

    response = client.patch(
        url, {"is_disabled": False}, content_type="application/json", **bearer(alice, "submit")
    )

    assert response.status_code == 400
    assert body(response)["error"]["code"] == "refused"
    assert body(response)["error"]["message"] == (
        "Competitor alices-bot was disabled by the organizers: only they can enable it."
    )
    alices_bot.refresh_from_db()
    assert alices_bot.is_disabled


def test_the_owner_deletes_a_competitor_and_no_one_else_can(
    client, alice, bob, alices_bot, bobs_bot, bearer
):
    bobs = "/api/v1/competitors/tic_tac_toe/bobs-bot"
    assert client.delete(bobs).status_code == 401
    assert client.delete(bobs, **bearer(bob)).status_code == 403  # a read token
    assert client.delete(bobs, **bearer(alice, "submit")).status_code == 404
    assert client.get(bobs).status_code == 200

    mine = "/api/v1/competitors/tic_tac_toe/alices-bot"
    response = client.delete(mine, **bearer(alice, "submit"))

    assert response.status_code == 200, response.content
    assert body(response)["outcome"] == "erased"
    assert body(response)["competitor"] is None
    assert client.get(mine, **bearer(alice)).status_code == 404


def test_the_owner_starts_a_test_duel_against_a_visible_agent(client, alice, bob, carol, bearer):
    from core.models import Duel

    url = "/api/v1/competitors/tic_tac_toe/alices-bot/test-duels"
    submit = {"content_type": "application/json", **bearer(alice, "submit")}

    response = client.post(url, {"opponent": "bobs-bot"}, **submit)

    assert response.status_code == 201, response.content
    duel = body(response)
    assert (duel["is_test"], duel["tournament"], duel["status"]) == (True, None, "queued")
    assert [player["competitor"] for player in duel["players"]] == ["alices-bot", "bobs-bot"]
    stored = Duel.objects.get(pk=duel["id"])
    assert stored.requested_by == alice
    listed = body(client.get("/api/v1/duels?is_test=true", **bearer(alice)))["items"]
    assert [item["id"] for item in listed] == [duel["id"]]

    # Only one's own agents, against agents one may see, with a submit token.
    assert (
        client.post(url, {"opponent": "bobs-bot"}, content_type="application/json").status_code
        == 401
    )
    carols = {"content_type": "application/json", **bearer(carol, "submit")}
    assert client.post(url, {"opponent": "bobs-bot"}, **carols).status_code == 404
    bobs = "/api/v1/competitors/tic_tac_toe/bobs-bot/test-duels"
    hidden = client.post(
        bobs, {"opponent": "alices-bot"}, content_type="application/json", **bearer(bob, "submit")
    )
    assert hidden.status_code == 404  # alice's bot is private
    itself = client.post(url, {"opponent": "alices-bot"}, **submit)
    assert itself.status_code == 400
    assert "pick another agent than itself" in body(itself)["error"]["message"].lower()
    assert Duel.objects.filter(requested_by__isnull=False).count() == 1
