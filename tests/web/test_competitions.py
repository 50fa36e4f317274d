"""Competitions on the site: the list and a competition's page (phases, deadline, the
visitor's team, standings), and what a signed-in visitor does there, each through its
service (``core.services.teams``, ``core.services.revisions``), refusals said on the page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from core.models import (
    Competition,
    Participant,
    Revision,
    StepStatus,
    Team,
    TeamInvitation,
    Tournament,
    TournamentStatus,
    User,
)
from core.services.teams import invitation_create, team_create, team_of
from tests.factories import (
    CompetitorFactory,
    ParticipantFactory,
    RevisionFactory,
    TournamentFactory,
    UserFactory,
    example_player_source,
    scheduled_competition,
)
from tournament_manager.services.competitions import final_publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def cup() -> Competition:
    now = timezone.now()
    return scheduled_competition(
        opens=now - timedelta(days=1),
        deadline=now + timedelta(days=2),
        daily_limit=1,
        total_limit=10,
        description="Play noughts and crosses.",
        team_size_limit=2,
        final_submissions=1,
    )


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_lists_public_competitions_linked_from_the_header(client, cup):
    Competition.objects.create(
        environment=cup.environment, slug="hidden", title="Hidden cup", is_public=False
    )

    page = client.get("/c/").content.decode()

    assert 'href="/c/">Competitions</a>' in page
    assert 'href="/c/cup/"' in page and "The cup" in page
    assert "Hidden cup" not in page


def test_the_page_shows_its_phases_deadline_in_utc_and_local_time(client, cup):
    response = client.get("/c/cup/")

    page = response.content.decode()
    assert response.status_code == 200
    assert "Play noughts and crosses." in page
    assert "development" in page and "1 a day (UTC), 10 in the phase" in page
    deadline = cup.deadline
    assert deadline is not None
    assert f'<time datetime="{deadline.isoformat()}" data-local-time>' in page
    assert deadline.strftime("%H:%M") + " UTC" in page
    assert "web/local-time.js" in page
    assert "Log in</a> to enter" in page


def test_a_private_competition_is_a_404_but_to_the_organizers(client, cup, organizer):
    Competition.objects.filter(pk=cup.pk).update(is_public=False)

    assert client.get("/c/cup/").status_code == 404
    assert signed_in(UserFactory()).get("/c/cup/").status_code == 404
    assert signed_in(UserFactory()).post("/c/cup/teams/", {"name": "x"}).status_code == 404
    assert signed_in(organizer).get("/c/cup/").status_code == 200


def test_a_visitor_forms_a_team_and_sees_it(cup, alice):
    response = signed_in(alice).post("/c/cup/teams/", {"name": "Crosses"}, follow=True)

    page = response.content.decode()
    assert "Team Crosses is formed" in page
    team = team_of(user=alice, competition=cup)
    assert team is not None and team.name == "Crosses"
    assert "Leave the team" in page and "Alice" in page


def test_a_taken_team_name_is_refused_with_the_services_words(cup, alice, bob):
    team_create(competition=cup, user=bob, name="Crosses")

    page = signed_in(alice).post("/c/cup/teams/", {"name": "Crosses"}, follow=True)

    assert "A team named &#x27;Crosses&#x27; exists already; choose another name." in (
        page.content.decode()
    )
    assert team_of(user=alice, competition=cup) is None


def test_a_link_invitation_shows_its_code_once_in_the_fragment_and_joins(cup, alice, bob):
    team_create(competition=cup, user=alice, name="Crosses")

    made = signed_in(alice).post("/c/cup/team/invitations/", {"email": ""})

    page = made.content.decode()
    invitation = TeamInvitation.objects.get()
    assert "http://testserver/c/cup/join/#" in page
    code = page.split("http://testserver/c/cup/join/#")[1].split('"')[0]
    assert invitation.code_hash != code and len(code) > 20
    assert code not in signed_in(alice).get("/c/cup/").content.decode()
    bobs = signed_in(bob)
    join = bobs.get("/c/cup/join/").content.decode()
    assert 'name="code"' in join and "web/join.js" in join
    joined = bobs.post("/c/cup/join/", {"code": code}, follow=True)
    assert "You joined team Crosses." in joined.content.decode()
    assert team_of(user=bob, competition=cup) == Team.objects.get(name="Crosses")


def test_a_used_code_is_refused_on_the_join_page(cup, alice, bob, carol):
    team = team_create(competition=cup, user=alice, name="Crosses")
    _, code = invitation_create(team=team, by=alice)
    signed_in(bob).post("/c/cup/join/", {"code": code})

    refused = signed_in(carol).post("/c/cup/join/", {"code": code})

    assert refused.status_code == 400
    assert "This invitation is not valid: it was used, revoked or has expired." in (
        refused.content.decode()
    )
    assert team_of(user=carol, competition=cup) is None


def test_an_invitation_by_address_is_accepted_on_the_page_by_that_person(cup, alice, bob):
    team_create(competition=cup, user=alice, name="Crosses")
    signed_in(alice).post("/c/cup/team/invitations/", {"email": "bob@example.com"})
    invitation = TeamInvitation.objects.get(email="bob@example.com")
    [mailed] = mail.outbox
    assert mailed.to == ["bob@example.com"]
    assert mailed.subject == "An invitation to team Crosses (The cup)"
    assert "accept it on the competition's page: http://testserver/c/cup/" in mailed.body
    bobs = signed_in(bob)

    page = bobs.get("/c/cup/").content.decode()

    assert "Invitations for you" in page and f"/c/cup/invitations/{invitation.pk}/accept/" in page
    accepted = bobs.post(f"/c/cup/invitations/{invitation.pk}/accept/", follow=True)
    assert "You joined team Crosses." in accepted.content.decode()
    assert team_of(user=bob, competition=cup) is not None


def test_leaving_a_team_that_has_submitted_is_refused(cup, alice):
    team = team_create(competition=cup, user=alice, name="Crosses")
    RevisionFactory(competitor=CompetitorFactory(owner=alice, name="crosser", team=team))

    page = signed_in(alice).post("/c/cup/team/leave/", follow=True).content.decode()

    assert "Team Crosses has submitted: its members stay in it until the competition ends." in page
    assert team_of(user=alice, competition=cup) == team


def test_an_upload_enters_a_team_of_one_and_the_next_is_refused_with_its_time(cup, carol):
    carols = signed_in(carol)

    def upload() -> Any:
        source = example_player_source("tic_tac_toe")
        return carols.post(
            "/c/cup/uploads/",
            {"name": "carols-bot", "file": SimpleUploadedFile("main.py", source)},
        )

    first = upload()
    assert first.status_code == 302
    assert team_of(user=carol, competition=cup) is not None
    refused = upload()
    assert refused.status_code == 400
    assert "has made its 1 upload(s) of today (UTC): the next upload is allowed at" in (
        refused.content.decode()
    )
    assert Revision.objects.filter(competitor__name="carols-bot").count() == 1


def test_a_member_marks_a_revision_final_on_its_agents_page(cup, alice):
    team = team_create(competition=cup, user=alice, name="Crosses")
    bot = CompetitorFactory(owner=alice, name="crosser", team=team, environment=cup.environment)
    first = RevisionFactory(competitor=bot, validated=True)
    RevisionFactory(competitor=bot, validated=True)
    alices = signed_in(alice)
    page = alices.get(bot.get_absolute_url()).content.decode()
    assert "Mark final" in page and "plays the final" in page

    marked = alices.post(
        f"{bot.get_absolute_url()}final/", {"version": first.version, "final": "1"}, follow=True
    ).content.decode()

    assert f"{first} is marked final" in marked
    first.refresh_from_db()
    assert first.marked_final_at is not None
    assert "Unmark" in marked
    alices.post(f"{bot.get_absolute_url()}final/", {"version": first.version, "final": "0"})
    first.refresh_from_db()
    assert first.marked_final_at is None


def test_marking_an_unvalidated_revision_is_refused_and_no_one_else_may(cup, alice, bob):
    team = team_create(competition=cup, user=alice, name="Crosses")
    bot = CompetitorFactory(owner=alice, name="crosser", team=team, environment=cup.environment)
    building = RevisionFactory(competitor=bot)
    Revision.objects.filter(pk=building.pk).update(validation_status=StepStatus.RUNNING)
    url = f"{bot.get_absolute_url()}final/"

    refused = signed_in(alice).post(url, {"version": building.version, "final": "1"}, follow=True)

    assert "is not validated: only a validated revision plays a final." in (
        refused.content.decode()
    )
    assert signed_in(bob).post(url, {"version": building.version, "final": "1"}).status_code == 404


def test_the_join_page_asks_a_visitor_to_log_in_first(client, cup):
    page = client.get("/c/cup/join/").content.decode()

    assert "Log in</a>" in page and "next=/c/cup/join/" in page
    refused = client.post("/c/cup/join/", {"code": "anything"})
    assert refused.status_code == 302 and refused["Location"].startswith("/accounts/login/")


def test_a_published_final_shows_its_winners_and_a_held_out_one_shows_nothing(
    client, cup, organizer
):
    """The final's standings on the competition's page: the organizers' only while held
    out, everyone's with the winning team once published."""
    teams = []
    for name in ("Crosses", "Noughts"):
        team = Team.objects.create(competition=cup, name=name)
        teams.append(RevisionFactory(competitor__team=team, validated=True))
    final = TournamentFactory(environment=cup.environment, is_public=False)
    winner, loser = (ParticipantFactory(tournament=final, revision=r) for r in teams)
    Participant.objects.filter(pk=winner.pk).update(rank=1, points=2)
    Participant.objects.filter(pk=loser.pk).update(rank=2)
    Competition.objects.filter(pk=cup.pk).update(final_tournament=final, final_hidden=True)

    held = client.get("/c/cup/").content.decode()
    assert "data-final-standings" not in held and "Crosses" not in held
    organizers = signed_in(organizer).get("/c/cup/").content.decode()
    assert "Not published yet: only the organizers see them." in organizers

    cup.refresh_from_db()
    Tournament.objects.filter(pk=final.pk).update(status=TournamentStatus.COMPLETED)
    final_publish(competition=cup)
    page = client.get("/c/cup/").content.decode()
    assert "Final standings published on" in page
    assert "Winners: <strong>Crosses</strong>" in page


