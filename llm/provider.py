"""Asking a model behind an OpenAI-compatible server, with the provider's failures retried.

Each request is a streamed chat completion (``stream: true``), the same request body the
official ``openai`` client sends for ``chat.completions.create(stream=True, ...)`` (a
test holds the two to that), sent over HTTP/1.1 by the standard library's
``http.client`` on a connection kept from one move to the next, and read here, event by
event. Streaming lets the harness stop reading an answer that grows past
``max_answer_chars`` and tell a complete answer (it has a ``finish_reason``) from one cut
off by a broken connection. The official client is not used to send: its layers cost
about 0.8 ms of Python a request, most of the harness's own time (BENCHMARKS.md, *LLM
players*). Proxies from ``https_proxy``/``http_proxy`` (and ``no_proxy``) are used as
with the usual clients; TLS is verified against the system's certificates.

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

import base64
import contextlib
import dataclasses
import email.utils
import functools
import http.client
import socket
import ssl
import threading
import time
import urllib.request
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from llm.config import LLMConfig
from llm.prompts import HARNESS_VERSION, cut

#: The first backoff; each next one doubles, up to ``MAX_BACKOFF``.
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: HTTP statuses worth retrying (besides 5xx).
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: Bytes of a refusal's body read for its message; the rest is never read.
ERROR_BODY_LIMIT = 64 * 1024
#: A kept connection idle longer than this is closed rather than used (the official
#: client's keep-alive expiry): routers drop idle connections without telling either side.
KEEPALIVE_SECONDS = 5.0
USER_AGENT = f"Arena-LLM-harness/{HARNESS_VERSION}"
#: Characters of a server's message kept in an error.
ERROR_CHARS = 300


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # One for the process: loading the CA bundle costs about 20 ms of CPU each time.
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


@dataclasses.dataclass(frozen=True)
class _Route:
    """Where a base URL's requests go: the server itself, or a tunnel through a proxy."""

    https: bool
    host: str
    port: int
    path: str
    #: ``(host, port, Proxy-Authorization or None)`` of the proxy, if one is used.
    proxy: tuple[str, int, str | None] | None = None

    @classmethod
    def of(cls, base_url: str) -> _Route:
        """Raises ``ValueError`` for what is not an ``http(s)://host...`` URL."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the base URL {base_url!r} is not an http:// or https:// URL")
        https = parts.scheme == "https"
        host, port = parts.hostname, parts.port or (443 if https else 80)
        return cls(
            https,
            host,
            port,
            parts.path.rstrip("/") + "/chat/completions",
            _proxy(parts.scheme, host),
        )

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new connection (not yet opened) for this route."""
        host, port = self.proxy[:2] if self.proxy else (self.host, self.port)
        connection: http.client.HTTPConnection
        if self.https:
            connection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=_tls_context()
            )
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        if self.proxy:
            authorization = self.proxy[2]
            headers = {"Proxy-Authorization": authorization} if authorization else None
            connection.set_tunnel(self.host, self.port, headers=headers)
        return connection


def _proxy(scheme: str, host: str) -> tuple[str, int, str | None] | None:
    """The proxy the environment names for ``scheme`` (``https_proxy``, ``http_proxy``),
    unless ``no_proxy`` excludes ``host``. Requests go through it in a ``CONNECT`` tunnel."""
    proxy = urllib.request.getproxies_environment().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the {scheme} proxy {proxy!r} is not an http:// proxy")
    authorization = None
    if parts.username is not None:
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(secret.encode()).decode()
    return parts.hostname, parts.port or 80, authorization


