"""The people of our test stories and the Django settings of a test run (a pytest plugin,
loaded by the root ``conftest.py`` when Django is installed).

- alice: an attendee; owns ``alices-bot``, a private tic-tac-toe competitor with one
  validated revision.
- bob: an attendee, her opponent; owns ``bobs-bot``, public, with a validated revision.
- carol: an attendee with nothing of her own and no access to alice's things.
- organizer: runs tournaments from the admin (role organizer, staff).
- invite: the active invite code ``welcome-2026``.

Every user's password is ``tests.factories.PASSWORD``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from core.models import Competitor, InviteCode, User
from tests.factories import (
    CompetitorFactory,
    InviteCodeFactory,
    OrganizerFactory,
    RevisionFactory,
    UserFactory,
)

_media_root: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    global _media_root
    # Hashing with the production hasher costs a quarter of a second per user.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Uploads made by tests go to a folder of this run, never to var/media.
    _media_root = Path(tempfile.mkdtemp(prefix="arena-test-media-"))
    settings.MEDIA_ROOT = _media_root


def pytest_unconfigure(config: pytest.Config) -> None:
    if _media_root is not None:
        shutil.rmtree(_media_root, ignore_errors=True)


@pytest.fixture
def alice(db: None) -> User:
    alice = UserFactory(email="alice@example.com", display_name="Alice")
    bot = CompetitorFactory(owner=alice, name="alices-bot", is_public=False)
    RevisionFactory(competitor=bot, validated=True)
    return alice


@pytest.fixture
def alices_bot(alice: User) -> Competitor:
    return alice.competitors.get(name="alices-bot")


@pytest.fixture
def bob(db: None) -> User:
    bob = UserFactory(email="bob@example.com", display_name="Bob")
    bot = CompetitorFactory(owner=bob, name="bobs-bot", is_public=True)
    RevisionFactory(competitor=bot, validated=True)
    return bob


@pytest.fixture
def bobs_bot(bob: User) -> Competitor:
    return bob.competitors.get(name="bobs-bot")


@pytest.fixture
def carol(db: None) -> User:
    return UserFactory(email="carol@example.com", display_name="Carol")


@pytest.fixture
def organizer(db: None) -> User:
    return OrganizerFactory(email="olga@example.com", display_name="Olga")


@pytest.fixture
def invite(db: None) -> InviteCode:
    return InviteCodeFactory(code="welcome-2026", is_active=True, created_by=None)
