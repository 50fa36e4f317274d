"""Organizers run a competition from the admin: created with its phases, a wrong phase
refused with the reason, uploads per team and day shown, a team disqualified."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.models import Competition, Environment, Team, TeamMember, User
from tests.factories import RevisionFactory

pytestmark = pytest.mark.django_db


def phases(*rows: Mapping[str, object]) -> dict[str, object]:
    """The phase inline's fields for ``rows``, and the (empty) team inline's."""
    form: dict[str, object] = {
        "phases-TOTAL_FORMS": len(rows),
        "phases-INITIAL_FORMS": 0,
        "teams-TOTAL_FORMS": 0,
        "teams-INITIAL_FORMS": 0,
    }
    for number, row in enumerate(rows):
        form |= {f"phases-{number}-{name}": value for name, value in row.items()}
    return form


def competition_form(environment: Environment, *rows: Mapping[str, object]) -> dict[str, object]:
    return {
        "environment": environment.pk,
        "title": "Winter cup",
        "slug": "winter-cup",
        "is_public": "on",
        "team_size_limit": 3,
        "final_submissions": 2,
        "final_format": "round_robin",
        **phases(*rows),
    }


def moment(days: int) -> dict[str, str]:
    when = timezone.now() + timedelta(days=days)
    return {"starts_at_0": f"{when:%Y-%m-%d}", "starts_at_1": f"{when:%H:%M:%S}"}


def test_it_creates_a_competition_with_its_phases(
    organizer_client: Client, environments: dict[str, Environment]
) -> None:
    development = {"name": "development", **moment(1), "uploads_open": "on", "daily_limit": 5}
    development |= {"plays": "ladder", "standings_public": "on"}
    final = {"name": "final", **moment(30), "plays": "final"}
    response = organizer_client.post(
        reverse("admin:core_competition_add"),
        competition_form(environments["tic_tac_toe"], development, final),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    cup = Competition.objects.get()
    assert [phase.name for phase in cup.phases.all()] == ["development", "final"]
    assert cup.deadline == cup.phases.get(name="final").starts_at
    assert cup.created_by is not None


def test_it_refuses_a_final_phase_that_leaves_uploads_open(
    organizer_client: Client, environments: dict[str, Environment]
) -> None:
    final = {"name": "final", **moment(30), "plays": "final", "uploads_open": "on"}
    response = organizer_client.post(
        reverse("admin:core_competition_add"),
        competition_form(environments["tic_tac_toe"], final),
    )

    assert response.status_code == 200
    assert "The final phase closes uploads" in response.content.decode()
    assert not Competition.objects.exists()


def test_it_shows_uploads_per_team_and_day_and_disqualifies_a_team(
    organizer_client: Client, environments: dict[str, Environment], bob: User
) -> None:
    cup = Competition.objects.create(
        environment=environments["tic_tac_toe"], slug="cup", title="Cup"
    )
    team = Team.objects.create(competition=cup, name="Copycats")
    TeamMember.objects.create(team=team, competition=cup, user=bob)
    revision = RevisionFactory(competitor__team=team, competitor__owner=bob, validated=True)

    page = organizer_client.get(reverse("admin:core_competition_change", args=[cup.pk]))
    assert page.status_code == 200
    today = timezone.now().astimezone(UTC)
    assert f"<td>{today:%Y-%m-%d}</td><td>Copycats</td><td>1</td>" in page.content.decode()

    response = organizer_client.post(
        reverse("admin:core_team_changelist"),
        {"action": "disqualify", "_selected_action": [team.pk]},
    )
    assert response.status_code == 302
    team.refresh_from_db()
    revision.competitor.refresh_from_db()
    assert team.is_disqualified
    assert revision.competitor.is_disabled
    assert revision.competitor.disabled_by == "organizers"
