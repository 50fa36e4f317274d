"""The network gateway against real clients, well behaved and hostile, on loopback, with
a real Redis seat bus.

The test process stands in for the referee (it opens a duel on a seat and publishes
requests on the bus, as a duel worker does), so each case checks exactly what reaches
the referee: only well-formed replies to open requests, whatever a client throws at the
gateway; and a second model playing on the same gateway meanwhile is not affected.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import socket
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import pytest
from django.utils import timezone

from core.models import ApiToken, Competitor
from core.services.online import online_model_register
from edge.gateway import _streamed
from referee.duel import run_duel
from sandboxes.base import AgentSource, SandboxBackend
from sandboxes.redis_seat_bus import RedisSeatBus
from sandboxes.remote import RemoteSandbox
from tests.factories import EnvironmentFactory, TournamentFactory, UserFactory
from tests.support.gateway import (
    ACT,
    GATEWAY_SETTINGS,
    Gateway,
    online_model_registered,
)
from tests.support.sandboxes import agent
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def model() -> tuple[Competitor, str]:
    return online_model_registered("net-bot")


def ask(bus: RedisSeatBus, competitor: Competitor, request_id: int) -> None:
    """What a referee does: a duel on the seat, and a request the client must answer."""
    bus.seat_open(competitor.seat, duel=1, announcement=b'{"type":"duel","duel":1}')
    bus.publish(competitor.seat, ACT % request_id, awaits=f"act:{request_id}")


def whole_answer(client: socket.socket) -> bytes:
    """Everything the gateway sends before it closes the connection. A server that closes
    with part of a request unread resets the connection, which may cut off what follows
    its answer's first packet: what arrived is returned."""
    received = b""
    try:
        while chunk := client.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def reply(gateway: Gateway, token: str, body: bytes) -> tuple[int, dict[str, Any]]:
    status, answer, _ = gateway.request("POST", "/api/v1/online/reply", token=token, body=body)
    return status, answer


def test_it_hands_a_reply_to_the_referee_once(gateway, bus, model):
    competitor, token = model
    ask(bus, competitor, 7)

    first = reply(gateway, token, b'{"type":"action","id":7,"action":2}')
    second = reply(gateway, token, b'{"type":"action","id":7,"action":1}')

    assert first == (202, {"accepted": "act:7"})
    assert second[0] == 409
    assert second[1]["error"]["code"] == "not_your_turn"
    assert bus.replies(competitor.seat, 1.0) == [b'{"type":"action","id":7,"action":2}']


def test_it_reads_an_id_written_with_a_zero_fraction_as_that_integer(gateway, bus, model):
    # JSON does not tell 7 from 7.0, and the document's schema calls both integers.
    competitor, token = model
    ask(bus, competitor, 7)

    assert reply(gateway, token, b'{"type":"action","id":7.0,"action":2}') == (
        202,
        {"accepted": "act:7"},
    )
    assert bus.replies(competitor.seat, 1.0) == [b'{"type":"action","id":7,"action":2}']


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "malformed"),
        (b"[1, 2]", 400, "malformed"),
        (b'{"type": "hello"}', 400, "malformed"),
        (b'{"type": "action", "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": "7", "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": 7.5, "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": 18446744073709551623, "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": 9223372036854775808, "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": -1, "action": 1}', 400, "malformed"),
        (b'{"type": "action", "id": 8, "action": 1}', 409, "not_your_turn"),
        (b'{"type": "ready"}', 409, "not_your_turn"),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "not-a-reply",
        "no-id",
        "id-not-int",
        "id-fraction",
        "id-beyond-64-bits",
        "id-2**63",
        "id-negative",
        "out-of-turn",
        "ready",
    ],
)
def test_it_refuses_a_bad_reply_with_a_reason_and_passes_nothing_on(
    gateway, bus, model, body, status, code
):
    competitor, token = model
    ask(bus, competitor, 7)

    answer = reply(gateway, token, body)

    assert answer[0] == status
    assert answer[1]["error"]["code"] == code
    assert answer[1]["error"]["message"]
    assert bus.replies(competitor.seat, 0.3) == []
    # The open request is still open: the right answer goes through.
    assert reply(gateway, token, b'{"type":"action","id":7,"action":0}')[0] == 202


