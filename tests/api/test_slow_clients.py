"""Clients that send slowly or hold many connections, against the real gateway (uvicorn,
with a Redis seat bus): each is cut off or refused at its limit (``api/connections.py``),
while an online model playing from another address meanwhile notices nothing.

The deadlines are short here (2 s); a test waits generously for the gateway to act and
never asks it to be quick, only never early: a loaded machine may only make it late.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import time
from typing import Any

import pytest

from sandboxes.redis_seat_bus import RedisSeatBus
from tests.support.gateway import (
    ACT,
    GATEWAY_SETTINGS,
    Gateway,
    online_model_registered,
)
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: The body deadline is GATEWAY_SETTINGS' (2 s); the headers get as long.
HEADER_SECONDS = 2.0
BODY_SECONDS = float(GATEWAY_SETTINGS["ARENA_REQUEST_BODY_SECONDS"])
PER_ADDRESS = 8
SLOW_SETTINGS = {
    **GATEWAY_SETTINGS,
    "ARENA_REQUEST_HEADER_SECONDS": f"{HEADER_SECONDS:g}",
    "ARENA_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS),
}
#: How long the gateway is given to act on a deadline: anything, short of hanging.
GENEROUS_SECONDS = 60.0
#: The model that plays well, and the loopback addresses the slow senders come from (each
#: stays under the cap: only the deadlines are at work).
PLAYER_ADDRESS = "127.0.0.2"
SLOW_ADDRESSES = [f"127.0.0.{10 + n}" for n in range(20)]


@pytest.fixture
def slow_gateway(celery_workers, shared_gateways: Any, redis_url: str, settings: Any) -> Gateway:
    return shared_gateways.get(celery_workers, redis_url, settings, **SLOW_SETTINGS)


def connection_from(gateway: Gateway, source: str) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(
        gateway.host, gateway.port, timeout=30, source_address=(source, 0)
    )


def request_from(
    gateway: Gateway, source: str, path: str, *, token: str | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A GET on a new connection from ``source``: status, JSON body, headers."""
    connection = connection_from(gateway, source)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return (
            response.status,
            json.loads(data) if data else {},
            {key.lower(): value for key, value in response.getheaders()},
        )
    finally:
        connection.close()


class Player:
    """An online model as the SDK runs one: its stream of events held open, each reply a
    POST on one kept-alive connection."""

    def __init__(self, gateway: Gateway, bus: RedisSeatBus, source: str) -> None:
        self.competitor, self.token = online_model_registered("steady-bot")
        self.bus = bus
        self.headers = {"Authorization": f"Bearer {self.token}"}
        self.stream = connection_from(gateway, source)
        self.stream.request("GET", "/api/v1/online/events", headers=self.headers)
        self.events = self.stream.getresponse()
        assert self.events.status == 200
        self.replies = connection_from(gateway, source)
        bus.seat_open(self.competitor.seat, duel=1, announcement=b'{"type":"duel","duel":1}')
        self.played = 0

    def play_one(self) -> int:
        """The referee asks; the model reads the request on its stream and replies: the
        reply's status."""
        request_id = self.played + 1
        self.bus.publish(self.competitor.seat, ACT % request_id, awaits=f"act:{request_id}")
        while True:
            line = self.events.readline()
            assert line, "the gateway ended the model's stream"
            event = json.loads(line)
            if event["type"] == "act" and event["id"] == request_id:
                break
        self.replies.request(
            "POST",
            "/api/v1/online/reply",
            body=b'{"type":"action","id":%d,"action":1}' % request_id,
            headers={**self.headers, "Content-Type": "application/json"},
        )
        answer = self.replies.getresponse()
        answer.read()
        self.played = request_id
        return answer.status

    def close(self) -> None:
        self.stream.close()
        self.replies.close()


@dataclasses.dataclass
class SlowClient:
    """A raw connection that sends ``opening`` at once, then ``trickle`` a byte at a time
    (or nothing more), and records what it is told and when the gateway closes it."""

    kind: str
    connection: socket.socket
    opened: float
    trickle: bytes
    answer: bytes = b""
    closed: float | None = None

    @classmethod
    def open(
        cls, gateway: Gateway, source: str, kind: str, opening: bytes, trickle: bytes
    ) -> SlowClient:
        opened = time.monotonic()
        connection = socket.create_connection(
            (gateway.host, gateway.port), timeout=10, source_address=(source, 0)
        )
        connection.sendall(opening)
        connection.setblocking(False)
        return cls(kind, connection, opened, trickle)

    def step(self, index: int) -> None:
        """Take what the gateway sent; send the next byte, if this one trickles."""
        if self.closed is not None:
            return
        try:
            while True:
                chunk = self.connection.recv(65536)
                if not chunk:
                    self._close()
                    return
                self.answer += chunk
        except BlockingIOError:
            pass
        except OSError:  # reset: the gateway closed while bytes were on their way
            self._close()
            return
        if self.trickle:
            try:
                self.connection.send(self.trickle[index % len(self.trickle) :][:1])
            except OSError:
                self._close()

    def _close(self) -> None:
        self.closed = time.monotonic()
        self.connection.close()


