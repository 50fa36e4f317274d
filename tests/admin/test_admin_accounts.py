from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from core.models import ApiToken, Environment, InviteCode, Role, User
from tests.factories import ApiTokenFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_adds_a_user_who_logs_in_with_an_email_address(organizer_client: Client) -> None:
    response = organizer_client.post(
        reverse("admin:core_user_add"),
        {
            "email": "Dora@Example.com",
            "display_name": "Dora",
            "role": Role.ORGANIZER,
            "team": "Blue",
            "usable_password": "true",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
        },
    )

    assert response.status_code == 302
    dora = User.objects.get(email="dora@example.com")
    assert dora.check_password("a long enough passphrase")
    assert (dora.display_name, dora.role, dora.team) == ("Dora", Role.ORGANIZER, "Blue")
    assert dora.is_staff


def test_it_refuses_an_email_address_in_use(organizer_client: Client, alice: User) -> None:
    response = organizer_client.post(
        reverse("admin:core_user_add"),
        {
            "email": "ALICE@example.com",
            "display_name": "Another Alice",
            "role": Role.ATTENDEE,
            "usable_password": "false",
        },
    )

    assert response.status_code == 200
    assert User.objects.filter(email__iexact="alice@example.com").count() == 1


def test_it_keeps_staff_status_with_the_role_when_a_user_is_edited(
    organizer_client: Client, carol: User
) -> None:
    page = organizer_client.get(reverse("admin:core_user_change", args=[carol.pk]))
    form = page.context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    data.update(role=Role.ORGANIZER)

    response = organizer_client.post(reverse("admin:core_user_change", args=[carol.pk]), data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    carol.refresh_from_db()
    assert carol.role == Role.ORGANIZER
    assert carol.is_staff


def test_it_makes_organizers_and_attendees(
    run_action: Callable[..., list[str]], carol: User, organizer: User
) -> None:
    run_action(User, "make_organizer", [carol])
    carol.refresh_from_db()
    assert (carol.role, carol.is_staff) == (Role.ORGANIZER, True)

    notes = run_action(User, "make_attendee", [carol, organizer])
    carol.refresh_from_db()
    organizer.refresh_from_db()
    assert (carol.role, carol.is_staff) == (Role.ATTENDEE, False)
    assert (organizer.role, organizer.is_staff) == (Role.ORGANIZER, True)
    assert "You cannot take your own organizer role; skipped." in notes


def test_it_sends_a_password_reset_email(run_action: Callable[..., list[str]], carol: User) -> None:
    notes = run_action(User, "send_password_reset", [carol])

    assert notes == ["Password reset e-mail sent to carol@example.com."]
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["carol@example.com"]
    assert "/accounts/password/reset/" in mail.outbox[0].body


def test_it_does_not_let_an_organizer_make_a_superuser(
    organizer_client: Client, carol: User
) -> None:
    page = organizer_client.get(reverse("admin:core_user_change", args=[carol.pk]))
    assert "is_superuser" not in page.context["adminform"].form.fields
    superuser = UserFactory(is_superuser=True, is_staff=True)
    page = organizer_client.get(reverse("admin:core_user_change", args=[superuser.pk]))
    assert page.status_code == 200
    assert not page.context["has_change_permission"]


def test_it_records_who_made_an_invite_code(organizer_client: Client, organizer: User) -> None:
    response = organizer_client.post(
        reverse("admin:core_invitecode_add"),
        {"code": "spring-2026", "note": "for the workshop", "max_uses": 30, "is_active": "on"},
    )

    assert response.status_code == 302
    invite = InviteCode.objects.get(code="spring-2026")
    assert invite.created_by == organizer
    assert invite.max_uses == 30
    assert invite.used_count == 0


def test_it_revokes_api_tokens(run_action: Callable[..., list[str]], alice: User) -> None:
    token = ApiTokenFactory(user=alice)

    notes = run_action(ApiToken, "revoke", [token])

    assert notes == ["1 token(s) revoked."]
    assert not ApiToken.objects.active().exists()


def test_it_reimports_environments_from_their_info_files(
    run_action: Callable[..., list[str]], environments: dict[str, Environment]
) -> None:
    Environment.objects.filter(name="quarto").update(move_time=99, title="Old title")

    notes = run_action(Environment, "reimport", [environments["quarto"]])

    quarto = Environment.objects.get(name="quarto")
    assert quarto.title == "Quarto"
    assert quarto.move_time != 99
    assert notes[0].startswith("Imported 10 environment(s)")
