"""What an LLM player is: a model on a server, with its sampling settings and limits."""

from __future__ import annotations

import dataclasses
from typing import Any

from llm.prompts import HARNESS_VERSION


@dataclasses.dataclass(frozen=True)
class LLMConfig:
    #: An OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8011/v1``.
    base_url: str
    #: The model name sent with each request.
    model: str
    #: Sent as ``Authorization: Bearer``; never logged, shown or recorded (not in ``repr``).
    api_key: str = dataclasses.field(default="", repr=False)
    temperature: float | None = None
    top_p: float | None = None
    #: Tokens per answer (``max_tokens`` of each request).
    max_tokens: int = 1024
    seed: int | None = None
    #: Seconds for one HTTP request; a longer wait is the provider's failure, retried.
    request_timeout: float = 60.0
    #: Retries of one failed request (timeouts, 5xx, 429, a broken stream) before the
    #: provider is declared failed and the duel ends in error, unrated.
    provider_retries: int = 3
    #: The longest ``Retry-After`` (or backoff) waited for; a longer one is a failure.
    max_retry_wait: float = 60.0
    #: Characters of one answer read at most; a longer answer is refused as too long.
    max_answer_chars: int = 20_000
    harness_version: str = HARNESS_VERSION

    def sampling(self) -> dict[str, Any]:
        """The sampling settings, as recorded with every conversation."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def describe(self) -> str:
        """The model and its server for people (never the key)."""
        settings = ", ".join(
            f"{name} {value:g}"
            for name, value in (("temperature", self.temperature), ("top_p", self.top_p))
            if value is not None
        )
        return f"{self.model}@{self.base_url}" + (f" ({settings})" if settings else "")
