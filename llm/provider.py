"""Asking a model behind an OpenAI-compatible server, with the provider's failures retried.

Each request is a streamed chat completion (``stream=True``), sent with the official
``openai`` client (its plain POST) and read here, event by event: streaming lets the
harness stop reading an answer that grows past ``max_answer_chars`` and tell a complete
answer (it has a ``finish_reason``) from one cut off by a broken connection. The client's
own retries are off: every retry is made here, so that each one is recorded and bounded
by the move's clock.

What is the provider's fault, never the model's: a request that times out
(``request_timeout``), a connection refused or broken, a stream cut short, HTTP 408, 409,
429 and 5xx. Each is retried after its ``Retry-After`` (seconds or a date) or an
exponential backoff; when the retries are spent, or the wait would outlast the move's
clock, ``ProviderFailure`` is raised and the duel ends in error, unrated. Any other 4xx
(a refused key, an unknown model) is a ``ProviderFailure`` at once: retrying cannot help.
When the move's clock runs out while the model is answering (and the provider has not
failed on this move), ``OutOfTime`` is raised: that is the model's time, as slow thinking
is a hosted agent's; once the provider has failed on a move, a clock that runs out while
it is retried is the provider's failure.
"""

from __future__ import annotations

import dataclasses
import email.utils
import functools
import ssl
import threading
import time
from typing import Any

import httpx2
import openai
import orjson

from llm.config import LLMConfig

#: The first backoff; each next one doubles, up to ``MAX_BACKOFF``.
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: HTTP statuses worth retrying (besides 5xx).
RETRYABLE_STATUSES = frozenset({408, 409, 429})


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class ProviderFailure(Exception):
    """The provider failed for good: Arena's side, never charged to the model."""


class OutOfTime(Exception):
    """The move's clock ran out while the model was being asked."""


class Stopped(Exception):
    """The seat was closed while a request was under way."""


class _Retryable(Exception):
    def __init__(
        self, message: str, retry_after: float | None = None, *, clock_ran_out: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        #: The request was cut short by the move's clock, not by ``request_timeout``.
        self.clock_ran_out = clock_ran_out


@dataclasses.dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    #: From the first request to the answer, provider retries and waits included.
    latency_ms: float
    #: Set when the answer grew past ``max_answer_chars`` and was cut there.
    too_long: int | None = None
    #: One per failed request before this answer: what failed and how long was waited.
    provider_errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)


