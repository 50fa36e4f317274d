"""Sandbox backends; ``get_backend`` picks one by name (the ``ARENA_SANDBOX`` setting)."""

from __future__ import annotations

from pathlib import Path

from sandboxes.base import (
    AgentSource,
    InvalidAgent,
    SandboxBackend,
    SandboxedAgent,
    SandboxError,
    SandboxLimits,
)

BACKENDS = ("process", "docker")


def get_backend(name: str = "process", *, root: Path | None = None) -> SandboxBackend:
    """The backend called ``name``; ``root`` is where agents' folders go (its default)."""
    if name == "process":
        from sandboxes.process import ProcessSandbox

        return ProcessSandbox(root)
    if name == "docker":
        from sandboxes.docker import DockerSandbox

        return DockerSandbox(root)
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
