"""The page tests' client; their played world is in ``tests.support.stories``."""

from __future__ import annotations

import pytest
from django.test import Client

from core.models import User


@pytest.fixture
def alice_client(client: Client, alice: User) -> Client:
    client.force_login(alice)
    return client
