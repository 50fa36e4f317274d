"""An LLM player's validation: one real request to its server, as a duel would send it.

The harness (``llm.harness``) is asked for the first move of a match of the player's game,
from the game's first position, with the player's own settings and a clock of
``seconds``. The server passes when it answers: with a legal move, or with an answer the
harness could not use (a weak model still plays; its illegal moves are charged to it in
its duels). It fails when it cannot play: unreachable, refusing the request (a wrong key,
an unknown model), failing every retry, or silent past the clock. The message says which,
with the server's own words.
"""

from __future__ import annotations

import dataclasses
import time

from environments.registry import make_environment
from llm import records
from llm.config import LLMConfig
from llm.harness import Harness
from llm.provider import ProviderFailure

#: Retries of a failing request in the probe (a duel's seat makes ``provider_retries``).
PROBE_RETRIES = 1


@dataclasses.dataclass(frozen=True)
class Probe:
    passed: bool
    #: What happened, for the validation's log and, failed, its error.
    message: str


def probe(
    config: LLMConfig, environment: str, *, seconds: float, players: int | None = None
) -> Probe:
    """Ask the model for the first move of ``environment``'s first position, the game set
    up for ``players`` (its own count by default), as its duels are."""
    game = make_environment(environment, players=players)
    game.reset(seed=0)
    [seat, *_] = game.to_move()
    harness = Harness(dataclasses.replace(config, provider_retries=PROBE_RETRIES))
    started = time.monotonic()
    try:
        harness.handle(
            {"type": "hello", "environment": environment, "player_count": game.num_players}
        )
        harness.handle({"type": "start", "match": 0, "player": seat, "seed": 0})
        answer = harness.handle(
            {
                "type": "act",
                "id": 1,
                "match": 0,
                "step": 0,
                "observation": game.observation(seat),
                "legal_actions": game.legal_actions(seat),
                "time_left": {"move": seconds, "bank": 0},
            }
        )
    except ProviderFailure as failure:
        return Probe(False, f"the server could not play: {failure}")
    finally:
        harness.close()
    took = time.monotonic() - started
    transcript = harness.transcript(0) or {}
    turns = transcript.get("turns") or [{}]
    outcome = turns[-1].get("outcome")
    asked = f"{config.model} at {config.base_url}"
    if answer is None or outcome == records.TIMEOUT:
        return Probe(False, f"{asked} gave no answer within {seconds:g} s, its time for a move")
    if outcome == records.LEGAL:
        return Probe(
            True, f"{asked} answered the first move with a legal one in {took:.1f} s: ready to play"
        )
    return Probe(
        True,
        f"{asked} answered in {took:.1f} s, but not with a legal move ({outcome}): it plays, "
        "and such moves are charged to it in its duels",
    )
