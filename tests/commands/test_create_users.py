from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from core.models import Role, User

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_a_user_from_flags() -> None:
    out, _ = run(
        "create_user",
        "--no-input",
        "--email=Dora@Example.com",
        "--display-name=Dora",
        "--role=organizer",
        "--team=Blue",
        "--password=a long enough passphrase",
    )

    dora = User.objects.get(email="dora@example.com")
    assert (dora.display_name, dora.role, dora.team) == ("Dora", Role.ORGANIZER, "Blue")
    assert dora.is_staff
    assert dora.check_password("a long enough passphrase")
    assert "Created organizer dora@example.com" in out


def test_it_prints_a_random_password_once_when_none_is_given() -> None:
    out, _ = run("create_user", "--no-input", "--email=eve@example.com", "--display-name=Eve")

    eve = User.objects.get(email="eve@example.com")
    assert eve.role == Role.ATTENDEE
    assert not eve.is_staff
    password = out.split("Password (shown once): ")[1].strip()
    assert eve.check_password(password)


def test_it_refuses_an_email_address_in_use(alice: User) -> None:
    with pytest.raises(CommandError, match="already exists"):
        run("create_user", "--no-input", "--email=ALICE@example.com", "--display-name=Al")
    assert User.objects.filter(email__iexact="alice@example.com").count() == 1


def test_it_needs_the_email_and_name_without_a_terminal() -> None:
    with pytest.raises(CommandError, match="--email and --display-name are required"):
        run("create_user", "--no-input", "--email=eve@example.com")
    assert not User.objects.exists()


def test_it_asks_for_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["not an address", "fay@example.com", "Fay", "judge", "organizer", "Red"])
    passwords = iter(["one passphrase", "another one", "good passphrase", "good passphrase"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(passwords))

    _, err = run("create_user")

    fay = User.objects.get(email="fay@example.com")
    assert (fay.display_name, fay.role, fay.team) == ("Fay", Role.ORGANIZER, "Red")
    assert fay.check_password("good passphrase")
    assert "'not an address' is not a valid e-mail address" in err
    assert "unknown role 'judge'" in err
    assert "the two passwords differ" in err


USERS_CSV = """email,display_name,role,team,password
gil@example.com,Gil,attendee,Blue,a long enough passphrase
hana@example.com,Hana,organizer,,
not-an-address,Ivan,attendee,,
jo@example.com,Jo,referee,Green,
alice@example.com,Alice again,attendee,,
"""


def test_it_creates_users_from_a_csv_file_and_reports_each_row(tmp_path: Path, alice: User) -> None:
    path = tmp_path / "users.csv"
    path.write_text(USERS_CSV)
    out, err = io.StringIO(), io.StringIO()

    with pytest.raises(CommandError, match="2 row"):
        call_command("create_users", f"--file={path}", stdout=out, stderr=err)

    gil = User.objects.get(email="gil@example.com")
    assert (gil.role, gil.team) == (Role.ATTENDEE, "Blue")
    assert gil.check_password("a long enough passphrase")
    hana = User.objects.get(email="hana@example.com")
    assert hana.role == Role.ORGANIZER and hana.is_staff
    hana_password = out.getvalue().split("hana@example.com created (organizer) password: ")[1]
    assert hana.check_password(hana_password.split()[0])
    # Bad rows are reported and leave nothing behind.
    assert "line 4: not-an-address error" in err.getvalue()
    assert "line 5: jo@example.com error: unknown role 'referee'" in err.getvalue()
    assert not User.objects.filter(email="jo@example.com").exists()
    assert "line 6: alice@example.com skipped" in out.getvalue()
    assert User.objects.get(email="alice@example.com").display_name == "Alice"
    assert "2 created, 1 skipped, 2 error(s)." in out.getvalue()


def test_it_skips_created_users_when_the_fixed_file_runs_again(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_text("email,display_name\ngil@example.com,Gil\nhana@example.com,\n")
    with pytest.raises(CommandError):
        run("create_users", f"--file={path}")

    path.write_text("email,display_name\ngil@example.com,Gil\nhana@example.com,Hana\n")
    out, _ = run("create_users", f"--file={path}")

    assert "1 created, 1 skipped, 0 error(s)." in out
    assert User.objects.count() == 2


def test_it_refuses_a_file_without_the_required_columns(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_text("mail,name\ngil@example.com,Gil\n")

    with pytest.raises(CommandError, match="lacks display_name, email"):
        run("create_users", f"--file={path}")
    assert not User.objects.exists()


def test_it_creates_the_demo_users_once(settings: Settings) -> None:
    settings.DEBUG = True
    out, _ = run("create_demo_users")
    assert User.objects.count() == 4
    organizer = User.objects.get(email="organizer@example.com")
    assert organizer.is_staff and organizer.role == Role.ORGANIZER
    assert organizer.check_password("organizer-arena-demo")
    assert "password: alice-arena-demo" in out

    out, _ = run("create_demo_users")
    assert User.objects.count() == 4
    assert out.count("exists, left unchanged") == 4


def test_it_refuses_demo_users_on_a_real_site(settings: Settings) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match="ARENA_DEBUG is off"):
        run("create_demo_users")
    assert not User.objects.exists()
