"""The ``llm`` seat: a language model behind an OpenAI-compatible server plays for an agent.

Nothing is started and no code of the model's owner runs: the seat is a socket pair
whose other end the LLM harness (``llm.harness``) answers from a thread of this process,
asking the model over HTTP for each move. So the referee, its clocks, its faults and its
records are those of any agent; what differs is said here:

- **Conversations**: every request and answer of a match is kept (``transcript``), and the
  referee stores it with the match (``MatchRecord.transcripts``).
- **The provider's failures are Arena's**: a server that keeps failing (timeouts, 5xx,
  429, broken streams) past the harness's retries ends the seat with ``SandboxError``, so
  the duel ends in error, unrated: it is not the model's fault.
- **The key stays here**: it is sent to the model's server only, and never written to the
  seat's log or its conversations.
- **Waiting costs no CPU**: a duel's seats wait on the network in threads, so one worker
  process plays many LLM duels at once (the ``online`` queue runs them in threads).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import orjson

from sandboxes.base import AgentSource, SandboxError, SandboxLimits
from sandboxes.socket_seat import POLL_SECONDS, SocketSeat

if TYPE_CHECKING:
    # Imported where a seat starts: the harness and its HTTP client take a tenth of a
    # second to import, which a duel without an LLM seat (the command line's) never pays.
    from llm.config import LLMConfig
    from llm.harness import Harness


def _server_failed(why: str) -> str:
    """The seat's failure when the model's server failed for good (the duel's error)."""
    return f"the model's server failed: {why}"


class LLMAgent(SocketSeat):
    """One start of an LLM seat: the harness in a thread, answering the referee."""

    def __init__(self, harness: Harness, *, log_bytes: int) -> None:
        from llm.harness import harness_hash

        super().__init__(log_bytes=log_bytes)
        self.harness = harness
        config = harness.config
        self._note(
            f"{config.describe()}, harness version {config.harness_version} ({harness_hash()[:12]})"
        )
        self._thread = threading.Thread(target=self._play, name="llm-seat", daemon=True)
        self._thread.start()

    def _play(self) -> None:
        from llm.harness import ProviderFailure

        for line in self._referee_lines():
            message = orjson.loads(line)  # the referee's own output
            if message.get("type") == "bye":
                self._heard_bye()
                return
            try:
                reply = self.harness.handle(message)
            except ProviderFailure as failure:
                self._fail(_server_failed(str(failure)))
                return
            except Exception as error:  # the harness is Arena's code: its bug is Arena's
                self._fail(f"the LLM harness failed: {error!r}")
                return
            if message.get("type") == "act":
                self._note_turn(message)
            if reply is None:
                continue
            try:
                self._relay_end.sendall(orjson.dumps(reply) + b"\n")
            except OSError:
                return

    def _note_turn(self, request: dict[str, Any]) -> None:
        conversation = self.harness.conversations.get(int(request.get("match", -1)), {})
        turns = conversation.get("turns") or [{}]
        turn = turns[-1]
        attempts = turn.get("attempts", [])
        problems = [
            f"{attempt['verdict']}: {attempt['error']}"
            for attempt in attempts
            if attempt.get("error")
        ]
        provider = sum(len(attempt.get("provider_errors", [])) for attempt in attempts)
        self._note(
            f"match {turn.get('match')} move {int(turn.get('step') or 0) + 1}: "
            f"{turn.get('outcome')} {orjson.dumps(turn.get('action')).decode()[:80]} in "
            f"{turn.get('latency_ms')} ms, {len(attempts)} request(s)"
            + (f", {provider} provider retr{'y' if provider == 1 else 'ies'}" if provider else "")
            + ("".join(f"\n  refused {problem}" for problem in problems))
        )

    def timeout_excuse(self) -> str | None:
        """Arena's failure, or the provider's under way: a move's clock that runs out while
        the model's server is failing is never the model's timeout."""
        failing = self.harness.provider.failing_for()
        return super().timeout_excuse() or (_server_failed(failing) if failing else None)

    def transcript(self, match: int) -> dict[str, Any] | None:
        """This seat's conversation in match ``match``, as it stands."""
        return self.harness.transcript(match)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self.harness.close()  # a request under way fails at once
        self._end()
        self._thread.join(timeout=2 * POLL_SECONDS + 1)
        self._close_fds()


class LLMSandbox:
    """The LLM seat of one duel. Its conversations outlive a restart of the seat."""

    name = "llm"
    confined = True
    unconfined_reason = ""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.conversations: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def start(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> LLMAgent:
        from llm.harness import Harness, ProviderFailure

        try:
            harness = Harness(self.config, conversations=self.conversations, lock=self._lock)
        except ProviderFailure as failure:
            raise SandboxError(str(failure)) from None
        except Exception as error:  # the client refused its settings (a malformed URL)
            raise SandboxError(f"the LLM client could not be set up: {error}") from None
        return LLMAgent(harness, log_bytes=limits.log_bytes)
