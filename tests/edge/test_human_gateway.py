"""A person's game through the real gateway (uvicorn, Redis seat bus), over HTTP as the
page's script drives it: the session cookie of a logged-in user, the CSRF token of the
site, the seat's events as server-sent events, one reply per move, to the end. The
browser test (tests/browser/test_human_play.py) clicks the same game."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from django.db import connection
from django.test import Client

from core.models import Duel, DuelStatus, RatingChange
from core.services.human import human_game_create
from duel_runner.services import duel_play
from environments.base import square_name
from tests.factories import UserFactory
from tests.pipeline import PLAYERS, make_user, pipeline, upload_validated  # noqa: F401
from tests.support.gateway import Gateway

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def csrf_token(gateway: Gateway, session: str) -> str:
    connection_ = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
    connection_.request("GET", "/accounts/profile/", headers={"Cookie": f"sessionid={session}"})
    response = connection_.getresponse()
    response.read()
    for name, value in response.getheaders():
        if name.lower() == "set-cookie" and value.startswith("csrftoken="):
            return value.split(";")[0].split("=", 1)[1]
    raise AssertionError("the site set no CSRF cookie")


def refereeing(duel_id: int) -> threading.Thread:
    """The duel played meanwhile, as a worker of the ``online`` queue plays it."""

    def play() -> None:
        try:
            duel_play(duel_id=duel_id)
        finally:
            connection.close()

    thread = threading.Thread(target=play)
    thread.start()
    return thread


def read_until(response: http.client.HTTPResponse, kind: str) -> dict:
    """The seat's messages until one of type ``kind``, which is returned."""
    buffer = b""
    while True:
        chunk = response.read1(65536)
        assert chunk, f"the stream ended before a {kind!r}"
        buffer += chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            for line in block.split(b"\n"):
                if line.startswith(b"data: ") and json.loads(line[6:])["type"] == kind:
                    return json.loads(line[6:])


def send_reply(gateway: Gateway, duel: Duel, cookies: str, token: str, body: dict) -> int:
    """The page's POST of one reply, with its cookies and CSRF token; the status."""
    poster = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
    poster.request(
        "POST",
        f"/api/v1/online/human/{duel.pk}/reply",
        body=json.dumps(body),
        headers={"Cookie": cookies, "X-CSRFToken": token, "Content-Type": "application/json"},
    )
    answer = poster.getresponse()
    answer.read()
    return answer.status


def game_against_rando(gateway: Gateway) -> tuple[Duel, str, str]:
    """A person's game against a random agent, and their browser's cookies and CSRF
    token."""
    gateway.workers.start("uploads")
    rando = upload_validated(
        make_user(), "tic_tac_toe", "rando", PLAYERS / "tic_tac_toe" / "random_player.py"
    )
    person = UserFactory()
    duel = human_game_create(user=person, opponent=rando)
    session = session_of(person)
    token = csrf_token(gateway, session)
    return duel, f"sessionid={session}; csrftoken={token}", token


def test_a_person_who_closes_the_page_loses_by_timeout(gateway, settings):
    # A move's time is every seat's start-up limit and the person's grace from the start
    # (before this test's stream is open): ten seconds, so that on a loaded machine only
    # the closed page runs out of time, never rando's start or the page's ready (2 s could).
    settings.ARENA_HUMAN_MOVE_SECONDS = 10.0
    settings.ARENA_HUMAN_TIME_BANK_SECONDS = 1.0
    duel, cookies, token = game_against_rando(gateway)
    playing = refereeing(duel.pk)

    stream = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
    stream.request("GET", f"/api/v1/online/human/{duel.pk}/events", headers={"Cookie": cookies})
    response = stream.getresponse()
    read_until(response, "hello")
    poster = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
    poster.request(
        "POST",
        f"/api/v1/online/human/{duel.pk}/reply",
        body=b'{"type": "ready"}',
        headers={"Cookie": cookies, "X-CSRFToken": token, "Content-Type": "application/json"},
    )
    assert poster.getresponse().status == 202
    asked = read_until(response, "act")
    assert asked["time_left"] == {"move": 10.0, "bank": 1.0}
    stream.close()  # the tab is closed
    playing.join(timeout=60)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED and duel.result == "PLAYER_2_WIN"
    [fault] = duel.matches.get().faults
    assert (fault["player"], fault["kind"]) == (1, "timeout")
    assert not RatingChange.objects.exists()