class Provider:
    """One model's server, for one seat: a client with its own connection pool."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._stopped = threading.Event()
        self._client = openai.OpenAI(
            base_url=config.base_url,
            # Servers without keys (llama.cpp, Ollama) accept any; the client wants one.
            api_key=config.api_key or "no-key",
            max_retries=0,
            timeout=config.request_timeout,
            # A connection pool of its own (closing it stops this seat's request at once),
            # with the process's one TLS context: loading the CA bundle for each new client
            # cost 24 ms of CPU a seat.
            http_client=openai.DefaultHttpxClient(verify=_tls_context()),
        )

    def redact(self, text: str) -> str:
        """``text`` without the API key, should a server have echoed it back."""
        key = self.config.api_key
        return text.replace(key, "[the API key]") if key else text

    def close(self) -> None:
        """Stop: a request under way fails at once and no other starts."""
        self._stopped.set()
        self._client.close()

    def complete(self, messages: list[dict[str, str]], *, deadline: float) -> Completion:
        """The model's answer to ``messages``, before ``deadline`` (``time.monotonic``)."""
        started = time.monotonic()
        errors: list[dict[str, Any]] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OutOfTime()
            timeout = min(self.config.request_timeout, remaining)
            try:
                completion = self._request(messages, timeout)
            except ProviderFailure as failure:
                raise ProviderFailure(self.redact(str(failure))) from None
            except _Retryable as failure:
                if self._stopped.is_set():
                    raise Stopped() from None
                if failure.clock_ran_out and not errors:
                    raise OutOfTime() from None
                failure = _Retryable(self.redact(str(failure)), failure.retry_after)
                wait = self._wait_after(failure, len(errors))
                errors.append({"error": str(failure), "waited_ms": round(wait * 1000, 1)})
                if len(errors) > self.config.provider_retries:
                    raise ProviderFailure(
                        f"{self.config.describe()} failed {len(errors)} times in a row; "
                        f"the last time: {failure}"
                    ) from None
                if wait > self.config.max_retry_wait:
                    raise ProviderFailure(
                        f"{self.config.describe()} failed ({failure}) and asked to wait "
                        f"{wait:g} s, more than the {self.config.max_retry_wait:g} s allowed"
                    ) from None
                # Once the provider has failed, running out of time is its failure too:
                # the model never had its chance to answer.
                if time.monotonic() + wait >= deadline:
                    raise ProviderFailure(
                        f"{self.config.describe()} failed {len(errors)} time(s) (the last: "
                        f"{failure}), and the move's clock ran out before it could be "
                        "asked again"
                    ) from None
                if self._stopped.wait(wait):
                    raise Stopped() from None
                continue
            completion.text = self.redact(completion.text)
            completion.latency_ms = round((time.monotonic() - started) * 1000, 3)
            completion.provider_errors = errors
            return completion

    def _wait_after(self, failure: _Retryable, failures_before: int) -> float:
        if failure.retry_after is not None:
            return max(0.0, failure.retry_after)
        return min(MAX_BACKOFF, FIRST_BACKOFF * 2**failures_before)

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        config = self.config
        body: dict[str, Any] = {
            "model": config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": config.max_tokens,
        }
        for name in ("temperature", "top_p", "seed"):
            value = getattr(config, name)
            if value is not None:
                body[name] = value
        return body

    def _request(self, messages: list[dict[str, str]], timeout: float) -> Completion:
        if self._stopped.is_set():
            raise Stopped()
        try:
            # The client's plain POST: its transport, headers, key and errors, without the
            # typed layer over it (validating the request and a model object per event
            # cost about 2 ms a move; the events are read here, below).
            response = self._client.post(
                "/chat/completions",
                cast_to=httpx2.Response,
                body=self._body(messages),
                options={"timeout": timeout},
                stream=True,
            )
        except openai.APITimeoutError:
            raise _Retryable(
                f"no answer within {timeout:.3g} s",
                clock_ran_out=timeout < self.config.request_timeout,
            ) from None
        except openai.APIConnectionError as error:
            raise _Retryable(f"could not reach the server: {_reason(error)}") from None
        except openai.APIStatusError as error:
            status = error.status_code
            message = f"HTTP {status}: {_cut(_body_message(error))}"
            if status in RETRYABLE_STATUSES or status >= 500:
                raise _Retryable(message, _retry_after(error.response.headers)) from None
            refused = f"{self.config.describe()} refused the request: {message}"
            raise ProviderFailure(refused) from None
        return self._read(response, timeout)

    def _read(self, response: httpx2.Response, timeout: float) -> Completion:
        """The answer from the server-sent events of a streamed completion. The body is
        read to its end, so the connection is kept for the next request."""
        limit = self.config.max_answer_chars
        parts: list[str] = []
        size = 0
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        too_long: int | None = None
        try:
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue  # comments, event names, blank lines between events
                data = line[5:].strip()
                if data == "[DONE]":
                    continue
                event = orjson.loads(data)
                if not isinstance(event, dict):
                    raise ValueError(f"an event that is not an object: {_cut(data, 80)}")
                if event.get("error"):
                    raise ValueError(f"the server reported an error: {_cut(str(event['error']))}")
                if isinstance(event.get("usage"), dict):
                    usage = event["usage"]
                for choice in event.get("choices") or ():
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        parts.append(content)
                        size += len(content)
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
                if size > limit:
                    too_long = limit
                    break
        except httpx2.TimeoutException:
            raise _Retryable(
                f"the answer stopped coming for {timeout:.3g} s",
                clock_ran_out=timeout < self.config.request_timeout,
            ) from None
        except Exception as error:  # whatever broke the stream: the server's side
            raise _Retryable(f"the answer's stream broke: {_reason(error)}") from None
        finally:
            response.close()
        if too_long is None and finish_reason is None:
            raise _Retryable("the answer's stream ended before the answer was complete")
        text = "".join(parts)
        return Completion(
            text=text[:limit],
            finish_reason=finish_reason,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            latency_ms=0.0,
            too_long=too_long,
        )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _body_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return str(message)
    return str(error.message)


def _reason(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    text = str(error) or type(error).__name__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({cause})"
    return _cut(text)


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
