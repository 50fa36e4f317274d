"""A duel's settings (``DuelSettings``): its matches, clocks and limits, those of the
environment's ``info.yml`` unless overridden."""

from __future__ import annotations

import dataclasses
from typing import Any

from arena_sdk import protocol

from environments.registry import EnvironmentInfo
from sandboxes.base import SandboxLimits


@dataclasses.dataclass(frozen=True)
class DuelSettings:
    matches: int
    move_time: float
    time_bank: float
    startup_time: float
    limits: SandboxLimits
    max_message_bytes: int = protocol.DEFAULT_MAX_MESSAGE_BYTES
    #: In a game played in turns, the referee and the agents share one CPU of their own
    #: while the matches are played, when one is free (``sandboxes.cpus``).
    share_cpu: bool = True
    #: Random moves the referee plays at the start of each match (``referee.openings``).
    opening_moves: int = 0

    @classmethod
    def from_info(cls, info: EnvironmentInfo, **overrides: Any) -> DuelSettings:
        """The limits of ``info.yml``; ``overrides`` replace any field (None is ignored)."""
        settings = cls(
            matches=info.matches_per_duel,
            move_time=info.move_time,
            time_bank=info.time_bank,
            startup_time=info.startup_time,
            limits=SandboxLimits(memory_mb=info.memory_mb, cpu_seconds=info.cpu_seconds),
            opening_moves=info.opening_moves,
        )
        return dataclasses.replace(
            settings, **{key: value for key, value in overrides.items() if value is not None}
        )

    def limits_message(self) -> dict[str, Any]:
        return {
            "move_time": self.move_time,
            "time_bank": self.time_bank,
            "startup_time": self.startup_time,
            "max_message_bytes": self.max_message_bytes,
            "memory_mb": self.limits.memory_mb,
        }


def llm_clock(info: EnvironmentInfo) -> dict[str, float]:
    """The clock of a duel with an LLM seat (``info.yml``'s ``llm_move_time`` and
    ``llm_time_bank``), for every seat of it: overrides for ``run_duel``."""
    return {"move_time": info.llm_move_time, "time_bank": info.llm_time_bank}
