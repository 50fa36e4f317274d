"""The engine proxy in front of the real engine, with the sandbox root as its bind root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docker import docker_base_image
from tests.support.engine_proxy import RunningProxy, engine_proxy_running, using_engine_proxy

__all__ = ["docker_base_image"]


@pytest.fixture
def engine_proxy(docker_base_image: str, sandbox_root: Path) -> Iterator[RunningProxy]:
    # Verbose: every call it forwards is logged, so a test can tell none was.
    with engine_proxy_running([sandbox_root], "--verbose") as proxy:
        yield proxy


@pytest.fixture
def through_engine_proxy(engine_proxy: RunningProxy) -> Iterator[RunningProxy]:
    """``sandboxes.docker_engine`` reaches the engine through the proxy only."""
    with using_engine_proxy(engine_proxy):
        yield engine_proxy