def test_it_refuses_a_reply_when_no_duel_is_on(gateway, bus, model):
    _, token = model

    status, answer = reply(gateway, token, b'{"type":"action","id":1,"action":0}')

    assert status == 409
    assert answer["error"]["code"] == "not_playing"


def test_it_refuses_an_oversized_body_before_reading_it(gateway, model):
    _, token = model
    with socket.create_connection((gateway.host, gateway.port), timeout=60) as client:
        # Only the headers: the answer comes without the gateway waiting for the body.
        client.sendall(
            b"POST /api/v1/online/reply HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Length: 2097152\r\nContent-Type: application/json\r\n\r\n"
        )
        answer = whole_answer(client)

    assert answer.startswith(b"HTTP/1.1 413")
    assert b'"too_large"' in answer


def test_it_refuses_an_oversized_body_sent_in_chunks_without_a_length(gateway, model):
    _, token = model
    with socket.create_connection((gateway.host, gateway.port), timeout=60) as client:
        client.sendall(
            b"POST /api/v1/online/reply HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        )
        chunk = b"x" * 65536
        try:
            for _ in range(40):  # 2.5 MiB
                client.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass  # the gateway answered and closed first
        answer = whole_answer(client)

    assert answer.startswith(b"HTTP/1.1 413")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head
    assert not body or b'"too_large"' in body


def test_it_cuts_off_a_slow_sender(gateway, bus, model):
    _, token = model
    other, other_token = online_model_registered("fast-bot")
    ask(bus, other, 3)
    with socket.create_connection((gateway.host, gateway.port), timeout=20) as client:
        client.sendall(
            b"POST /api/v1/online/reply HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Length: 100\r\nContent-Type: application/json\r\n\r\n{"
        )
        # Meanwhile another model's reply goes through at once.
        assert reply(gateway, other_token, b'{"type":"action","id":3,"action":1}')[0] == 202
        answer = whole_answer(client)

    # The gateway's own cut-off answered (the client would wait 20 s), however loaded the
    # machine: no wall-clock bound to meet.
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"too_slow"' in answer


@pytest.fixture
def hourly_gateway(celery_workers, shared_gateways, redis_url, settings) -> Gateway:
    """A gateway that lets a model send 100 requests an hour: a flood of 240 goes past it
    however slowly this machine sends them (at ``40/s`` a loaded machine never did)."""
    return shared_gateways.get(
        celery_workers,
        redis_url,
        settings,
        **{**GATEWAY_SETTINGS, "ARENA_ONLINE_RATE": "100/hour"},
    )


def test_it_answers_a_flood_with_429_and_a_retry_after(hourly_gateway, bus, model):
    gateway = hourly_gateway
    _, token = model
    other, other_token = online_model_registered("calm-bot")
    ask(bus, other, 5)

    def flood() -> list[tuple[int, str | None]]:
        connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
        answers = []
        for _ in range(60):
            connection.request(
                "GET", "/api/v1/online/status", headers={"Authorization": f"Bearer {token}"}
            )
            response = connection.getresponse()
            response.read()
            answers.append((response.status, response.getheader("Retry-After")))
        connection.close()
        return answers

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = [answer for part in pool.map(lambda _: flood(), range(4)) for answer in part]
    # The flood costs the flooder only.
    answer = reply(gateway, other_token, b'{"type":"action","id":5,"action":2}')

    refused = [retry for status, retry in answers if status == 429]
    assert refused
    assert all(retry is not None and int(retry) >= 1 for retry in refused)
    assert answer[0] == 202


def test_it_refuses_a_revoked_token(gateway, model):
    _, token = model
    assert gateway.request("GET", "/api/v1/online/status", token=token)[0] == 200

    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    # A gateway checks the tokens it has seen again every second: soon, never again.
    wait_for(
        lambda: gateway.request("GET", "/api/v1/online/status", token=token)[0] != 200,
        timeout=30,
        what="the revoked token to be refused",
    )
    status, answer, headers = gateway.request("GET", "/api/v1/online/status", token=token)

    assert status == 401
    assert answer["error"]["code"] == "unauthorized"
    assert headers["www-authenticate"] == "Bearer"


def test_it_never_takes_a_token_from_the_url(gateway, model):
    _, token = model

    status, _, _ = gateway.request("GET", f"/api/v1/online/status?token={token}")

    assert status == 401
    assert token not in gateway.log()


def test_it_refuses_a_user_token_for_play(gateway, model):
    competitor, _ = model
    status, answer, _ = gateway.request(
        "GET", "/api/v1/online/status", token="arena_unknown_" + "x" * 30
    )
    assert status == 401
    from core.services.accounts import api_token_create

    _, user_secret = api_token_create(user=competitor.owner, name="cli", scopes=["play"])

    status, answer, _ = gateway.request("GET", "/api/v1/online/status", token=user_secret)

    assert status == 403
    assert "model token" in answer["error"]["message"]


def test_it_streams_a_duel_and_resumes_it_after_a_drop(gateway, bus, model):
    competitor, token = model
    ask(bus, competitor, 7)
    first = read_stream(gateway, token, lines=3)

    assert [event["type"] for event in first] == ["welcome", "duel", "act"]
    # Reconnecting with the last seq handled: only what came since.
    bus.publish(competitor.seat, ACT % 9, awaits="act:9")
    resumed = read_stream(gateway, token, lines=2, last_event_id=first[-1]["seq"])

    assert [(event["type"], event.get("id")) for event in resumed] == [
        ("welcome", None),
        ("act", 9),
    ]


@pytest.mark.parametrize("seq", ["42-33079892614261376070", "0-20000000000000000000"])
def test_it_refuses_to_resume_after_a_seq_beyond_64_bits(gateway, bus, model, seq):
    """The pattern allows 20 digits, Redis's stream ids only 64 bits: found by fuzzing the
    gateway, the long poll answered 500 and the stream was cut off after its 200."""
    competitor, token = model
    ask(bus, competitor, 7)

    polled = gateway.request("GET", f"/api/v1/online/next?after={seq}&wait=0", token=token)
    streamed = gateway.request(
        "GET", "/api/v1/online/events", token=token, headers={"Last-Event-ID": seq}
    )

    for status, answer, _ in (polled, streamed):
        assert (status, answer["error"]["code"]) == (400, "bad_request")
        assert "is not an event's seq" in answer["error"]["message"]
    # The seat plays on: a stream from a seq it was sent resumes.
    first = read_stream(gateway, token, lines=3)
    bus.publish(competitor.seat, ACT % 9, awaits="act:9")
    resumed = read_stream(gateway, token, lines=2, last_event_id=first[-1]["seq"])
    assert resumed[-1]["id"] == 9


def test_it_cuts_off_a_stream_that_fails_after_it_began_and_raises_the_failure():
    """Too late for a 500: the failure goes to the server (which logs it and drops the
    connection), and the stream is never ended as if it were complete."""

    async def failing_lines() -> AsyncGenerator[bytes, None]:
        yield b'{"type":"welcome"}\n'
        raise ConnectionError("the seat bus is gone")

    sent: list[dict[str, Any]] = []

    async def send(message: Mapping[str, Any]) -> None:
        sent.append(dict(message))

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays
        raise AssertionError("unreachable")

    streamed = _streamed(
        receive,
        send,
        failing_lines(),
        b"application/x-ndjson",
        last_line=lambda: b'{"type":"closed"}\n',
    )
    # In a thread of its own: a browser test before may leave its event loop in this one.
    with (
        concurrent.futures.ThreadPoolExecutor(1) as pool,
        pytest.raises(ConnectionError, match="the seat bus is gone"),
    ):
        pool.submit(asyncio.run, streamed).result(timeout=30)

    assert sent[0]["status"] == 200
    assert [message["body"] for message in sent[1:]] == [b'{"type":"welcome"}\n']
    assert sent[-1]["more_body"] is True


def test_it_tells_the_queue_why_it_cannot_join(gateway, model):
    competitor, token = model

    status, answer, _ = gateway.request("POST", "/api/v1/online/queue", token=token)

    assert status == 409
    assert answer["error"]["code"] == "no_ladder"
    assert "No ladder is running" in answer["error"]["message"]
    TournamentFactory(environment=competitor.environment, format="ladder", status="running")
    status, answer, _ = gateway.request("POST", "/api/v1/online/queue", token=token)
    assert status == 200
    assert answer["state"] == "queued"


def read_stream(
    gateway: Gateway, token: str, *, lines: int, last_event_id: str | None = None
) -> list[dict[str, Any]]:
    connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    connection.request("GET", "/api/v1/online/events", headers=headers)
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/x-ndjson"
    events = [json.loads(response.readline()) for _ in range(lines)]
    connection.close()
    return events


def open_stream(gateway: Gateway, token: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
    connection.request("GET", "/api/v1/online/events", headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    assert response.status == 200
    return response


def stop_playing(competitor: Competitor, how: str) -> None:
    if how == "revoked":
        ApiToken.objects.filter(competitor=competitor).update(revoked_at=timezone.now())
    elif how == "disabled":
        Competitor.objects.filter(pk=competitor.pk).update(is_disabled=True)
    else:
        Competitor.objects.get(pk=competitor.pk).delete()  # as the admin deletes it


@pytest.mark.parametrize("how", ["revoked", "disabled", "deleted"])
def test_it_closes_an_open_stream_when_its_model_may_no_longer_play(gateway, bus, model, how):
    competitor, token = model
    other, other_token = online_model_registered("calm-bot")
    ask(bus, competitor, 7)
    stream = open_stream(gateway, token)
    calm = open_stream(gateway, other_token)
    assert [json.loads(stream.readline())["type"] for _ in range(3)] == ["welcome", "duel", "act"]
    wait_for(lambda: bus.is_present(competitor.seat), timeout=30, what="the stream to count")

    stop_playing(competitor, how)
    rest = [json.loads(line) for line in stream.read().splitlines()]

    # The last line says why; then the stream ends, and the seat is absent at once (its
    # referee gives it the grace period of a disconnected client, then a loss).
    assert [event["type"] for event in rest if event["type"] != "ping"] == ["closed"]
    reason = rest[-1]["reason"]
    assert ("disabled" in reason) if how == "disabled" else ("revoked" in reason)
    assert not bus.is_present(competitor.seat)
    assert gateway.request("GET", "/api/v1/online/status", token=token)[0] in (401, 403)
    # Another model's stream on the same gateway goes on.
    assert json.loads(calm.readline())["type"] == "welcome"
    assert bus.is_present(other.seat)


def test_it_answers_a_long_poll_of_a_revoked_token_and_forgets_its_presence(gateway, bus, model):
    competitor, token = model
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        poll = pool.submit(gateway.request, "GET", "/api/v1/online/next?wait=60", token=token)
        wait_for(lambda: bus.is_present(competitor.seat), timeout=30, what="the poll to count")
        ApiToken.objects.filter(competitor=competitor).update(revoked_at=timezone.now())
        status, answer, _ = poll.result(timeout=50)

    assert status == 401
    assert "revoked" in answer["error"]["message"]
    assert not bus.is_present(competitor.seat)


def test_it_counts_a_model_connected_exactly_while_its_stream_is_open(gateway, bus, model):
    competitor, token = model
    TournamentFactory(environment=competitor.environment, format="ladder", status="running")
    status, queued, _ = gateway.request("POST", "/api/v1/online/queue", token=token)
    assert status == 200
    assert (queued["state"], queued["model"]["connected"]) == ("queued", False)
    assert "not connected" in queued["message"]

    stream = open_stream(gateway, token)
    assert json.loads(stream.readline())["type"] == "welcome"
    wait_for(lambda: bus.is_present(competitor.seat), timeout=30, what="the stream to count")
    _, connected, _ = gateway.request("GET", "/api/v1/online/status", token=token)
    stream.close()
    wait_for(lambda: not bus.is_present(competitor.seat), timeout=30, what="the seat to go")
    _, gone, _ = gateway.request("GET", "/api/v1/online/status", token=token)

    assert connected["model"]["connected"] is True
    assert "paired as soon as" in connected["message"]
    assert gone["model"]["connected"] is False


def test_it_says_a_model_no_longer_plays_once_its_duel_said_bye(gateway, bus, model):
    competitor, token = model
    ask(bus, competitor, 7)
    assert gateway.request("GET", "/api/v1/online/status", token=token)[1]["state"] == "playing"

    bus.publish(competitor.seat, b'{"type":"bye"}', awaits=None)
    bus.seat_close(competitor.seat)  # what the remote seat does on its bye
    _, status, _ = gateway.request("GET", "/api/v1/online/status", token=token)

    assert status["state"] == "idle"
    assert status["duel"] is None


def test_it_records_when_a_model_token_was_last_used(gateway, bus, model):
    competitor, token = model
    ask(bus, competitor, 7)
    assert ApiToken.objects.get(competitor=competitor).last_used_at is None

    assert reply(gateway, token, b'{"type":"action","id":7,"action":2}')[0] == 202

    wait_for(
        lambda: ApiToken.objects.get(competitor=competitor).last_used_at is not None,
        timeout=30,
        what="the token's last use to be recorded",
    )


def test_a_stream_that_runs_out_of_time_just_ends(
    celery_workers, shared_gateways, redis_url, settings, bus
):
    """Its client reconnects and resumes; nothing says its token stopped playing."""
    gateway = shared_gateways.get(
        celery_workers, redis_url, settings, ARENA_ONLINE_STREAM_SECONDS="1"
    )
    competitor, token = online_model_registered("brief-bot")
    ask(bus, competitor, 7)

    lines = [json.loads(line) for line in open_stream(gateway, token).read().splitlines()]

    assert [event["type"] for event in lines] == ["welcome", "duel", "act"]
    assert gateway.request("GET", "/api/v1/online/status", token=token)[0] == 200


# --- a game of four, refereed for real: the hostile client in each seat ----------------------

#: Generous clocks: the client answers at once, and a loaded machine must not turn its
#: illegal action into a timeout.
FOUR_SEATS_CLOCK: dict[str, Any] = {"move_time": 10.0, "time_bank": 10.0, "startup_time": 20.0}
#: What the hostile client sends before its (illegal) action, and what each must get.
GARBAGE = [
    (b"{not json", 400, "malformed"),
    (b'{"type": "action", "id": -1, "action": 1}', 400, "malformed"),
    (b'{"type": "action", "id": 999999, "action": 1}', 409, "not_your_turn"),
]


class HostileClient:
    """An online agent over HTTP that gets ready as it should, then answers each request
    with garbage first (each refused with its reason), then with an action the game does
    not allow."""

    def __init__(self, gateway: Gateway, token: str) -> None:
        self.gateway, self.token = gateway, token
        self.answers: list[tuple[int, str]] = []
        self.stream = open_stream(gateway, token)
        self.pool = concurrent.futures.ThreadPoolExecutor(1)
        self.done = self.pool.submit(self._play)

    def _play(self) -> int:
        acted = 0
        while line := self.stream.readline():
            event = json.loads(line)
            if event["type"] == "bye":
                break
            if event["type"] == "hello":
                assert reply(self.gateway, self.token, b'{"type":"ready"}')[0] == 202
            if event["type"] != "act":
                continue
            for body, _, _ in GARBAGE:
                status, answer = reply(self.gateway, self.token, body)
                self.answers.append((status, answer["error"]["code"]))
            status, _ = reply(
                self.gateway, self.token, b'{"type":"action","id":%d,"action":99}' % event["id"]
            )
            self.answers.append((status, "accepted"))
            acted += 1
        return acted

    def close(self) -> None:
        self.stream.close()
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("online_player", [1, 2, 3, 4])
def test_in_a_game_of_four_a_hostile_client_is_refused_and_charged_alone(
    gateway, bus, backend, online_player
):
    environment = EnvironmentFactory(name="lowest_unique", players=4)
    competitor, token = online_model_register(
        owner=UserFactory(), environment=environment, name="net-hostile"
    )
    sources = [agent("random_agent.py") for _ in range(3)]
    backends: list[SandboxBackend] = [backend] * 3
    sources.insert(online_player - 1, AgentSource.remote("online", seat=competitor.seat))
    backends.insert(online_player - 1, RemoteSandbox(bus, duel=1, grace=5, allowance=1))
    client = HostileClient(gateway, token)
    try:
        result = run_duel(
            "lowest_unique", sources, backend=tuple(backends), seed=11, matches=3,
            **FOUR_SEATS_CLOCK,
        )  # fmt: skip
    finally:
        client.close()

    assert not result.infrastructure_error
    # Each match: its one request, answered with garbage (refused with the reason, nothing
    # passed on), then an illegal action, which the referee charges to that seat alone.
    assert (
        client.answers
        == ([(status, code) for _, status, code in GARBAGE] + [(202, "accepted")]) * 3
    )
    for match in result.matches:
        assert [(f.player, f.kind.value) for f in match.faults] == [
            (online_player, "illegal_action")
        ]
        assert match.ranks[online_player - 1] == max(match.ranks)  # last
    assert result.as_json()["errors"] == [3 if p == online_player else 0 for p in (1, 2, 3, 4)]
