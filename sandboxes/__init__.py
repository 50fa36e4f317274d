"""Sandbox backends; ``get_backend`` picks one by name (the ``ARENA_SANDBOX`` setting).

The ``remote`` seat of an online agent (``sandboxes.remote``) is not picked by name: the
duel runner makes one per duel, on the seat bus, beside the other seat's sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandboxes.base import (
    AgentSource,
    InvalidAgent,
    SandboxBackend,
    SandboxedAgent,
    SandboxError,
    SandboxLimits,
)

BACKENDS = ("process", "docker")


def get_backend(
    name: str = "process", *, root: Path | None = None, **options: Any
) -> SandboxBackend:
    """The backend called ``name``; ``root`` is where agents' folders go (its default),
    ``options`` go to the backend's constructor."""
    if name == "process":
        from sandboxes.process import ProcessSandbox

        return ProcessSandbox(root, **options)
    if name == "docker":
        from sandboxes.docker import DockerSandbox

        return DockerSandbox(root, **options)
    raise SandboxError(f"unknown sandbox backend {name!r}; available: {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "AgentSource",
    "InvalidAgent",
    "SandboxBackend",
    "SandboxError",
    "SandboxLimits",
    "SandboxedAgent",
    "get_backend",
]
