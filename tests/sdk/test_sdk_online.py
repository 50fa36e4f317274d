"""The SDK's online client against a scripted gateway (a real HTTP server on loopback):
it follows the stream, answers each request with one POST, tells the agent's hooks, and
after a dropped connection comes back with the seq of the last event it handled."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
from arena_sdk import Agent, OnlineError
from arena_sdk.online import OnlineClient

TOKEN = "arena_model_token_for_tests"

HELLO = {
    "type": "hello",
    "protocol": 1,
    "environment": "sum_to_10",
    "player_count": 2,
    "configuration": {},
    "limits": {},
}
FIRST_PART = [
    {"type": "welcome", "seat": "s", "after": "0", "duel": None},
    {"seq": "1", "type": "duel", "duel": 5, "opponent": "bot", "matches": 1},
    {"seq": "2", **HELLO},
    {"seq": "3", "type": "start", "match": 0, "player": 0, "seed": 1},
    {
        "seq": "4",
        "type": "act",
        "id": 1,
        "match": 0,
        "step": 0,
        "observation": {},
        "legal_actions": [1, 2, 3],
    },
]
SECOND_PART = [
    {"type": "welcome", "seat": "s", "after": "4", "duel": 5},
    {
        "seq": "5",
        "type": "act",
        "id": 3,
        "match": 0,
        "step": 2,
        "observation": {},
        "legal_actions": [2],
    },
    {"seq": "6", "type": "end", "match": 0, "result": "win", "scores": [1, 0], "reason": ""},
    {"seq": "7", "type": "bye"},
]


class Gateway(http.server.BaseHTTPRequestHandler):
    """Two connections to the stream: the first drops after an ``act``; the second must
    resume after its seq. Replies are recorded; the second reply to a request is a 409."""

    streams: list[str | None] = []
    replies: list[dict] = []
    authorizations: set[str] = set()
    queue_calls: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.authorizations.add(self.headers.get("Authorization", ""))
        assert self.path == "/api/v1/online/events"
        self.streams.append(self.headers.get("Last-Event-ID"))
        events = FIRST_PART if len(self.streams) == 1 else SECOND_PART
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(json.dumps(event).encode() + b"\n")
            self.wfile.flush()
        # Let the reply to the last act arrive before the connection drops.
        threading.Event().wait(0.3)

    def do_POST(self) -> None:
        self.authorizations.add(self.headers.get("Authorization", ""))
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path == "/api/v1/online/queue":
            self.queue_calls.append("join")
            self._json(200, {"state": "queued"})
            return
        reply = json.loads(body)
        if any(
            seen.get("id") == reply.get("id") and seen["type"] == reply["type"]
            for seen in self.replies
        ):
            self._json(409, {"error": {"code": "not_your_turn", "message": "answered"}})
            return
        self.replies.append(reply)
        self._json(202, {"accepted": "x"})

    def do_DELETE(self) -> None:
        self.queue_calls.append("leave")
        self._json(200, {"state": "idle"})


@pytest.fixture
def gateway() -> Iterator[str]:
    Gateway.streams, Gateway.replies = [], []
    Gateway.authorizations, Gateway.queue_calls = set(), []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class Recorder(Agent):
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.errors: list[OnlineError] = []
        self.disconnects: list[str] = []
        self.results: list[str] = []

    def act(self, turn):
        return turn.legal_actions[-1]

    def end(self, result):
        self.results.append(result.outcome)

    def on_server_message(self, message: dict) -> None:
        self.messages.append(message["type"])

    def on_error(self, error: OnlineError) -> None:
        self.errors.append(error)

    def on_disconnect(self, reason: str) -> None:
        self.disconnects.append(reason)


def test_it_plays_a_duel_resuming_after_a_drop_where_it_was(gateway):
    agent = Recorder()

    code = OnlineClient(agent, server=gateway, token=TOKEN, duels=1, log=lambda _: None).run()

    assert code == 0
    assert Gateway.streams == [None, "4"]  # resumed after the last event handled
    assert [(reply["type"], reply.get("id"), reply.get("action")) for reply in Gateway.replies] == [
        ("ready", None, None),
        ("action", 1, 3),
        ("action", 3, 2),
    ]
    assert agent.results == ["win"]
    assert agent.messages == ["welcome", "duel", "welcome"]
    assert len(agent.disconnects) == 1
    assert Gateway.queue_calls == ["join", "leave"]
    # The token went in the header, and only there.
    assert Gateway.authorizations == {f"Bearer {TOKEN}"}


def test_it_stops_when_the_server_refuses_its_token(gateway, monkeypatch):
    def refuse(self, after):
        raise OnlineError(401, "unauthorized", "The token is unknown or revoked.")
        yield  # pragma: no cover

    monkeypatch.setattr("arena_sdk.online.Gateway.events", refuse)
    lines: list[str] = []

    code = OnlineClient(Recorder(), server=gateway, token=TOKEN, join=False, log=lines.append).run()

    assert code == 1
    assert lines == ["arena: The token is unknown or revoked."]


class RevokingGateway(Gateway):
    """The stream's first connection ends with ``closed`` (the token was revoked); the
    next one is refused."""

    def do_GET(self) -> None:
        self.streams.append(self.headers.get("Last-Event-ID"))
        if len(self.streams) > 1:
            self._json(401, {"error": {"code": "unauthorized", "message": "Revoked."}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in (FIRST_PART[0], {"type": "closed", "reason": "The token was revoked."}):
            self.wfile.write(json.dumps(event).encode() + b"\n")


def test_it_says_why_the_server_closed_its_stream_and_stops():
    Gateway.streams = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RevokingGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    lines: list[str] = []
    try:
        code = OnlineClient(
            Recorder(),
            server=f"http://127.0.0.1:{server.server_address[1]}",
            token=TOKEN,
            join=False,
            log=lines.append,
        ).run()
    finally:
        server.shutdown()

    assert code == 1
    assert "arena: the server closed the stream: The token was revoked." in lines
    assert lines[-1] == "arena: Revoked."


def test_a_reply_the_server_cannot_take_is_sent_again_until_it_is_taken(monkeypatch):
    """A gateway restarting on a busy machine is away for seconds: the reply waits for it
    (given up, it would leave the referee waiting until the move's time ran out)."""
    monkeypatch.setattr("arena_sdk.online.REPLY_RETRY_MAX", 0.001)
    client = OnlineClient(Recorder(), server="http://127.0.0.1:9", token=TOKEN, log=lambda _: None)
    sent: list[bytes] = []

    def request(method: str, path: str, body: bytes = b"") -> dict:
        if len(sent) < 50:
            sent.append(b"")
            raise ConnectionRefusedError(111, "Connection refused")
        sent.append(body)
        return {}

    monkeypatch.setattr(client.gateway, "request", request)

    client._reply(b'{"type": "action", "id": 1, "action": 3}')

    assert sent[-1] == b'{"type": "action", "id": 1, "action": 3}'
    assert len(sent) == 51


def test_a_stopped_client_stops_sending_a_reply(monkeypatch):
    client = OnlineClient(Recorder(), server="http://127.0.0.1:9", token=TOKEN, log=lambda _: None)
    attempts: list[str] = []

    def request(method: str, path: str, body: bytes = b"") -> dict:
        attempts.append(path)
        client.stop()
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(client.gateway, "request", request)

    client._reply(b'{"type": "ready"}')

    assert attempts == ["/reply"]