def test_a_person_plays_a_game_to_the_end_through_the_gateway(gateway):
    duel, cookies, token = game_against_rando(gateway)

    playing = refereeing(duel.pk)
    stream = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
    stream.request("GET", f"/api/v1/online/human/{duel.pk}/events", headers={"Cookie": cookies})
    response = stream.getresponse()
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"

    def reply(body: dict) -> int:
        return send_reply(gateway, duel, cookies, token, body)

    seen: list[str] = []
    buffer = b""
    try:
        while "bye" not in seen:
            chunk = response.read1(65536)
            assert chunk, f"the stream ended after {seen}"
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                data = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
                if not data:
                    continue
                message = json.loads(data[0])
                seen.append(message["type"])
                if message["type"] == "end":
                    assert message["view"]["kind"] == "tic_tac_toe"
                if message["type"] == "hello":
                    assert reply({"type": "ready"}) == 202
                elif message["type"] == "act":
                    cell = message["legal_actions"][0]
                    # What the page draws: the board from the person's own observation,
                    # each move with the cell it marks.
                    assert message["choices"][0] == {
                        "action": cell,
                        "text": square_name(cell, 3),  # a1 for cell 0
                        "parts": {"cell": cell},
                    }
                    assert message["view"]["kind"] == "tic_tac_toe"
                    assert message["view"]["board"][cell] == "0"
                    assert message["view"]["you"] == "X"
                    assert message["time_left"]["move"] == 60.0
                    first = message["choices"][0]["action"]
                    assert reply({"type": "action", "id": message["id"], "action": first}) == 202
    finally:
        stream.close()
        playing.join(timeout=60)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    match = duel.matches.get()
    assert not match.faults and match.steps >= 5
    assert seen[:3] == ["welcome", "duel", "hello"] and seen[-2:] == ["end", "bye"]
    assert not RatingChange.objects.exists()


class Events:
    """One stream of the seat's server-sent events, read a message at a time."""

    def __init__(self, gateway: Gateway, duel: Duel, cookies: str, last_id: str = "") -> None:
        self.connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=30)
        headers = {"Cookie": cookies, **({"Last-Event-ID": last_id} if last_id else {})}
        self.connection.request("GET", f"/api/v1/online/human/{duel.pk}/events", headers=headers)
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        self.buffer = b""
        self.last_id = ""

    def next(self) -> dict:
        while True:
            if b"\n\n" in self.buffer:
                block, self.buffer = self.buffer.split(b"\n\n", 1)
                lines = block.split(b"\n")
                data = [line[6:] for line in lines if line.startswith(b"data: ")]
                if data:
                    ids = [line[4:] for line in lines if line.startswith(b"id: ")]
                    self.last_id = ids[0].decode() if ids else self.last_id
                    return json.loads(data[0])
                continue
            chunk = self.response.read1(65536)
            assert chunk, "the stream ended"
            self.buffer += chunk

    def until(self, kind: str) -> list[dict]:
        """Messages up to and including the first of type ``kind``."""
        got = [self.next()]
        while got[-1]["type"] != kind:
            got.append(self.next())
        return got

    def close(self) -> None:
        self.connection.close()


def test_a_page_opened_after_the_first_moves_gets_the_game_so_far_and_plays_on(gateway):
    """A page reloaded in the middle of a game (a stream joined late, on purpose after two
    moves of each side) starts with the duel's whole story, its current request last; a
    stream that resumes after an event it had gets exactly what followed."""
    duel, cookies, token = game_against_rando(gateway)
    playing = refereeing(duel.pk)

    def reply(body: dict) -> int:
        return send_reply(gateway, duel, cookies, token, body)

    def move(request: dict) -> None:
        legal = request["legal_actions"]
        assert reply({"type": "action", "id": request["id"], "action": legal[0]}) == 202

    first = Events(gateway, duel, cookies)
    try:
        assert [m["type"] for m in first.until("hello")] == ["welcome", "duel", "hello"]
        assert reply({"type": "ready"}) == 202
        acts = []
        for _ in range(2):
            acts.append(first.until("act")[-1])
            move(acts[-1])
        pending = first.until("act")[-1]  # the opponent has answered twice: a third request
        resume_after = first.last_id
    finally:
        first.close()

    late = Events(gateway, duel, cookies)
    try:
        story = late.until("act")
        while story[-1]["id"] != pending["id"]:
            story += late.until("act")
        kinds = [message["type"] for message in story]
        assert kinds[:4] == ["welcome", "duel", "hello", "start"]
        assert kinds.count("act") == 3
        assert story[1]["duel"] == duel.pk and story[-1] == pending
        assert [m["id"] for m in story if m["type"] == "act"] == [a["id"] for a in acts] + [
            pending["id"]
        ]
    finally:
        late.close()

    resumed = Events(gateway, duel, cookies, last_id=resume_after)
    try:
        welcome = resumed.next()
        assert welcome["type"] == "welcome" and welcome["after"] == resume_after
        move(pending)
        kinds = []
        while "bye" not in kinds:
            message = resumed.next()
            kinds.append(message["type"])
            if message["type"] == "act":
                move(message)
        assert kinds[-2:] == ["end", "bye"] and "duel" not in kinds and "hello" not in kinds
    finally:
        resumed.close()
        playing.join(timeout=60)

    duel.refresh_from_db()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    assert not duel.matches.get().faults
