"""The harness's client of OpenAI-compatible servers (``llm.provider``), held to the
official ``openai`` client it sends with: its request is the one the official client sends
on its own, and the scripted test server the seat tests play against answers the official
client as a real server does. Then what the harness adds: a kept connection, a server
closing it while idle, a server ignoring ``stream``, limits on what is read. Every framing
of HTTP, proxies, TLS and stops: ``test_provider_wire.py``."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import openai
import pytest

from llm.config import LLMConfig
from llm.local_server import LocalLLMServer, Reply
from llm.provider import Completion, Provider, ProviderFailure

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

KEY = "sk-test-provider-41d2"
MESSAGES = [
    {"role": "system", "content": "You play tic-tac-toe."},
    {"role": "user", "content": "Your move.\nANSWER: <cell>"},
]
#: The same messages, as the official client's types name them.
OFFICIAL_MESSAGES = cast("list[ChatCompletionMessageParam]", MESSAGES)
ANSWER = "The centre is best.\nANSWER: 4"


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer(lambda request: Reply(ANSWER)) as local:
        yield local


def config(url: str, **settings: Any) -> LLMConfig:
    return LLMConfig(base_url=url, model="scripted", api_key=KEY, **settings)


def ask(provider: Provider, seconds: float = 10.0) -> Completion:
    return provider.complete(MESSAGES, deadline=time.monotonic() + seconds)


def official(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=10)


def test_it_sends_the_request_the_official_client_sends(server):
    settings: dict[str, Any] = {"temperature": 0.3, "top_p": 0.9, "max_tokens": 256, "seed": 7}
    stream = official(server.url).chat.completions.create(
        model="scripted",
        messages=OFFICIAL_MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
        **settings,
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    provider = Provider(config(server.url, **settings))
    completion = ask(provider)
    provider.close()

    assert text == completion.text == ANSWER
    assert completion.finish_reason == "stop" and completion.completion_tokens
    theirs, ours = server.requests
    assert ours == theirs
    assert server.headers[1]["authorization"] == server.headers[0]["authorization"]
    assert server.headers[1]["content-type"] == "application/json"


def test_a_setting_not_given_is_not_sent_as_with_the_official_client(server):
    official(server.url).chat.completions.create(
        model="scripted",
        messages=OFFICIAL_MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=1024,
    ).close()
    provider = Provider(config(server.url))
    ask(provider)
    provider.close()

    theirs, ours = server.requests
    assert ours == theirs
    assert "temperature" not in ours and "seed" not in ours


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(status=500), openai.InternalServerError),
        (Reply(status=429, retry_after=3), openai.RateLimitError),
        (Reply(status=401, text="Incorrect API key"), openai.AuthenticationError),
        (Reply("x" * 20_000, truncate=True), openai.APIConnectionError),
    ],
    ids=["500", "429", "401", "truncated"],
)
def test_the_test_server_fails_for_the_official_client_as_a_real_server_does(server, reply, error):
    server.brain = lambda request: reply
    with pytest.raises(error) as raised:
        stream = official(server.url).chat.completions.create(
            model="scripted",
            messages=OFFICIAL_MESSAGES,
            stream=True,
        )
        for _ in stream:
            pass
    if reply.retry_after is not None:
        assert isinstance(raised.value, openai.APIStatusError)
        assert raised.value.response.headers["retry-after"] == "3"


def test_the_test_server_answers_the_official_client_whole_and_streamed(server):
    server.brain = lambda request: Reply("y" * 10_000)
    client = official(server.url)
    whole = client.chat.completions.create(
        model="scripted",
        messages=OFFICIAL_MESSAGES,
    )
    streamed = client.chat.completions.create(
        model="scripted",
        messages=OFFICIAL_MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(streamed)
    assert whole.choices[0].message.content == "y" * 10_000
    assert whole.choices[0].finish_reason == "stop" and whole.usage is not None
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "y" * 10_000
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_it_keeps_its_connection_from_one_request_to_the_next(server):
    provider = Provider(config(server.url))
    answers = [ask(provider).text for _ in range(5)]
    provider.close()
    assert answers == [ANSWER] * 5
    assert server.connections == 1


def test_it_reconnects_at_once_when_the_server_closed_the_idle_connection(server):
    replies = iter([Reply(ANSWER, close=True), Reply(ANSWER)])
    server.brain = lambda request: next(replies)
    provider = Provider(config(server.url))
    first = ask(provider)
    # Whether the server's close reaches this side before the next request or crosses it
    # on the wire, it is not the provider's failure: no retry recorded, no backoff waited.
    second = ask(provider)
    provider.close()
    assert first.text == second.text == ANSWER
    assert second.provider_errors == []
    assert server.connections == 2


def test_it_opens_a_new_connection_after_one_idle_past_its_keep_alive(server, monkeypatch):
    # A router may drop an idle connection without a word: it is not used again.
    # Two seconds: the two requests after the pause follow each other well within it, even
    # on a loaded machine.
    monkeypatch.setattr("llm.transport.KEEPALIVE_SECONDS", 2.0)
    provider = Provider(config(server.url))
    first = ask(provider)
    time.sleep(2.5)
    second = ask(provider)
    third = ask(provider)
    provider.close()
    assert first.text == second.text == third.text == ANSWER
    assert second.provider_errors == [] and third.provider_errors == []
    assert server.connections == 2  # the idle one replaced, the next request kept it


def test_it_reads_a_server_that_answers_whole_when_a_stream_was_asked(server):
    server.brain = lambda request: Reply(ANSWER, ignore_stream=True)
    provider = Provider(config(server.url))
    completion = ask(provider)
    provider.close()
    assert (completion.text, completion.finish_reason) == (ANSWER, "stop")
    assert completion.prompt_tokens and completion.completion_tokens


def test_it_cuts_a_whole_answer_past_the_limit(server):
    server.brain = lambda request: Reply("z" * 5_000, ignore_stream=True)
    provider = Provider(config(server.url, max_answer_chars=1_000))
    completion = ask(provider)
    provider.close()
    assert completion.too_long == 1_000 and completion.text == "z" * 1_000


def test_a_server_sending_one_endless_line_is_a_broken_stream_never_read_whole():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                body = b"data: " + b"x" * 4_000_000
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                head += b"Content-Length: %d\r\n\r\n" % len(body)
                with contextlib.suppress(OSError):  # the harness stops reading
                    connection.sendall(head + body)

    threading.Thread(target=serve, daemon=True).start()
    provider = Provider(
        config(f"http://127.0.0.1:{port}/v1", max_answer_chars=1_000, provider_retries=0)
    )
    with pytest.raises(ProviderFailure, match="an event longer than 71536 bytes"):
        ask(provider)
    provider.close()
    listener.close()


def test_a_refusal_is_read_only_to_its_first_bytes_and_never_shows_the_key(server):
    server.brain = lambda request: Reply(status=400, text=f"bad key {KEY} " + "q" * 500_000)
    provider = Provider(config(server.url))
    with pytest.raises(ProviderFailure) as raised:
        ask(provider)
    provider.close()
    message = str(raised.value)
    # The body is cut at 64 KiB, so it is no longer JSON: its start is shown as it is.
    start = '{"error": {"message": "bad key [the API key] qq'
    assert f"refused the request: HTTP 400: {start}" in message
    assert KEY not in message and len(message) < 500


def test_it_refuses_a_base_url_that_is_not_http():
    provider = Provider(config("ftp://models.example/v1"))
    with pytest.raises(ProviderFailure, match="is not an http:// or https:// URL"):
        ask(provider)


def test_a_retry_the_moves_clock_cuts_short_is_named_by_the_providers_own_failure(server):
    # The provider fails; its retry is then cut short by the move's clock, as on a loaded
    # machine where the backoff leaves the retry a sliver of the clock: the failure is still
    # the provider's, and said with its own error, not the retry's timeout.
    replies = iter([Reply("overloaded", status=500), Reply(ANSWER, delay=4.0)])
    server.brain = lambda request: next(replies)
    provider = Provider(config(server.url))
    with pytest.raises(ProviderFailure) as failure:
        ask(provider, seconds=2.0)
    provider.close()
    assert "(the last: HTTP 500: overloaded)" in str(failure.value)
    assert "the move's clock ran out" in str(failure.value)
