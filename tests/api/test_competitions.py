"""Competitions, teams and final marks through the API: the same services and reads as the
site, so the same rules, with every refusal in the API's error shape."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.models import (
    Competition,
    CompetitionPhase,
    Competitor,
    Revision,
    Team,
    TeamMember,
    TournamentStatus,
)
from core.services.teams import team_create
from tests.factories import (
    LeaderboardEntryFactory,
    ParticipantFactory,
    RevisionFactory,
    TournamentFactory,
    example_player_source,
    scheduled_competition,
)
from tests.support.clock import Clock
from tests.support.responses import body, ok
from tournament_manager.services.competitions import final_publish

pytestmark = pytest.mark.django_db

#: The cup opens on a Monday at 09:00 UTC; its deadline is three days later.
OPENS = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=3)
CUP = "/api/v1/competitions/tic-tac-toe-cup"


@pytest.fixture
def cup(clock: Clock, settings, tmp_path) -> Competition:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_BUILD_ROOT = tmp_path / "builds"
    clock.to(OPENS + timedelta(hours=1))
    return scheduled_competition(
        opens=OPENS,
        deadline=DEADLINE,
        daily_limit=2,
        total_limit=4,
        slug="tic-tac-toe-cup",
        title="Tic-tac-toe cup",
        team_size_limit=2,
        final_submissions=1,
    )


def post(client, url, payload, headers):
    return client.post(url, json.dumps(payload), content_type="application/json", **headers)


def upload(client, headers, *, competitor="crosses-bot", competition="tic-tac-toe-cup"):
    form = {"environment": "tic_tac_toe", "competitor": competitor, "competition": competition}
    agent = SimpleUploadedFile("main.py", example_player_source("tic_tac_toe"))
    return client.post("/api/v1/submissions", {**form, "file": agent}, **headers)


def refusal(response, status=400):
    assert response.status_code == status, response.content
    return body(response)["error"]


def test_it_lists_the_visible_competitions_and_a_private_one_is_a_404(
    client, cup, organizer, bearer
):
    Competition.objects.create(
        environment=cup.environment, slug="staff-cup", title="Staff cup", is_public=False
    )

    listed = ok(client.get("/api/v1/competitions"))
    as_organizer = ok(client.get("/api/v1/competitions", **bearer(organizer)))

    assert [item["slug"] for item in listed["items"]] == ["tic-tac-toe-cup"]
    assert listed["count"] == 1
    assert [item["slug"] for item in as_organizer["items"]] == ["staff-cup", "tic-tac-toe-cup"]
    missing = refusal(client.get("/api/v1/competitions/staff-cup"), 404)
    assert missing["code"] == "not_found"
    assert (
        ok(client.get("/api/v1/competitions/staff-cup", **bearer(organizer)))["is_public"] is False
    )


def test_it_gives_a_competition_with_its_phases_deadline_final_and_the_callers_team(
    client, cup, alice, bearer
):
    anonymous = ok(client.get(CUP))

    assert anonymous["title"] == "Tic-tac-toe cup"
    assert anonymous["environment"] == "tic_tac_toe"
    assert anonymous["phase"] == "development"
    assert anonymous["deadline"] == "2026-12-10T09:00:00Z"
    assert anonymous["closed"] is False
    assert anonymous["next_phase"]["name"] == "final"
    assert anonymous["phases"] == [
        {
            "name": "development",
            "starts_at": "2026-12-07T09:00:00Z",
            "uploads_open": True,
            "daily_limit": 2,
            "total_limit": 4,
            "plays": "ladder",
            "standings_public": True,
        },
        {
            "name": "final",
            "starts_at": "2026-12-10T09:00:00Z",
            "uploads_open": False,
            "daily_limit": None,
            "total_limit": None,
            "plays": "final",
            "standings_public": True,
        },
    ]
    assert anonymous["final"] == {
        "format": "round_robin",
        "status": "scheduled",
        "tournament": None,
        "error": "",
        "published_at": None,
    }
    assert anonymous["team"] is None
    assert anonymous["final_standings"] is None

    team_create(competition=cup, user=alice, name="Crosses")
    mine = ok(client.get(CUP, **bearer(alice)))
    assert mine["team"]["name"] == "Crosses"
    assert mine["team"]["members"] == ["Alice"]
    assert mine["teams"] == 1


def test_a_team_is_formed_renamed_and_joined_with_the_code_in_the_body(
    client, cup, alice, bob, carol, bearer
):
    alices, bobs, carols = (bearer(user, "submit") for user in (alice, bob, carol))

    created = post(client, f"{CUP}/team", {"name": "Crosses"}, alices)
    assert created.status_code == 201, created.content
    renamed = client.patch(
        f"{CUP}/team", json.dumps({"name": "Noughts"}), content_type="application/json", **alices
    )
    assert ok(renamed)["name"] == "Noughts"
    invited = post(client, f"{CUP}/team/invitations", {"email": "bob@example.com"}, alices)
    assert invited.status_code == 201, invited.content
    code = body(invited)["code"]

    # Only Bob may accept it; a token without the submit scope may not; nor a code in the URL.
    assert (
        "for bob@example.com"
        in refusal(post(client, f"{CUP}/join", {"code": code}, carols))["message"]
    )
    assert refusal(post(client, f"{CUP}/join", {"code": code}, bearer(bob)), 403)
    assert refusal(post(client, f"{CUP}/join?code={code}", {}, bobs), 422)["code"] == "invalid"
    assert not TeamMember.objects.filter(user=bob).exists()

    joined = ok(post(client, f"{CUP}/join", {"code": code}, bobs))

    assert joined["members"] == ["Alice", "Bob"]
    assert joined["invitations"] == []
    used = refusal(post(client, f"{CUP}/join", {"code": code}, carols))
    assert used["code"] == "refused"
    assert used["message"].startswith("This invitation is not valid")
    # Full at two: no more invitations.
    full = refusal(post(client, f"{CUP}/team/invitations", {}, alices))
    assert "is full" in full["message"]


def test_a_revoked_invitation_is_refused_and_a_code_of_another_competition_too(
    client, cup, alice, bob, carol, bearer
):
    alices, bobs = bearer(alice, "read", "submit"), bearer(bob, "read", "submit")
    post(client, f"{CUP}/team", {"name": "Crosses"}, alices)
    link = body(post(client, f"{CUP}/team/invitations", {}, alices))
    assert link["email"] == ""

    revoked = client.delete(f"{CUP}/team/invitations/{link['id']}", **alices)
    assert ok(revoked)["id"] == link["id"]
    assert (
        "not valid" in refusal(post(client, f"{CUP}/join", {"code": link["code"]}, bobs))["message"]
    )
    # Another team's invitation cannot be revoked by someone outside it.
    other = body(post(client, f"{CUP}/team/invitations", {}, alices))
    team_create(competition=cup, user=carol, name="Noughts")
    assert refusal(
        client.delete(f"{CUP}/team/invitations/{other['id']}", **bearer(carol, "submit")), 404
    )
    spring = Competition.objects.create(
        environment=cup.environment, slug="spring-cup", title="Spring cup"
    )
    elsewhere = post(client, "/api/v1/competitions/spring-cup/join", {"code": other["code"]}, bobs)
    assert "not valid" in refusal(elsewhere)["message"]
    assert not Team.objects.filter(competition=spring).exists()


def test_leaving_a_team_is_refused_once_it_has_submitted(client, cup, alice, bearer):
    alices = bearer(alice, "read", "submit")
    assert refusal(client.delete(f"{CUP}/team/membership", **alices), 404)["code"] == "not_found"
    post(client, f"{CUP}/team", {"name": "Crosses"}, alices)
    assert upload(client, alices).status_code == 201

    refused = refusal(client.delete(f"{CUP}/team/membership", **alices))

    assert "has submitted" in refused["message"]
    assert TeamMember.objects.filter(user=alice, team__name="Crosses").exists()


def test_leaving_a_team_that_has_not_submitted_removes_it_when_empty(client, cup, alice, bearer):
    alices = bearer(alice, "read", "submit")
    post(client, f"{CUP}/team", {"name": "Crosses"}, alices)

    assert ok(client.delete(f"{CUP}/team/membership", **alices))["message"] == (
        "You left team Crosses."
    )
    assert not Team.objects.exists()


def test_an_upload_over_the_daily_limit_is_refused_with_the_time_of_the_next(
    client, cup, alice, bearer
):
    alices = bearer(alice, "read", "submit")

    first = upload(client, alices)
    second = upload(client, alices)
    third = upload(client, alices)

    assert (first.status_code, second.status_code) == (201, 201)
    refused = refusal(third, 422)
    assert refused["code"] == "upload_rejected"
    assert "its 2 upload(s) of today" in refused["message"]
    assert "the next upload is allowed at 2026-12-08 00:00 UTC" in refused["message"]
    competitor = Competitor.objects.get(name="crosses-bot")
    assert competitor.team is not None and competitor.team.name == "Alice"  # a team of one
    assert competitor.revisions.count() == 2


def test_an_upload_to_a_private_competition_is_a_404_and_stores_nothing(client, cup, alice, bearer):
    Competition.objects.filter(pk=cup.pk).update(is_public=False)

    assert refusal(upload(client, bearer(alice, "submit")), 404)["code"] == "not_found"
    assert not Competitor.objects.filter(name="crosses-bot").exists()


def test_a_final_mark_is_set_and_removed_before_the_deadline_and_refused_after(
    client, cup, clock, alice, carol, bearer
):
    alices = bearer(alice, "read", "submit")
    assert upload(client, alices).status_code == 201
    Revision.objects.filter(competitor__name="crosses-bot").update(
        build_status="succeeded", validation_status="succeeded"
    )
    final = "/api/v1/competitors/tic_tac_toe/crosses-bot/revisions/1/final"

    marked = ok(client.put(final, **alices))
    assert marked["competitor"] == "crosses-bot" and marked["version"] == 1
    assert marked["marked_final_at"] is not None
    assert refusal(client.put(final, **bearer(carol, "submit")), 404)  # not hers to manage
    assert ok(client.delete(final, **alices))["marked_final_at"] is None
    assert ok(client.put(final, **alices))["marked_final_at"] is not None
    assert ok(client.get(CUP, **alices))["team"]["finals"][0]["version"] == 1

    clock.to(DEADLINE + timedelta(minutes=1))
    late = refusal(client.delete(final, **alices))

    assert late["code"] == "refused"
    assert "deadline of Tic-tac-toe cup has passed" in late["message"]
    assert Revision.objects.get(competitor__name="crosses-bot").marked_final_at is not None


def test_standings_show_to_everyone_while_public_and_only_to_the_team_while_private(
    client, cup, alice, bob, bearer
):
    for user, name in ((alice, "Crosses"), (bob, "Noughts")):
        team = team_create(competition=cup, user=user, name=name)
        LeaderboardEntryFactory(
            revision=RevisionFactory(
                validated=True,
                competitor__owner=user,
                competitor__team=team,
                competitor__name=f"{name.lower()}-bot",
                competitor__environment=cup.environment,
                competitor__is_public=True,
            ),
            rank=1 if user == alice else 2,
        )

    public = ok(client.get(CUP))["standings"]
    assert [(row["rank"], row["competitor"], row["team"]) for row in public] == [
        (1, "crosses-bot", "Crosses"),
        (2, "noughts-bot", "Noughts"),
    ]

    CompetitionPhase.objects.filter(name="development").update(standings_public=False)

    assert ok(client.get(CUP))["standings"] is None
    own = ok(client.get(CUP, **bearer(bob)))["standings"]
    assert [row["competitor"] for row in own] == ["noughts-bot"]


def test_a_held_out_final_shows_its_standings_once_published(
    client, cup, clock, alice, organizer, bearer
):
    final = TournamentFactory(
        environment=cup.environment, status=TournamentStatus.COMPLETED, is_public=False
    )
    ParticipantFactory(
        tournament=final,
        revision__competitor__owner=alice,
        revision__competitor__name="crosses-bot",
        revision__competitor__is_public=True,
        rank=1,
    )
    Competition.objects.filter(pk=cup.pk).update(final_tournament=final, final_hidden=True)
    clock.to(DEADLINE + timedelta(days=1))

    held_out = ok(client.get(CUP))
    assert (held_out["final"]["status"], held_out["final_standings"]) == ("completed", None)
    assert held_out["final"]["tournament"] is None
    seen = ok(client.get(CUP, **bearer(organizer)))["final_standings"]
    assert [row["competitor"] for row in seen] == ["crosses-bot"]

    final_publish(competition=Competition.objects.get(pk=cup.pk))
    published = ok(client.get(CUP))

    assert published["final"]["status"] == "published"
    assert published["final"]["tournament"] == final.pk
    assert [(row["rank"], row["competitor"]) for row in published["final_standings"]] == [
        (1, "crosses-bot")
    ]


def test_an_invitation_code_is_in_no_url_and_no_log(client, cup, alice, bob, bearer, caplog):
    caplog.set_level(logging.DEBUG)
    alices, bobs = bearer(alice, "read", "submit"), bearer(bob, "read", "submit")
    post(client, f"{CUP}/team", {"name": "Crosses"}, alices)

    answers = [
        post(client, f"{CUP}/team/invitations", {}, alices),
        client.get(CUP, **alices),
    ]
    code = body(answers[0])["code"]
    answers.append(post(client, f"{CUP}/join", {"code": code}, bobs))
    answers.append(post(client, f"{CUP}/join", {"code": code}, bobs))  # refused: used
    answers.append(client.get("/api/v1/competitions", **bobs))

    assert answers[2].status_code == 200
    assert code not in caplog.text
    for response in answers[1:]:
        assert code not in response.content.decode()
        assert code not in response.get("Location", "")
    document = json.loads(client.get("/api/v1/openapi.json").content)
    join = document["paths"]["/api/v1/competitions/{slug}/join"]["post"]
    assert [parameter["in"] for parameter in join["parameters"]] == ["path"]
    schema = join["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/JoinIn"}
    assert document["components"]["schemas"]["JoinIn"]["required"] == ["code"]


def test_the_team_operations_need_a_token_with_the_submit_scope(client, cup, alice, bearer):
    anonymous = refusal(post(client, f"{CUP}/team", {"name": "Crosses"}, {}), 401)
    read_only = refusal(post(client, f"{CUP}/team", {"name": "Crosses"}, bearer(alice)), 403)

    assert (anonymous["code"], read_only["code"]) == ("unauthorized", "forbidden")
    assert not Team.objects.exists()


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/team", {"name": "Nul\x00team"}),
        ("/team/invitations", {"email": "bob\x00@example.org"}),
        ("/join", {"code": "abc\x00"}),
    ],
)
def test_a_control_character_in_a_body_is_a_422_not_a_database_error(
    client, cup, alice, bearer, path, payload
):
    alices = bearer(alice, "submit")
    if path != "/team":
        assert post(client, f"{CUP}/team", {"name": "Crosses"}, alices).status_code == 201
    assert refusal(post(client, f"{CUP}{path}", payload, alices), 422)
