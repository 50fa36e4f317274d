"""Asking a model behind an OpenAI-compatible server, with the provider's failures retried.

Each request is sent by the official ``openai`` client, ``chat.completions.create(
stream=True, stream_options={"include_usage": True}, ...)``, over httpx, with the client's
own retries off (``max_retries=0``): each retry is made, bounded and recorded here. The
answer is read here from the raw response, event by event, so that reading stops as soon
as the answer grows past ``max_answer_chars`` (or one line past its limit: nothing is
buffered whole), a complete answer (it has a ``finish_reason``) is told from one cut off
by a broken connection, and a server that ignores ``stream`` and answers with one JSON
completion is read too. How the body is framed is httpx's business: ``Content-Length``,
chunked, or ended by the server closing the connection (HTTP/1.0, ``Connection: close``).
The connection is kept from move to move when the server keeps it.

Under the client sits Arena's transport (``llm.transport``), the last code before the
wire: what goes out, what is read of a refusal, the proxy, TLS.

What is the provider's fault, never the model's: a request that times out
(``request_timeout``), a connection refused or broken, a stream cut short, an answer that
is not HTTP or not JSON, HTTP 408, 409, 429 and 5xx. Each is retried after its
``Retry-After`` (seconds or a date) or an exponential backoff; when the retries are spent,
or the wait would outlast the move's clock, ``ProviderFailure`` is raised and the duel
ends in error, unrated. Any other status (a refused key, an unknown model, a redirect) is
a ``ProviderFailure`` at once: retrying cannot help. When the move's clock runs out while
the model is answering (and the provider has not failed on this move), ``OutOfTime`` is
raised: that is the model's time, as slow thinking is a hosted agent's; once the provider
has failed on a move, a clock that runs out while it is retried is the provider's failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx2
import orjson

from llm.config import LLMConfig
from llm.prompts import HARNESS_VERSION, cut
from llm.transport import SeatConnection, SeatTransport, check_base_url, proxy_for

if TYPE_CHECKING:
    import openai

#: The first backoff; each next one doubles, up to ``MAX_BACKOFF``.
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: HTTP statuses worth retrying (besides 5xx).
RETRYABLE_STATUSES = frozenset({408, 409, 429})
USER_AGENT = f"Arena-LLM-harness/{HARNESS_VERSION}"
#: Characters of a server's message kept in an error.
ERROR_CHARS = 300


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
    """One model's server, for one seat: one connection, kept from one request to the next."""

    def __init__(self, config: LLMConfig) -> None:
        # Imported here, as each method that needs it does: ``openai`` takes half a second
        # to import, which a duel without an LLM seat (the command line's) never pays.
        import openai

        self.config = config
        self._stopped = threading.Event()
        #: The failed requests of the call to ``complete`` under way, while the provider
        #: is failing (empty once it answered): read by the referee's thread when the
        #: move's clock runs out (``failing_for``).
        self._failing: list[dict[str, Any]] = []
        self._connection = SeatConnection()
        self._client: openai.OpenAI | None = None
        self._setup_error = ""
        try:
            check_base_url(config.base_url)
            transport = SeatTransport(
                api_key=config.api_key,
                proxy=proxy_for(config.base_url),
                connection=self._connection,
            )
            self._client = openai.OpenAI(
                base_url=config.base_url,
                # The client insists on a key; the transport sends the player's, or none.
                api_key=config.api_key or "none",
                max_retries=0,
                default_headers={"User-Agent": USER_AGENT},
                http_client=httpx2.Client(
                    transport=transport, trust_env=False, follow_redirects=False
                ),
            )
        except (ValueError, httpx2.InvalidURL, openai.OpenAIError) as error:
            self._setup_error = str(error)
        #: The longest line of the answer's stream read: one event. Tokens come a few at
        #: a time; a longer line is a broken stream, never buffered.
        self._line_limit = 6 * config.max_answer_chars + 65536

    def redact(self, text: str) -> str:
        """``text`` without the API key, should a server have echoed it back."""
        key = self.config.api_key
        return text.replace(key, "[the API key]") if key else text

    def close(self) -> None:
        """Stop: a request under way fails at once and no other starts."""
        self._stopped.set()
        self._connection.stop()
        if self._client is not None:
            self._client.close()

    def complete(self, messages: list[dict[str, str]], *, deadline: float) -> Completion:
        """The model's answer to ``messages``, before ``deadline`` (``time.monotonic``)."""
        started = time.monotonic()
        errors: list[dict[str, Any]] = []
        self._failing = errors
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                # The wait for a retry overran the move's clock (a loaded machine): still
                # the provider's failure, as below.
                if errors:
                    raise self._clock_ran_out(errors)
                raise OutOfTime()
            timeout = min(self.config.request_timeout, remaining)
            try:
                completion = self._request(messages, timeout)
            except ProviderFailure as failure:
                raise ProviderFailure(self.redact(str(failure))) from None
            except _Retryable as failure:
                if self._stopped.is_set():
                    raise Stopped() from None
                if failure.clock_ran_out:
                    # Cut short by the move's clock: the model's timeout if the provider had
                    # not failed before; else the provider's failure, named by its own error
                    # (a loaded machine may leave a retry a sliver of the clock).
                    if errors:
                        raise self._clock_ran_out(errors) from None
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
                    raise self._clock_ran_out(errors) from None
                if self._stopped.wait(wait):
                    raise Stopped() from None
                continue
            self._failing = []
            completion.text = self.redact(completion.text)
            completion.latency_ms = round((time.monotonic() - started) * 1000, 3)
            completion.provider_errors = errors
            return completion

    def failing_for(self) -> str | None:
        """Why the model cannot answer now, if the provider is failing: asked when the
        move's clock runs out, which is then the provider's failure, not the model's
        timeout, however late the harness's own deadline came on a loaded machine."""
        errors = self._failing
        return str(self._clock_ran_out(errors)) if errors else None

    def _clock_ran_out(self, errors: list[dict[str, Any]]) -> ProviderFailure:
        return ProviderFailure(
            f"{self.config.describe()} failed {len(errors)} time(s) (the last: "
            f"{errors[-1]['error']}), and the move's clock ran out before it answered"
        )

    def _wait_after(self, failure: _Retryable, failures_before: int) -> float:
        if failure.retry_after is not None:
            return max(0.0, failure.retry_after)
        return min(MAX_BACKOFF, FIRST_BACKOFF * 2**failures_before)

    def _arguments(self, messages: list[dict[str, str]], timeout: float) -> dict[str, Any]:
        config = self.config
        arguments: dict[str, Any] = {
            "messages": messages,
            "model": config.model,
            "max_tokens": config.max_tokens,
            "seed": config.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        # A setting not given is not sent (the client would send None as null): the
        # server's default applies.
        arguments = {name: value for name, value in arguments.items() if value is not None}
        # httpx's limit on each wait; the whole request's is the timer in ``_request``.
        arguments["timeout"] = timeout
        return arguments

    # -- one request --------------------------------------------------------------------

    def _request(self, messages: list[dict[str, str]], timeout: float) -> Completion:
        import openai

        if self._client is None:
            raise ProviderFailure(self._setup_error)
        clock_ran_out = timeout < self.config.request_timeout
        # A kept connection the server closed while it was idle is opened again at once,
        # once: that is not a failure. httpx sees most such closes before sending; this is
        # for the close that crosses the request on the wire.
        for _ in range(2):
            if self._stopped.is_set():
                raise Stopped()
            request = self._connection.begin()
            # The whole request's time, from sending it to the end of the answer (httpx
            # bounds each wait, not their sum): its connection is cut short at the end.
            timer = threading.Timer(timeout, self._connection.time_out, (request,))
            timer.daemon = True
            timer.start()
            try:
                return self._ask(messages, timeout, clock_ran_out)
            except openai.APIConnectionError as error:
                if self._stopped.is_set():
                    raise Stopped() from None
                if self._connection.timed_out or isinstance(error, openai.APITimeoutError):
                    raise _Retryable(
                        f"no answer within {timeout:.3g} s", clock_ran_out=clock_ran_out
                    ) from None
                if self._connection.opened:
                    raise _Retryable(_unanswered(error.__cause__ or error)) from None
            except Exception:
                if self._stopped.is_set():  # the client was closed under the request
                    raise Stopped() from None
                raise
            finally:
                timer.cancel()
        raise _Retryable("the server closed the connection twice before answering")

    def _ask(
        self, messages: list[dict[str, str]], timeout: float, clock_ran_out: bool
    ) -> Completion:
        import openai

        assert self._client is not None
        completions = self._client.chat.completions.with_streaming_response
        try:
            with completions.create(**self._arguments(messages, timeout)) as answer:
                response = answer.http_response
                try:
                    if response.headers.get("content-type", "").startswith("application/json"):
                        completion = self._read_whole(response)
                    else:
                        completion = self._read_events(response)
                except Exception as error:  # whatever broke the stream: the server's side
                    if self._stopped.is_set():
                        raise Stopped() from None
                    if self._connection.timed_out or isinstance(error, httpx2.TimeoutException):
                        raise _Retryable(
                            f"the answer was not complete within {timeout:.3g} s",
                            clock_ran_out=clock_ran_out,
                        ) from None
                    raise _Retryable(f"the answer's stream broke: {_reason(error)}") from None
        except openai.APIStatusError as error:
            status = error.status_code
            message = f"HTTP {status}: {cut(_refusal(error.response), ERROR_CHARS)}"
            if status in RETRYABLE_STATUSES or status >= 500:
                raise _Retryable(message, _retry_after(error.response.headers)) from None
            raise ProviderFailure(
                f"{self.config.describe()} refused the request: {message}"
            ) from None
        if completion.too_long is None and completion.finish_reason is None:
            if self._stopped.is_set():
                raise Stopped()
            # A body that ends with its connection (HTTP/1.0) ends when the time is up too.
            if self._connection.timed_out:
                raise _Retryable(
                    f"the answer was not complete within {timeout:.3g} s",
                    clock_ran_out=clock_ran_out,
                )
            raise _Retryable("the answer's stream ended before the answer was complete")
        return completion

    def _lines(self, response: httpx2.Response) -> Iterator[bytes]:
        """The body's lines, none longer than ``_line_limit`` (else ``ValueError``)."""
        pending = b""
        for chunk in response.iter_bytes():
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if len(pending) > self._line_limit:
                raise ValueError(f"an event longer than {self._line_limit} bytes")
            yield from lines
        if pending:
            yield pending

    def _read_events(self, response: httpx2.Response) -> Completion:
        """The answer from the server-sent events of a streamed completion, read to the
        end of the body so that the connection is kept for the next request."""
        limit = self.config.max_answer_chars
        parts: list[str] = []
        size = 0
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        for line in self._lines(response):
            if not line.startswith(b"data:"):
                continue  # comments, event names, blank lines between events
            data = line[5:].strip()
            if data == b"[DONE]":
                continue
            event = orjson.loads(data)
            if not isinstance(event, dict):
                raise ValueError(
                    f"an event that is not an object: {cut(data.decode('utf-8', 'replace'))}"
                )
            if event.get("error"):
                raise ValueError(
                    f"the server reported an error: {cut(str(event['error']), ERROR_CHARS)}"
                )
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
                return _completion("".join(parts)[:limit], finish_reason, usage, limit)
        return _completion("".join(parts), finish_reason, usage, None)

    def _read_whole(self, response: httpx2.Response) -> Completion:
        """A server that ignored ``stream`` and sent the whole completion as JSON."""
        body = b""
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self._line_limit:
                raise ValueError(f"a completion longer than {self._line_limit} bytes")
        document = orjson.loads(body)
        if not isinstance(document, dict):
            raise ValueError("a completion that is not an object")
        choice = (document.get("choices") or [{}])[0]
        if not isinstance(choice, dict):
            raise ValueError("a choice that is not an object")
        text = str((choice.get("message") or {}).get("content") or "")
        usage = document["usage"] if isinstance(document.get("usage"), dict) else {}
        limit = self.config.max_answer_chars
        too_long = limit if len(text) > limit else None
        return _completion(text[:limit], choice.get("finish_reason"), usage, too_long)


def _completion(
    text: str, finish_reason: Any, usage: dict[str, Any], too_long: int | None
) -> Completion:
    return Completion(
        text=text,
        finish_reason=str(finish_reason) if finish_reason else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        latency_ms=0.0,
        too_long=too_long,
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _refusal(response: httpx2.Response) -> str:
    """The message of a refusal, from the first bytes of its body
    (``llm.transport._FirstBytes``)."""
    body = response.content
    message = None
    with contextlib.suppress(orjson.JSONDecodeError):
        document = orjson.loads(body)
        if isinstance(document, dict):
            message = document.get("message") or document.get("error")
            if isinstance(message, dict):
                message = message.get("message")
    return (
        str(message)
        if message
        else body.decode("utf-8", "replace").strip() or response.reason_phrase
    )


def _retry_after(headers: httpx2.Headers) -> float | None:
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


def _unanswered(error: BaseException) -> str:
    """Why a request got no answer (not even a status) from an httpx error."""
    if isinstance(error, httpx2.ConnectError):
        return f"could not reach the server: {_reason(error)}"
    if isinstance(error, httpx2.ProxyError):
        return f"the proxy would not reach the server: {_reason(error)}"
    return f"no valid answer from the server: {_reason(error)}"


def _reason(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    text = str(error) or type(error).__name__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({cause})"
    return cut(text, ERROR_CHARS)
