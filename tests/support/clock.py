"""``clock``: Django's ``timezone.now`` under the test's control (a pytest plugin, loaded
by the root ``conftest.py`` when Django is installed): a schedule of days is run by moving
it forward, with no sleeping."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone


class Clock:
    """What ``timezone.now()`` returns, everywhere (the services, the models' automatic
    times), until the test moves it."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment

    def to(self, moment: datetime) -> None:
        self.moment = moment

    def forward(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Stopped at the real time it was made; move it with ``to`` or ``forward``."""
    stopped = Clock(timezone.now())
    monkeypatch.setattr(timezone, "now", stopped)
    return stopped
