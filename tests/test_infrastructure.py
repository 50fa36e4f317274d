"""The test infrastructure itself: PostgreSQL, constraints, factories, stories, browser."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, models, transaction

from core.models import (
    Competitor,
    Duel,
    DuelResult,
    Revision,
    Role,
    StepStatus,
)
from environments.base import replay
from environments.registry import make_environment
from reads.access import can_see_competitor
from tests import factories
from tests.factories import PASSWORD
from tests.support.require import require

pytestmark = pytest.mark.django_db

ALL_FACTORIES = [
    factories.UserFactory,
    factories.OrganizerFactory,
    factories.InviteCodeFactory,
    factories.ApiTokenFactory,
    factories.EnvironmentFactory,
    factories.CompetitorFactory,
    factories.RevisionFactory,
    factories.TournamentFactory,
    factories.ParticipantFactory,
    factories.DuelFactory,
    factories.MatchFactory,
    factories.RatingFactory,
    factories.RatingChangeFactory,
]


def test_it_runs_the_database_tests_on_postgresql() -> None:
    require(
        connection.vendor == "postgresql",
        f"the tests run on {connection.vendor}: PostgreSQL is missing",
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        (version,) = cursor.fetchone()
    assert int(version) >= 150000
    assert connection.settings_dict["NAME"].startswith("test_")


def test_it_enforces_a_check_constraint_in_the_database() -> None:
    revision = factories.RevisionFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Duel.objects.seated([revision, revision], num_matches=2, seed=1, status="bogus")
    assert not Duel.objects.exists()


def test_it_refuses_a_revision_version_zero() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        factories.RevisionFactory(version=0)
    assert not Revision.objects.filter(version=0).exists()


def test_it_refuses_two_competitors_of_the_same_name_in_one_environment() -> None:
    factories.CompetitorFactory(name="twin")
    # PostgreSQL names the constraint; SQLite (the fallback) names the columns.
    duplicate = pytest.raises(
        IntegrityError, match=r"competitor_name_unique_per_environment|core_competitor\.name"
    )
    with duplicate, transaction.atomic():
        factories.CompetitorFactory(name="twin")
    factories.CompetitorFactory(name="twin", environment__name="connect_four")
    assert Competitor.objects.filter(name="twin").count() == 2


@pytest.mark.parametrize("factory", ALL_FACTORIES, ids=lambda factory: factory.__name__)
def test_it_builds_valid_rows_with_every_factory(factory: type) -> None:
    row = factory()
    # The models' JSON lists (Match.faults...) default to [] without blank=True, which
    # full_clean() calls blank; an empty list is a valid value for them.
    empty_json = [
        field.name
        for field in row._meta.fields
        if isinstance(field, models.JSONField) and getattr(row, field.attname) == []
    ]
    row.full_clean(exclude=empty_json)
    row.refresh_from_db()
    assert type(row).objects.filter(pk=row.pk).exists()


def test_it_makes_users_with_the_known_password() -> None:
    user = factories.UserFactory()
    assert user.check_password(PASSWORD)


def test_it_makes_revisions_holding_a_real_agent() -> None:
    revision = factories.RevisionFactory(validated=True)
    with revision.source.open("rb") as source:
        content = source.read()
    assert b"class RandomPlayer(Agent)" in content
    assert revision.size == len(content)
    assert revision.is_valid
    assert factories.RevisionFactory(competitor=revision.competitor).version == 2


def test_it_makes_matches_that_replay() -> None:
    match = factories.MatchFactory(duel__tournament__environment__name="connect_four")
    states = replay(make_environment("connect_four"), match.seed, match.actions)
    assert len(states) == match.steps + 1
    assert match.result in DuelResult.values
    assert factories.MatchFactory(duel=match.duel).index == 1


def test_it_tells_the_stories(alice, alices_bot, bob, bobs_bot, carol, organizer, invite) -> None:
    assert alices_bot.owner == alice and not alices_bot.is_public
    assert bobs_bot.owner == bob and bobs_bot.is_public
    assert alices_bot.environment == bobs_bot.environment
    assert alices_bot.environment.name == "tic_tac_toe"
    validated = Revision.objects.validated()
    assert validated.filter(competitor=alices_bot).count() == 1
    assert validated.filter(competitor=bobs_bot).count() == 1
    assert not can_see_competitor(carol, alices_bot)
    assert can_see_competitor(carol, bobs_bot)
    assert organizer.role == Role.ORGANIZER and organizer.is_staff
    assert invite.code == "welcome-2026" and invite.is_usable()
    assert alices_bot.revisions.get().validation_status == StepStatus.SUCCEEDED


def test_it_skips_a_test_whose_prerequisite_is_missing(monkeypatch) -> None:
    monkeypatch.delenv("ARENA_REQUIRE_ALL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no unicorn"):
        require(False, "no unicorn")
    require(True, "never shown")


def test_it_fails_instead_under_arena_require_all(monkeypatch) -> None:
    monkeypatch.setenv("ARENA_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match="no unicorn, and ARENA_REQUIRE_ALL=1"):
        require(False, "no unicorn")


def test_it_opens_a_page_of_the_live_server_in_chromium(live_server, page, screenshot) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    assert "Log in" in page.title()
    assert page.locator("input[name=username]").is_visible()
    path = screenshot("admin-login")
    assert path.name == "test_it_opens_a_page_of_the_live_server_in_chromium-admin-login.png"
    assert path.read_bytes().startswith(b"\x89PNG")


def test_every_model_change_has_its_migration() -> None:
    from django.core.management import call_command

    # Exits with 1 (SystemExit) when a model differs from its migrations.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_after_a_transactional_test_no_row_is_left_and_the_content_types_stay(
    duel, match, ratings, leaderboard, validation_duel, invite
) -> None:
    from django.apps import apps
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.test import TransactionTestCase

    from tests.support.database import empty_the_filled_tables, filled_tables

    require(connection.vendor == "postgresql", "the deletion is PostgreSQL's")
    made = (ContentType.objects.count(), Permission.objects.count())
    kept = {ContentType._meta.db_table, Permission._meta.db_table}
    tables = sorted(
        {model._meta.db_table for model in apps.get_models(include_auto_created=True)} - kept
    )
    assert {"core_duel", "core_match", "core_rating", "core_invitecode"} <= filled_tables(tables)

    empty_the_filled_tables(TransactionTestCase())

    assert filled_tables(tables) == set()
    assert (ContentType.objects.count(), Permission.objects.count()) == made
    assert made[0] >= len(apps.get_models())


def test_the_fuzzing_sends_each_operations_boundary_cases_with_tokens_through_one_transport():
    """With tokens, the boundary cases (schemathesis's coverage phase) go through the
    gateway for online play only, and through the WSGI handler for the rest
    (``tests/support/fuzzing.py``): every operation has them through exactly one."""
    import schemathesis

    from core.wsgi import application
    from tests.support.fuzzing import ONLINE_PLAY, fuzzing_config

    def with_boundaries(boundaries_of: str | None) -> dict[str, bool]:
        schema = schemathesis.openapi.from_wsgi(
            "/api/v1/openapi.json",
            application,
            config=fuzzing_config(tokens=None, examples=1, boundaries_of=boundaries_of),
        )
        operations = [result.ok() for result in schema.get_all_operations()]
        return {
            operation.label: schema.config.phases_for(operation=operation).coverage.enabled
            for operation in operations
        }

    gateway, wsgi = with_boundaries(ONLINE_PLAY), with_boundaries(None)
    online = {
        result.ok().label
        for result in schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)
        .include(tag=ONLINE_PLAY)
        .get_all_operations()
    }
    assert online and online < set(gateway)
    assert {label for label, enabled in gateway.items() if enabled} == online
    # The WSGI run leaves online play out (test_fuzzing.py) and has every other's.
    assert all(wsgi[label] for label in set(wsgi) - online)
