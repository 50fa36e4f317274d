"""Registration with an invite code, logging in and out, passwords, the profile, API tokens."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from core.errors import ArenaError
from core.models import ApiToken, InviteCode, User
from core.models.accounts import hash_token
from core.services.accounts import api_token_create, user_register
from tests.factories import PASSWORD, ApiTokenFactory, InviteCodeFactory
from tests.support.responses import text

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a fresh and long passphrase"


def register(client, code: str, **overrides: str):
    form = {
        "invite_code": code,
        "email": "dora@example.com",
        "display_name": "Dora",
        "team": "Blue",
        "password1": NEW_PASSWORD,
        "password2": NEW_PASSWORD,
        **overrides,
    }
    return client.post(reverse("register"), form)


def test_it_registers_a_newcomer_with_a_good_invite_code(client, invite):
    response = register(client, "welcome-2026")

    user = User.objects.get(email="dora@example.com")
    assert response.status_code == 302
    assert response.url == reverse("home")
    assert (user.display_name, user.team, user.role) == ("Dora", "Blue", "attendee")
    assert user.check_password(NEW_PASSWORD)
    assert client.session[SESSION_KEY] == str(user.pk)
    invite.refresh_from_db()
    assert invite.used_count == 1


@pytest.mark.parametrize(
    ("invite_fields", "message"),
    [
        (None, "This invite code does not exist"),
        ({"max_uses": 3, "used_count": 3}, "This invite code has been used up"),
        ({"expires_at": timezone.now() - timedelta(days=1)}, "This invite code has expired"),
        ({"is_active": False}, "This invite code has been withdrawn"),
    ],
    ids=["unknown", "used-up", "expired", "withdrawn"],
)
def test_it_refuses_a_bad_invite_code_and_creates_no_user(client, invite_fields, message):
    if invite_fields is not None:
        InviteCodeFactory(code="party", **invite_fields)

    response = register(client, "party")

    assert response.status_code == 400
    assert message in text(response)
    assert not User.objects.filter(email="dora@example.com").exists()


def test_it_counts_no_use_beyond_the_limit_when_the_last_use_goes_in_between(invite):
    InviteCode.objects.filter(pk=invite.pk).update(max_uses=1, used_count=1)

    # The form saw a usable code; someone else took its last use before the UPDATE.
    with pytest.raises(ArenaError, match="used up"):
        user_register(
            code="welcome-2026",
            email="dora@example.com",
            display_name="Dora",
            team="",
            password=NEW_PASSWORD,
        )

    assert not User.objects.filter(email="dora@example.com").exists()
    invite.refresh_from_db()
    assert invite.used_count == 1


def test_it_refuses_two_different_passwords(client, invite):
    response = register(client, "welcome-2026", password2="something else entirely")

    assert response.status_code == 400
    assert "The two passwords differ." in text(response)
    assert not User.objects.filter(email="dora@example.com").exists()
    invite.refresh_from_db()
    assert invite.used_count == 0


def test_it_applies_djangos_password_validators(client, invite, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}
    ]

    response = register(client, "welcome-2026", password1="short", password2="short")

    assert response.status_code == 400
    assert "This password is too short." in text(response)
    assert not User.objects.filter(email="dora@example.com").exists()


def test_it_refuses_an_email_address_already_registered(client, invite, carol):
    response = register(client, "welcome-2026", email="CAROL@example.com")

    assert response.status_code == 400
    assert "An account with this e-mail address exists already" in text(response)
    invite.refresh_from_db()
    assert invite.used_count == 0


def test_it_logs_in_with_the_email_address_in_any_case_and_logs_out(client, carol):
    response = client.post(
        reverse("login"), {"username": "Carol@Example.com", "password": PASSWORD}
    )

    assert response.status_code == 302
    assert client.session[SESSION_KEY] == str(carol.pk)
    assert "Carol" in text(client.get(reverse("home")))

    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))

    assert response.status_code == 302
    assert SESSION_KEY not in client.session


def test_it_refuses_a_wrong_password(client, carol):
    response = client.post(reverse("login"), {"username": carol.email, "password": "nope"})

    assert response.status_code == 200
    assert "The e-mail address or the password is wrong." in text(response)
    assert SESSION_KEY not in client.session


def test_it_changes_the_password(client, carol):
    client.force_login(carol)

    response = client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )

    assert response.status_code == 302
    assert response.url == reverse("password_change_done")
    carol.refresh_from_db()
    assert carol.check_password(NEW_PASSWORD)
    assert client.get(response.url).status_code == 200


def test_it_resets_a_forgotten_password_by_email(client, carol):
    response = client.post(reverse("password_reset"), {"email": carol.email})

    assert response.status_code == 302
    assert response.url == reverse("password_reset_done")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [carol.email]
    assert message.subject == "Reset your Arena password"
    link = re.search(r"http://testserver(/accounts/password/reset/\S+/)", str(message.body))
    assert link, message.body

    form = client.get(link.group(1), follow=True)
    assert "Choose a new password" in text(form)
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )

    assert done.status_code == 302
    assert done.url == reverse("password_reset_complete")
    carol.refresh_from_db()
    assert carol.check_password(NEW_PASSWORD)


def test_it_sends_no_reset_email_to_an_unknown_address(client):
    response = client.post(reverse("password_reset"), {"email": "nobody@example.com"})

    assert response.status_code == 302
    assert mail.outbox == []


def test_it_edits_the_display_name_and_team(client, carol):
    client.force_login(carol)

    response = client.post(reverse("profile"), {"display_name": "Caroline", "team": "Green"})

    assert response.status_code == 302
    carol.refresh_from_db()
    assert (carol.display_name, carol.team) == ("Caroline", "Green")


def test_it_sends_anonymous_visitors_of_the_profile_to_the_login_page(client):
    response = client.get(reverse("profile"))

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_it_shows_a_new_tokens_secret_once_and_stores_only_its_hash(client, carol):
    client.force_login(carol)

    response = client.post(reverse("token_create"), {"name": "laptop", "scopes": ["read", "play"]})

    token = ApiToken.objects.get(user=carol)
    secret = re.search(r"data-token-secret>(arena_[^<]+)<", response.content.decode()).group(1)
    assert response.status_code == 200
    assert token.name == "laptop"
    assert token.scope_set == {"read", "play"}
    assert token.token_hash == hash_token(secret)
    assert token.hint == secret[:10]
    assert secret not in {token.hint, token.token_hash}
    profile = client.get(reverse("profile")).content.decode()
    assert "laptop" in profile and token.hint in profile
    assert secret not in profile


def test_it_refuses_a_second_active_token_with_the_same_name(client, carol):
    client.force_login(carol)
    client.post(reverse("token_create"), {"name": "laptop", "scopes": ["read"]})

    response = client.post(reverse("token_create"), {"name": "laptop", "scopes": ["read"]})

    assert response.status_code == 400
    assert "You already have a token named 'laptop'" in text(response)
    assert ApiToken.objects.filter(user=carol).count() == 1


def test_it_refuses_a_token_without_a_scope_or_with_an_unknown_one(client, carol):
    client.force_login(carol)

    none = client.post(reverse("token_create"), {"name": "laptop"})
    unknown = client.post(reverse("token_create"), {"name": "laptop", "scopes": ["admin"]})

    assert none.status_code == unknown.status_code == 400
    assert "This field is required" in text(none)
    assert "Select a valid choice. admin is not one of the available choices." in text(unknown)
    assert not ApiToken.objects.filter(user=carol).exists()


def test_it_revokes_a_token(client, carol):
    token = ApiTokenFactory(user=carol, name="ci")
    client.force_login(carol)
    assert token.hint in text(client.get(reverse("profile")))

    response = client.post(reverse("token_revoke", args=[token.pk]))

    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert token.hint not in text(client.get(reverse("profile")))


def test_it_does_not_let_another_user_revoke_a_token(client, carol, bob):
    token = ApiTokenFactory(user=carol, name="ci")
    client.force_login(bob)

    response = client.post(reverse("token_revoke", args=[token.pk]))

    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_it_revokes_tokens_by_post_only(client, carol):
    token = ApiTokenFactory(user=carol)
    client.force_login(carol)

    assert client.get(reverse("token_revoke", args=[token.pk])).status_code == 405
    token.refresh_from_db()
    assert token.is_active


def test_the_token_service_refuses_unknown_scopes_and_keeps_the_known_ones_in_order(carol):
    with pytest.raises(ArenaError, match=r"among read, submit, play \(not admin\)"):
        api_token_create(user=carol, name="x", scopes=["read", "admin"])

    token, _ = api_token_create(user=carol, name="y", scopes=["play", "read"])

    assert token.scopes == "read play"