def test_a_member_renames_the_team_and_revokes_an_invitation(cup, alice, bob):
    team = team_create(competition=cup, user=alice, name="Crosses")
    invitation, code = invitation_create(team=team, by=alice)
    alices = signed_in(alice)

    renamed = alices.post("/c/cup/team/rename/", {"name": "Noughts"}, follow=True)
    assert "Your team is named Noughts now." in renamed.content.decode()
    page = alices.get("/c/cup/").content.decode()
    assert f"/c/cup/team/invitations/{invitation.pk}/revoke/" in page

    revoked = alices.post(f"/c/cup/team/invitations/{invitation.pk}/revoke/", follow=True)
    assert "The invitation is revoked" in revoked.content.decode()
    refused = signed_in(bob).post("/c/cup/join/", {"code": code})
    assert refused.status_code == 400
    assert team_of(user=bob, competition=cup) is None


def test_no_one_outside_the_team_revokes_its_invitations(cup, alice, bob):
    team = team_create(competition=cup, user=alice, name="Crosses")
    invitation, _ = invitation_create(team=team, by=alice)

    refused = signed_in(bob).post(f"/c/cup/team/invitations/{invitation.pk}/revoke/", follow=True)

    assert "No such invitation of your team." in refused.content.decode()
    invitation.refresh_from_db()
    assert invitation.revoked_at is None


def test_the_page_shows_the_competitions_own_ladder_and_its_entries(client, cup):
    team = Team.objects.create(competition=cup, name="Crosses")
    entry = RevisionFactory(competitor__team=team, competitor__name="crosses-bot", validated=True)
    ladder = TournamentFactory(
        environment=cup.environment,
        format="ladder",
        status=TournamentStatus.RUNNING,
        started_at=timezone.now(),
        entrants=cup,
    )
    ParticipantFactory(tournament=ladder, revision=entry)

    page = client.get("/c/cup/").content.decode()

    assert "The competition's ladder" in page
    assert f'href="{ladder.get_absolute_url()}"' in page
    assert "crosses-bot" in page and "<td>Crosses</td>" in page
