from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django.fixtures import Settings


@pytest.fixture(autouse=True)
def arena_dirs(settings: Settings, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_BUILD_ROOT = tmp_path / "builds"
