"""Validation by self-play (``validate``): an agent plays copies of itself in every seat
of the game, and any fault of any copy fails it."""

from __future__ import annotations

import dataclasses
from typing import Any

from environments.registry import load_info
from referee.duel import run_duel
from referee.results import DuelResult, Fault
from sandboxes.base import AgentSource, SandboxBackend


@dataclasses.dataclass
class ValidationResult:
    passed: bool
    message: str
    duel: DuelResult


def _log_tail(log: str, lines: int = 20) -> str:
    tail = log.strip().splitlines()[-lines:]
    return "\n".join(tail)


def validate(
    environment: str,
    source: AgentSource,
    *,
    backend: SandboxBackend,
    seed: int | None = None,
    **overrides: Any,
) -> ValidationResult:
    """Self-play: the agent plays copies of itself in every seat of the game; any fault of
    any copy fails it."""
    info = load_info(environment)
    if overrides.get("matches") is None:
        overrides["matches"] = info.validation_matches
    duel = run_duel(environment, (source,) * info.players, backend=backend, seed=seed, **overrides)
    if duel.infrastructure_error:
        return ValidationResult(
            False, f"validation could not run (not the agent's fault): {duel.error_msg}", duel
        )
    faults = [fault for match in duel.matches for fault in match.faults]
    if not faults:
        return ValidationResult(
            True, f"validated: {len(duel.matches)} self-play matches without a fault", duel
        )
    first = faults[0]
    log = duel.logs[first.player - 1]
    return ValidationResult(False, validation_failure(faults, log, "self-play matches"), duel)


def validation_failure(faults: list[Fault], log: str, played: str) -> str:
    """Why a validation failed: the first fault, advice, and the end of the agent's log."""
    first = faults[0]
    lines = [
        f"validation failed: {first.kind.value} — {first.message}"
        + (f" (move {first.step + 1})" if first.step is not None else ""),
        first.kind.advice,
    ]
    if len(faults) > 1:
        lines.append(f"{len(faults) - 1} more fault(s) in the other {played}.")
    tail = _log_tail(log)
    if tail:
        lines.append("last lines of the agent's log:\n" + tail)
    return "\n".join(line for line in lines if line)
