"""What the harness's client (``llm.provider``) reads off the wire, from servers written on
a bare socket (``tests.support.llm_wire``): every framing of HTTP/1.x gives a normal
answer, through a forwarding proxy and over TLS too; every breakage is the provider's
failure, with its reason, retried as the harness's rules say; a request under way stops
when the seat closes or the request's time is up; and nothing of the worker's environment
goes to the model's server but the player's own key."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from llm.config import LLMConfig
from llm.local_server import rule_based
from llm.provider import Completion, Provider, ProviderFailure, Stopped
from referee.duel import run_duel
from referee.results import Outcome
from sandboxes.base import AgentSource
from sandboxes.llm import LLMSandbox
from tests.support.llm_wire import (
    PATIENCE,
    Answer,
    ForwardingProxy,
    RawChatServer,
    Received,
    answering,
    chunked,
    closed_before_answering,
    closed_mid_answer,
    connection_close,
    content_length,
    events,
    http10_close_delimited,
    not_http,
    self_signed_certificate,
    shorter_than_its_length,
    status,
    use_proxy,
    whole,
)
from tests.support.sandboxes import PLAYERS

KEY = "sk-test-wire-5c1e-never-shown"
MESSAGES = [
    {"role": "system", "content": "You play tic-tac-toe."},
    {"role": "user", "content": "Your move.\nANSWER: <cell>"},
]
ANSWER = "The centre is best.\nANSWER: 4"
STREAM = events(ANSWER)


def provider(url: str, **settings: Any) -> Provider:
    config = LLMConfig(base_url=url, model="raw", api_key=KEY, **settings)
    return Provider(config)


def ask(model: Provider) -> Completion:
    return model.complete(MESSAGES, deadline=time.monotonic() + 60)


def assert_answered(completion: Completion) -> None:
    assert (completion.text, completion.finish_reason) == (ANSWER, "stop")
    assert (completion.prompt_tokens, completion.completion_tokens) == (50, 7)
    assert completion.provider_errors == []


# --- every framing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "framing",
    [http10_close_delimited, chunked, content_length, connection_close],
    ids=["http-1.0-close-delimited", "chunked", "content-length", "connection-close"],
)
def test_it_reads_an_answer_in_every_framing(framing: Callable[[bytes], Answer]):
    with RawChatServer(lambda request: framing(STREAM)) as server:
        model = provider(server.url)
        completion = ask(model)
        model.close()
    assert_answered(completion)
    [request] = server.requests
    assert (request.method, request.target) == ("POST", "/v1/chat/completions")
    assert request.json()["messages"] == MESSAGES and request.json()["stream"] is True


def test_it_asks_twice_on_one_kept_connection_when_the_server_keeps_it():
    with RawChatServer(lambda request: content_length(STREAM)) as server:
        model = provider(server.url)
        answers = [ask(model), ask(model)]
        model.close()
    for completion in answers:
        assert_answered(completion)
    assert len(server.requests) == 2 and server.connections == 1


@pytest.mark.parametrize(
    "framing", [http10_close_delimited, connection_close], ids=["http-1.0", "connection-close"]
)
def test_it_opens_a_new_connection_for_each_request_when_the_server_closes_each(framing):
    with RawChatServer(lambda request: framing(STREAM)) as server:
        model = provider(server.url)
        answers = [ask(model), ask(model), ask(model)]
        model.close()
    for completion in answers:
        assert_answered(completion)  # no failure counted, no backoff
    assert server.connections == 3


def test_it_opens_again_at_once_a_kept_connection_the_server_closed_under_the_request():
    # The server keeps the first connection, then closes it on the next request without a
    # word, as one does when its idle time runs out just as the request arrives.
    replies = answering(content_length(STREAM), closed_before_answering(), content_length(STREAM))
    with RawChatServer(replies) as server:
        model = provider(server.url)
        first, second = ask(model), ask(model)
        model.close()
    assert_answered(first)
    assert_answered(second)  # not the provider's failure: nothing recorded, nothing waited
    assert len(server.requests) == 3 and server.connections == 2


def test_it_reads_a_server_that_answers_whole_when_a_stream_was_asked():
    with RawChatServer(lambda request: content_length(whole(ANSWER), "application/json")) as server:
        model = provider(server.url)
        completion = ask(model)
        model.close()
    assert_answered(completion)


def test_an_llm_player_plays_a_duel_against_a_server_that_closes_after_each_answer(backend):
    # The finding: every request was a provider failure, and the duel an ERROR.
    def play(request: Received) -> Answer:
        return http10_close_delimited(events(rule_based(request.json()).text))

    with RawChatServer(play) as server:
        config = LLMConfig(base_url=server.url, model="rule-based", api_key=KEY)
        result = run_duel(
            "tic_tac_toe",
            (
                AgentSource.llm("rule-based"),
                AgentSource.from_path(PLAYERS / "tic_tac_toe" / "random_player.py"),
            ),
            backend=(LLMSandbox(config), backend),
            seed=3,
            matches=2,
            move_time=5.0,
            time_bank=5.0,
        )
    assert result.result is not Outcome.ERROR and not result.infrastructure_error
    assert result.errors_of(1) == 0
    turns = [turn for match in result.matches for turn in match.transcripts[1]["turns"]]
    assert turns and all(turn["outcome"] == "legal" for turn in turns)
    assert all(not attempt["provider_errors"] for turn in turns for attempt in turn["attempts"])
    assert server.connections == len(server.requests) == len(turns)
    assert KEY not in json.dumps(result.as_json(include_logs=True))


# --- through a proxy, and over TLS ---------------------------------------------------------


def test_it_sends_through_the_forwarding_proxy_the_environment_names(monkeypatch):
    with (
        RawChatServer(lambda request: content_length(STREAM)) as server,
        ForwardingProxy() as proxy,
    ):
        use_proxy(monkeypatch, proxy)
        model = provider(server.url)
        answers = [ask(model), ask(model)]
        model.close()
    for completion in answers:
        assert_answered(completion)
    # Forwarded in absolute form, user:pa@ss in the proxy's own header only.
    target = f"POST http://127.0.0.1:{server.port}/v1/chat/completions"
    assert proxy.requests == [(target, "Basic dXNlcjpwYUBzcw==")] * 2
    for request in server.requests:
        assert request.target == "/v1/chat/completions"
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert "proxy-authorization" not in request.headers


def test_it_goes_around_the_proxy_for_what_no_proxy_names(monkeypatch):
    with RawChatServer(lambda request: chunked(STREAM)) as server, ForwardingProxy() as proxy:
        use_proxy(monkeypatch, proxy)
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        model = provider(server.url)
        completion = ask(model)
        model.close()
    assert_answered(completion)
    assert proxy.requests == []


def test_it_refuses_a_proxy_that_is_not_http(monkeypatch):
    monkeypatch.setenv("http_proxy", "socks5://127.0.0.1:1080")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    model = provider("http://127.0.0.1:9/v1")
    with pytest.raises(ProviderFailure, match="is not an http:// proxy"):
        ask(model)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def test_it_speaks_tls_to_a_server_it_trusts_directly_and_through_a_proxy_tunnel(
    certificate, monkeypatch
):
    monkeypatch.setattr("llm.transport._tls_context", certificate.client_context)
    tls = certificate.server_context()
    with RawChatServer(lambda request: chunked(STREAM), tls=tls) as server:
        model = provider(server.url)
        direct = ask(model)
        model.close()
        with ForwardingProxy() as proxy:
            use_proxy(monkeypatch, proxy)
            model = provider(server.url)
            tunnelled = ask(model)
            model.close()
    assert_answered(direct)
    assert_answered(tunnelled)
    # A tunnel: the proxy saw where to, never the request (nor the key).
    assert proxy.requests == [(f"CONNECT 127.0.0.1:{server.port}", "Basic dXNlcjpwYUBzcw==")]
    assert [request.headers["authorization"] for request in server.requests] == [
        f"Bearer {KEY}"
    ] * 2


def test_a_server_whose_certificate_it_does_not_trust_is_a_provider_failure(certificate):
    # The system's certificates, which do not include this one.
    with RawChatServer(lambda request: chunked(STREAM), tls=certificate.server_context()) as server:
        model = provider(server.url, provider_retries=0)
        with pytest.raises(ProviderFailure, match=r"could not reach the server: .*CERTIFICATE"):
            ask(model)
        model.close()
    assert server.requests == []


# --- breakage: the provider's failure, retried --------------------------------------------

BROKEN = [
    (not_http(), "no valid answer from the server: "),
    (closed_before_answering(), "no valid answer from the server: Server disconnected"),
    (shorter_than_its_length(STREAM), "the answer's stream broke: "),
    (closed_mid_answer(STREAM), "the answer's stream broke: "),
    (content_length(b"data: {this is not json\n\n"), "the answer's stream broke: "),
    (
        content_length(events(ANSWER, finish=False)),
        "the answer's stream ended before the answer was complete",
    ),
    (content_length(b'data: {"error": {"message": "out of memory"}}\n\n'), "out of memory"),
]
BROKEN_IDS = [
    "not-http",
    "closed-before-answering",
    "shorter-than-content-length",
    "closed-mid-answer",
    "event-not-json",
    "no-finish-reason",
    "error-event",
]


@pytest.mark.parametrize(("broken", "reason"), BROKEN, ids=BROKEN_IDS)
def test_a_broken_answer_is_retried_and_the_next_answer_played(broken, reason):
    with RawChatServer(answering(broken, then=content_length(STREAM))) as server:
        model = provider(server.url)
        completion = ask(model)
        model.close()
    assert (completion.text, completion.finish_reason) == (ANSWER, "stop")
    [error] = completion.provider_errors
    assert reason in error["error"]
    assert error["waited_ms"] == 500.0  # the first backoff
    assert len(server.requests) == 2


@pytest.mark.parametrize(("broken", "reason"), BROKEN, ids=BROKEN_IDS)
def test_an_answer_always_broken_fails_the_provider_once_its_retries_are_spent(broken, reason):
    with RawChatServer(lambda request: broken) as server:
        model = provider(server.url, provider_retries=1)
        with pytest.raises(ProviderFailure) as raised:
            ask(model)
        model.close()
    assert "failed 2 times in a row; the last time: " in str(raised.value)
    assert reason in str(raised.value)
    assert len(server.requests) == 2


def test_a_refused_key_fails_at_once_and_never_shows_the_key():
    refusal = status(401, f"Incorrect API key provided: {KEY}")
    with RawChatServer(lambda request: refusal) as server:
        model = provider(server.url)
        with pytest.raises(ProviderFailure) as raised:
            ask(model)
        model.close()
    message = str(raised.value)
    assert "refused the request: HTTP 401: Incorrect API key provided: [the API key]" in message
    assert KEY not in message
    assert len(server.requests) == 1  # retrying cannot help


def test_a_rate_limit_is_waited_as_its_retry_after_says():
    limited = status(429, "slow down", headers={"Retry-After": "0"})
    with RawChatServer(answering(limited, then=chunked(STREAM))) as server:
        model = provider(server.url)
        completion = ask(model)
        model.close()
    assert completion.text == ANSWER
    assert completion.provider_errors == [{"error": "HTTP 429: slow down", "waited_ms": 0.0}]


def test_a_server_error_is_retried_until_the_retries_are_spent():
    overloaded = status(503, "overloaded", headers={"retry-after-ms": "10"})
    with RawChatServer(lambda request: overloaded) as server:
        model = provider(server.url, provider_retries=2)
        with pytest.raises(
            ProviderFailure, match=r"failed 3 times in a row; .*HTTP 503: overloaded"
        ):
            ask(model)
        model.close()
    assert len(server.requests) == 3


def test_a_redirect_is_not_followed():
    # Following it would send the request, key and all, where the player may not point.
    with RawChatServer(lambda request: content_length(STREAM)) as elsewhere:
        moved = status(307, "moved", headers={"Location": f"{elsewhere.url}/chat/completions"})
        with RawChatServer(lambda request: moved) as server:
            model = provider(server.url)
            with pytest.raises(ProviderFailure, match="refused the request: HTTP 307: moved"):
                ask(model)
            model.close()
    assert elsewhere.requests == []


def test_a_key_echoed_in_a_broken_stream_is_not_shown():
    echo = content_length(f'data: {{"error": "bad key {KEY}"}}\n\n'.encode())
    with RawChatServer(lambda request: echo) as server:
        model = provider(server.url, provider_retries=0)
        with pytest.raises(ProviderFailure) as raised:
            ask(model)
        model.close()
    assert "bad key [the API key]" in str(raised.value) and KEY not in str(raised.value)
    assert len(server.requests) == 1


# --- what goes out --------------------------------------------------------------------------


def test_it_sends_the_players_key_and_nothing_of_the_workers_environment(monkeypatch):
    # The official client reads these from the environment; a player's server must never
    # see a secret of Arena's workers.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-api-key")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "sk-worker-admin-key")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-worker")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-worker")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Worker-Secret: s3cret\nAuthorization: Bearer x")
    with RawChatServer(lambda request: content_length(STREAM)) as server:
        with_key = provider(server.url)
        ask(with_key)
        with_key.close()
        keyless = Provider(LLMConfig(base_url=server.url, model="raw"))
        ask(keyless)
        keyless.close()
    sent, sent_keyless = (json.dumps(request.headers) for request in server.requests)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in server.requests[1].headers
    for secret in ("sk-worker", "org-worker", "proj-worker", "s3cret", "Bearer x"):
        assert secret not in sent and secret not in sent_keyless
    assert server.requests[0].headers["accept-encoding"] == "identity"


# --- stopping -----------------------------------------------------------------------------------


def assert_stopped_when_closed(answer: bytes, rest: bytes) -> None:
    """Asks a server that sends ``answer``, goes silent, and would send ``rest`` (the end
    of a good answer) after ``PATIENCE``, closes the seat as soon as the server has the
    request, and checks the request stopped and let go of its connection then."""
    received, release = threading.Event(), threading.Event()

    def silent(request: Received) -> Answer:
        received.set()
        return Answer(answer, hold=release, after_hold=rest)

    server = RawChatServer(silent)
    model = provider(server.url, request_timeout=600.0)

    def close_once_asked() -> None:
        if received.wait(60):
            model.close()

    closer = threading.Thread(target=close_once_asked)
    closer.start()
    try:
        with pytest.raises(Stopped):
            model.complete(MESSAGES, deadline=time.monotonic() + 600)
        # Let go of while the server was still silent: stopped at once, not when it spoke.
        assert server.abandoned.wait(PATIENCE)
    finally:
        release.set()
        closer.join()
        server.close()


def test_closing_stops_a_request_whose_server_has_not_answered_yet():
    assert_stopped_when_closed(b"", content_length(STREAM).data)


def test_closing_stops_a_request_whose_server_went_silent_mid_answer():
    whole_answer = chunked(STREAM).data
    half = len(whole_answer) // 2
    assert_stopped_when_closed(whole_answer[:half], whole_answer[half:])


def test_an_answer_that_keeps_coming_but_never_ends_is_cut_at_the_request_timeout():
    # Bytes keep coming, so no single wait times out: the whole request's time does.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    with RawChatServer(lambda request: Answer(head, trickle=True)) as server:
        model = provider(server.url, request_timeout=2.0, provider_retries=0)
        # The whole request's time, whichever part it was in when time ran out (on a
        # loaded machine the head itself may come late).
        with pytest.raises(
            ProviderFailure, match=r"(the answer was not complete|no answer) within 2 s"
        ):
            ask(model)
        model.close()
    assert server.abandoned.wait(PATIENCE)  # cut short, not waited out