class Provider:
    """One model's server, for one seat: one connection, kept from one request to the next."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None
        #: When the kept connection last finished a request.
        self._idle_since = time.monotonic()
        self._route: _Route | None = None
        self._route_error = ""
        try:
            self._route = _Route.of(config.base_url)
        except ValueError as error:
            self._route_error = str(error)
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "User-Agent": USER_AGENT,
        }
        if config.api_key:
            self._headers["Authorization"] = f"Bearer {config.api_key}"
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
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            if connection.sock is not None:
                with contextlib.suppress(OSError):  # wakes a read blocked on it
                    connection.sock.shutdown(socket.SHUT_RDWR)
            connection.close()

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
            "messages": messages,
            "model": config.model,
            "max_tokens": config.max_tokens,
            "seed": config.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        # As the official client does: a setting not given is not sent.
        return {name: value for name, value in body.items() if value is not None}

    # -- one request --------------------------------------------------------------------

    def _connect(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """The kept connection (and True), or a new one (and False). A connection idle for
        more than ``KEEPALIVE_SECONDS`` is not kept: a router may have dropped it without a
        word, and a request sent into it would wait out the model's clock."""
        assert self._route is not None
        with self._lock:
            if self._stopped.is_set():
                raise Stopped()
            connection = self._connection
            stale = time.monotonic() - self._idle_since > KEEPALIVE_SECONDS
            if connection is not None and connection.sock is not None and not stale:
                connection.sock.settimeout(timeout)
                return connection, True
            if connection is not None:
                connection.close()
            connection = self._connection = self._route.connection(timeout)
            return connection, False

    def _drop(self) -> None:
        """Closes the connection: the next request opens a new one."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _request(self, messages: list[dict[str, str]], timeout: float) -> Completion:
        if self._route is None:
            raise ProviderFailure(self._route_error)
        body = orjson.dumps(self._body(messages))
        ends = time.monotonic() + timeout
        clock_ran_out = timeout < self.config.request_timeout
        while True:
            connection, kept = self._connect(max(0.001, ends - time.monotonic()))
            try:
                connection.request("POST", self._route.path, body, self._headers)
                response = connection.getresponse()
                break
            except TimeoutError:
                self._drop()
                raise _Retryable(
                    f"no answer within {timeout:.3g} s", clock_ran_out=clock_ran_out
                ) from None
            except (OSError, http.client.HTTPException) as error:
                self._drop()
                if kept and isinstance(error, (ConnectionError, http.client.BadStatusLine)):
                    continue  # the server closed the kept connection while it was idle
                raise _Retryable(f"could not reach the server: {_reason(error)}") from None
        status = response.status
        if not 200 <= status < 300:
            message = f"HTTP {status}: {cut(self._refusal(response), ERROR_CHARS)}"
            if status in RETRYABLE_STATUSES or status >= 500:
                raise _Retryable(message, _retry_after(response)) from None
            raise ProviderFailure(f"{self.config.describe()} refused the request: {message}")
        try:
            if (response.getheader("content-type") or "").startswith("application/json"):
                completion = self._read_whole(response, connection, ends)
            else:
                completion = self._read_events(response, connection, ends)
        except TimeoutError:
            self._drop()
            raise _Retryable(
                f"the answer was not complete within {timeout:.3g} s",
                clock_ran_out=clock_ran_out,
            ) from None
        except Exception as error:  # whatever broke the stream: the server's side
            self._drop()
            raise _Retryable(f"the answer's stream broke: {_reason(error)}") from None
        if completion.too_long is not None or response.will_close or not response.isclosed():
            self._drop()  # the rest of the answer is not read, or the server closes
        self._idle_since = time.monotonic()
        if completion.too_long is None and completion.finish_reason is None:
            raise _Retryable("the answer's stream ended before the answer was complete")
        return completion

    def _refusal(self, response: http.client.HTTPResponse) -> str:
        """The message of a refusal, from the first bytes of its body; the connection is
        not kept (the rest of the body is not read)."""
        try:
            body = response.read(ERROR_BODY_LIMIT)
        except (OSError, http.client.HTTPException):
            body = b""
        self._drop()
        message = None
        with contextlib.suppress(orjson.JSONDecodeError):
            document = orjson.loads(body)
            if isinstance(document, dict):
                message = document.get("message") or document.get("error")
                if isinstance(message, dict):
                    message = message.get("message")
        return (
            str(message) if message else body.decode("utf-8", "replace").strip() or response.reason
        )

    def _read_events(
        self, response: http.client.HTTPResponse, connection: Any, ends: float
    ) -> Completion:
        """The answer from the server-sent events of a streamed completion, read to the
        end of the body so that the connection is kept for the next request."""
        limit = self.config.max_answer_chars
        parts: list[str] = []
        size = 0
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        while True:
            left = ends - time.monotonic()
            if left <= 0 or connection.sock is None:
                raise TimeoutError() if left <= 0 else ConnectionError("the seat was closed")
            connection.sock.settimeout(left)
            line = response.readline(self._line_limit)
            if not line:
                break
            if len(line) >= self._line_limit and not line.endswith(b"\n"):
                raise ValueError(f"an event longer than {self._line_limit} bytes")
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

    def _read_whole(
        self, response: http.client.HTTPResponse, connection: Any, ends: float
    ) -> Completion:
        """A server that ignored ``stream`` and sent the whole completion as JSON."""
        if connection.sock is not None:
            connection.sock.settimeout(max(0.001, ends - time.monotonic()))
        body = response.read(self._line_limit)
        if not response.isclosed():
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


def _retry_after(response: http.client.HTTPResponse) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``."""
    milliseconds = response.getheader("retry-after-ms")
    if milliseconds:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    value = response.getheader("retry-after")
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


def _reason(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    text = str(error) or type(error).__name__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({cause})"
    return cut(text, ERROR_CHARS)
