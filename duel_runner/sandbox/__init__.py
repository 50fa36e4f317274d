"""Sandbox backends; ``get_backend`` picks one by name (the ``ARENA_SANDBOX`` setting)."""

from __future__ import annotations

from duel_runner.sandbox.base import (
    AgentSource,
    InvalidAgent,
    SandboxBackend,
    SandboxedAgent,
    SandboxError,
    SandboxLimits,
)

BACKENDS = ("process",)


def get_backend(name: str = "process") -> SandboxBackend:
    if name == "process":
        from duel_runner.sandbox.process import ProcessSandbox

        return ProcessSandbox()
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