def test_slow_senders_are_cut_off_while_a_model_plays_on(slow_gateway, bus):
    _, slow_token = online_model_registered("slow-bot")
    auth = f"Authorization: Bearer {slow_token}\r\n".encode()
    reply_head = (
        b"POST /api/v1/online/reply HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n"
    )
    django_head = (
        b"POST /api/v1/online/queue HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n"
    )
    kinds = {
        # name: (how many, what is sent at once, then trickled a byte at a time)
        "headers trickled": (
            60,
            b"GET /api/v1/environments HTTP/1.1\r\nHost: 127.0.0.1\r\n",
            b"X: y\r\n",
        ),
        "nothing sent": (10, b"", b""),
        "headers stalled": (2, b"GET /api/v1/environments HTTP/1.1\r\nHost: 127.0.0.1\r\n", b""),
        "reply body trickled": (6, reply_head + auth + b"\r\n{", b" "),
        "reply body stalled": (2, reply_head + auth + b"\r\n{", b""),
        # A Django view: Django reads the whole body before any view runs.
        "django body trickled": (6, django_head + auth + b"\r\n{", b" "),
        "django body stalled": (2, django_head + auth + b"\r\n{", b""),
        # Refused before its body was read (no token): uvicorn would go on reading it.
        "body after its answer": (6, reply_head + b"\r\n{", b" "),
        # Answered and kept alive, then only line ends, which begin no request.
        "line ends after an answer": (
            4,
            b"GET /api/v1/environments HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"\r\n",
        ),
    }
    player = Player(slow_gateway, bus, PLAYER_ADDRESS)
    assert player.play_one() == 202

    slow: list[SlowClient] = []
    for kind, (count, opening, trickle) in kinds.items():
        for _ in range(count):
            source = SLOW_ADDRESSES[len(slow) % len(SLOW_ADDRESSES)]
            slow.append(SlowClient.open(slow_gateway, source, kind, opening, trickle))
    assert len(slow) > 50
    statuses = []
    started = time.monotonic()
    tick = 0
    while any(client.closed is None for client in slow):
        assert time.monotonic() - started < GENEROUS_SECONDS, [
            client.kind for client in slow if client.closed is None
        ]
        for client in slow:
            client.step(tick)
        tick += 1
        statuses.append(player.play_one())
        time.sleep(0.2)
    # The model's stream and its kept-alive connection outlived every slow sender.
    statuses.append(player.play_one())
    player.close()

    assert set(statuses) == {202}
    by_kind: dict[str, list[SlowClient]] = {}
    for client in slow:
        by_kind.setdefault(client.kind, []).append(client)
    for kind, clients in by_kind.items():
        deadline = BODY_SECONDS if "body" in kind else HEADER_SECONDS
        # Never before the deadline (the margin: the gateway's timers count in ms).
        assert all(
            client.closed is not None and client.closed - client.opened >= deadline - 0.1
            for client in clients
        ), kind
    # Stalled: told why. Trickling: their next byte may meet the closed connection, whose
    # reset can drop the answer; none ever got another one.
    for client in by_kind["headers stalled"]:
        assert client.answer.startswith(b"HTTP/1.1 408 "), client.answer
        assert b'"code":"too_slow"' in client.answer
        assert f"headers did not arrive within {HEADER_SECONDS:g} s.".encode() in client.answer
    for kind in ("reply body stalled", "django body stalled"):
        for client in by_kind[kind]:
            assert client.answer.startswith(b"HTTP/1.1 408 "), (kind, client.answer)
            assert f"body did not arrive within {BODY_SECONDS:g} s.".encode() in client.answer
    for kind in ("headers trickled", "reply body trickled", "django body trickled"):
        for client in by_kind[kind]:
            assert not client.answer or client.answer.startswith(b"HTTP/1.1 408 "), kind
    assert all(client.answer == b"" for client in by_kind["nothing sent"])
    assert all(
        client.answer.startswith(b"HTTP/1.1 401 ") for client in by_kind["body after its answer"]
    )
    assert all(
        client.answer.startswith(b"HTTP/1.1 200 ")
        for client in by_kind["line ends after an answer"]
    )


def open_stream(gateway: Gateway, source: str, token: str) -> http.client.HTTPConnection:
    """A model's stream of events from ``source``, held open until it is closed."""
    connection = connection_from(gateway, source)
    connection.request("GET", "/api/v1/online/events", headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    assert response.status == 200
    assert json.loads(response.readline())["type"] == "welcome"
    return connection


def test_an_address_over_its_cap_is_refused_and_other_addresses_are_not(slow_gateway):
    _, token = online_model_registered("greedy-bot")
    streams = [open_stream(slow_gateway, "127.0.0.3", token) for _ in range(PER_ADDRESS)]

    status, answer, headers = request_from(slow_gateway, "127.0.0.3", "/api/v1/environments")

    assert status == 429
    assert answer["error"] == {
        "code": "too_many_connections",
        "message": f"This address already has {PER_ADDRESS} connections open, the most one "
        "address may hold: close one (or let one finish) and try again.",
        "details": [],
    }
    assert headers["connection"] == "close"
    assert int(headers["retry-after"]) >= 1
    assert request_from(slow_gateway, "127.0.0.4", "/api/v1/environments")[0] == 200
    # A closed connection frees its place, once the gateway has seen it go.
    streams.pop().close()
    wait_for(
        lambda: request_from(slow_gateway, "127.0.0.3", "/api/v1/environments")[0] == 200,
        timeout=GENEROUS_SECONDS,
        what="the freed place to be taken",
    )
    for stream in streams:
        stream.close()


def test_behind_the_proxy_the_gateway_caps_no_address(
    celery_workers, shared_gateways, redis_url, settings
):
    # Every connection comes from nginx then, which caps each client's own address.
    gateway = shared_gateways.get(
        celery_workers,
        redis_url,
        settings,
        **SLOW_SETTINGS,
        ARENA_BEHIND_PROXY="1",
    )
    _, token = online_model_registered("proxied-bot")

    streams = [open_stream(gateway, "127.0.0.1", token) for _ in range(PER_ADDRESS + 4)]

    assert request_from(gateway, "127.0.0.1", "/api/v1/environments")[0] == 200
    for stream in streams:
        stream.close()
