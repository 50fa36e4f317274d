"""The harness: plays one seat of a duel for a model, through the referee's messages.

It answers the protocol of ``docs/protocol.md`` as any agent does: ``ready`` to the
handshake, an ``action`` to each ``act``. For each move it sends the prompts of
``llm.prompts`` and reads the answer strictly. A refused answer (illegal, unparseable,
too long) is asked again at most ``MAX_ANSWER_RETRIES`` times, each time naming the
error; after that the refused action (or, with none, a marker that no game accepts) goes
to the referee, which charges the illegal action to the model: a move is never chosen
for it. Every request and answer is recorded, per match, in ``conversations``.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from environments.registry import load_info, make_environment
from llm import prompts, records
from llm.config import LLMConfig
from llm.prompts import HARNESS_VERSION, SUPPORTED_HARNESS_VERSIONS, Reading, Turn, Verdict
from llm.provider import Completion, OutOfTime, Provider, ProviderFailure, Stopped

__all__ = [
    "HARNESS_VERSION",
    "SUPPORTED_HARNESS_VERSIONS",
    "Harness",
    "ProviderFailure",
    "harness_hash",
]

#: Seconds before the move's clock runs out at which the harness stops asking.
DEADLINE_MARGIN = 0.1
#: Answers are kept whole up to ``max_answer_chars``; refused ones are quoted back cut
#: to this (a retry prompt must not grow with a model that rambles).
QUOTED_ANSWER_CHARS = 2_000


@functools.cache
def harness_hash() -> str:
    """SHA-256 of the harness's code (prompts, reading, provider): stored with every
    match, so that two results are comparable only if their harness was the same."""
    digest = hashlib.sha256()
    for name in ("prompts.py", "harness.py", "provider.py", "transport.py"):
        digest.update((Path(__file__).with_name(name)).read_bytes())
    return digest.hexdigest()


class Harness:
    """One seat: turns the referee's messages into answers. ``conversations`` (match index
    -> conversation) may be shared with the seat's later restarts; ``lock`` guards it."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        conversations: dict[int, dict[str, Any]] | None = None,
        lock: threading.Lock | None = None,
        provider: Provider | None = None,
    ) -> None:
        if config.harness_version not in SUPPORTED_HARNESS_VERSIONS:
            raise ProviderFailure(
                f"harness version {config.harness_version!r} is not available here "
                f"(this Arena runs version {HARNESS_VERSION})"
            )
        self.config = config
        self.provider = provider or Provider(config)
        self.conversations = {} if conversations is None else conversations
        self.lock = lock or threading.Lock()
        self.environment_name = ""
        self._environment: Any = None
        self._info: Any = None
        self._match = -1
        self._seat = 0
        self._own_moves: list[Any] = []

    def close(self) -> None:
        self.provider.close()

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to one message of the referee, if it wants one. Raises
        ``ProviderFailure`` when the provider failed for good."""
        kind = message.get("type")
        if kind == "hello":
            self.environment_name = str(message["environment"])
            self._info = load_info(self.environment_name)
            # Set up for the duel's count of players (a game with a ``players`` setting).
            self._environment = make_environment(
                self.environment_name, players=int(message.get("player_count") or 2)
            )
            return {"type": "ready", "name": self.config.model}
        if kind == "start":
            self._begin(int(message["match"]), int(message["player"]))
            return None
        if kind == "act":
            return self._act(message, received=time.monotonic())
        return None

    # -- a match ------------------------------------------------------------------------

    def _begin(self, match: int, seat: int) -> None:
        self._match, self._seat, self._own_moves = match, seat, []
        with self.lock:
            self.conversations[match] = {
                "model": self.config.model,
                "base_url": self.config.base_url,
                "harness_version": HARNESS_VERSION,
                "harness_hash": harness_hash(),
                "sampling": self.config.sampling(),
                "seat": seat,
                "turns": [],
            }

    def _act(self, request: dict[str, Any], *, received: float) -> dict[str, Any] | None:
        match = int(request.get("match", self._match))
        if match != self._match:  # the referee always starts a match first; to be safe
            self._begin(match, self._seat)
        clock = request.get("time_left") or {}
        move_time, bank = float(clock.get("move", 0)), float(clock.get("bank", 0))
        # A little before the referee's own deadline, so that a provider still failing
        # then is seen as the provider's failure (an error) and not the model's timeout.
        deadline = received + move_time + bank - DEADLINE_MARGIN
        legal = list(request.get("legal_actions") or [])
        turn = Turn(
            environment=self.environment_name,
            match=match,
            step=int(request.get("step", 0)),
            seat=self._seat,
            observation=request.get("observation") or {},
            legal_actions=legal,
            own_moves=list(self._own_moves),
            move_time=move_time,
            time_bank=bank,
        )
        record: dict[str, Any] = {
            "match": match,
            "step": turn.step,
            "request": request.get("id"),
            "legal_actions": legal,
            "attempts": [],
            "action": None,
            "outcome": records.PENDING,
            "latency_ms": None,
            "prompt_tokens": 0,
            "completion_tokens": 0,
        }
        with self.lock:
            self.conversations[match]["turns"].append(record)
        system = prompts.system_prompt(self._info, self._environment, self._seat)
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompts.move_prompt(turn, self._environment)},
        ]
        reading: Reading | None = None
        for retry in range(prompts.MAX_ANSWER_RETRIES + 1):
            try:
                completion = self.provider.complete(messages, deadline=deadline)
            except OutOfTime:
                self._settle(record, records.TIMEOUT, received)
                return None
            except Stopped:
                return None
            except ProviderFailure:
                self._settle(record, records.PROVIDER_FAILURE, received)
                raise
            reading = prompts.read_answer(completion.text, legal, too_long=completion.too_long)
            self._attempt(record, messages, completion, reading, retry)
            if reading.verdict == Verdict.LEGAL:
                break
            if retry < prompts.MAX_ANSWER_RETRIES:
                messages = [
                    *messages,
                    {"role": "assistant", "content": completion.text[:QUOTED_ANSWER_CHARS]},
                    {
                        "role": "user",
                        "content": prompts.retry_prompt(reading.error, legal, retry + 1),
                    },
                ]
        assert reading is not None
        # Without a parsed action, not a move chosen for the model but a marker no game
        # accepts, so that the referee charges the illegal action, with the reason in it.
        action = reading.action if reading.parsed else {"unparseable_answer": reading.error}
        outcome = {
            Verdict.LEGAL: records.LEGAL,
            Verdict.ILLEGAL: records.ILLEGAL,
        }.get(reading.verdict, records.UNPARSEABLE)
        record["action"] = action
        self._settle(record, outcome, received)
        if outcome == records.LEGAL:
            self._own_moves.append(action)
        return {"type": "action", "id": request.get("id"), "action": action}

    def _attempt(
        self,
        record: dict[str, Any],
        messages: list[dict[str, str]],
        completion: Completion,
        reading: Reading,
        retry: int,
    ) -> None:
        with self.lock:
            record["attempts"].append(
                {
                    "kind": "retry" if retry else "move",
                    "messages": [dict(message) for message in messages],
                    "answer": completion.text,
                    "verdict": reading.verdict,
                    "error": reading.error,
                    "parsed": reading.action if reading.parsed else None,
                    "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens,
                    "latency_ms": completion.latency_ms,
                    "finish_reason": completion.finish_reason,
                    "provider_errors": completion.provider_errors,
                }
            )
            record["prompt_tokens"] += completion.prompt_tokens or 0
            record["completion_tokens"] += completion.completion_tokens or 0

    def _settle(self, record: dict[str, Any], outcome: str, received: float) -> None:
        with self.lock:
            record["outcome"] = outcome
            record["latency_ms"] = round((time.monotonic() - received) * 1000, 3)

    def transcript(self, match: int) -> dict[str, Any] | None:
        """The match's conversation as it stands, finished (``records.finished``)."""
        with self.lock:
            conversation = self.conversations.get(match)
            return None if conversation is None else records.finished(conversation)
