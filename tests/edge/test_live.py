"""Watching a running duel through the real gateway (uvicorn, over loopback): the stream
of server-sent events a duel's page reads, and what it refuses.

The test process stands in for the duel's worker: it stores the referee's events as the
worker's feed does (``LiveEvent`` rows), then the duel's result."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from core.models import Duel, DuelResult, DuelStatus, LiveEvent
from tests.factories import DuelFactory, EnvironmentFactory, MatchFactory, TournamentFactory
from tests.support.gateway import GATEWAY_SETTINGS, Gateway

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live_gateway(celery_workers, shared_gateways, redis_url, settings) -> Gateway:
    return shared_gateways.get(
        celery_workers,
        redis_url,
        settings,
        **GATEWAY_SETTINGS,
        ARENA_LIVE_POLL_SECONDS="0.1",
        ARENA_LIVE_WATCHERS_PER_ADDRESS="2",
    )


def running_duel(*, public: bool = True) -> Duel:
    tournament = TournamentFactory(
        environment=EnvironmentFactory(name="tic_tac_toe"), is_public=public
    )
    return DuelFactory(tournament=tournament, num_matches=1, status=DuelStatus.RUNNING)


def store(duel: Duel, *events: dict[str, Any]) -> LiveEvent:
    return LiveEvent.objects.create(duel=duel, lines="\n".join(json.dumps(e) for e in events))


class Stream:
    """One spectator's connection: its server-sent events, parsed as they come."""

    def __init__(self, gateway: Gateway, duel_id: int, last_event_id: str | None = None):
        self.connection = http.client.HTTPConnection(gateway.host, gateway.port, timeout=60)
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.connection.request("GET", f"/api/v1/online/live/{duel_id}", headers=headers)
        self.response = self.connection.getresponse()
        self.buffer = b""

    def next(self, timeout: float = 10) -> dict[str, Any]:
        """The next event (not a comment or the retry line): its id, kind and data."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n\n" in self.buffer:
                block, self.buffer = self.buffer.split(b"\n\n", 1)
                fields: dict[str, str] = {}
                for line in block.decode().splitlines():
                    name, _, value = line.partition(": ")
                    fields[name] = value
                if "event" in fields:
                    return {
                        "id": fields.get("id"),
                        "event": fields["event"],
                        "data": json.loads(fields["data"]),
                    }
            if time.monotonic() > deadline:
                raise AssertionError(f"no event within {timeout} s")
            try:
                chunk = self.response.read1(65536)
            except TimeoutError:
                continue
            if not chunk:
                raise AssertionError("the stream ended")
            self.buffer += chunk

    def close(self) -> None:
        self.connection.close()


def test_it_shows_each_move_then_the_end_with_the_replays(live_gateway):
    duel = running_duel()
    first = store(
        duel,
        {"type": "match", "match": 0, "seed": 7, "first_player": 1},
        {"type": "step", "match": 0, "step": 0, "actions": [4, None]},
    )
    stream = Stream(live_gateway, duel.pk)
    assert stream.response.status == 200
    assert stream.response.getheader("content-type") == "text/event-stream"

    opening = stream.next()
    assert opening["event"] == "frame" and opening["id"] == str(first.pk)
    assert opening["data"]["status"] == "Match 0, move 1."
    assert opening["data"]["view"]["board"] == "000010000"

    second = store(duel, {"type": "step", "match": 0, "step": 1, "actions": [None, 0]})
    moved = stream.next()
    assert moved["id"] == str(second.pk)
    assert moved["data"]["step"] == 2
    assert moved["data"]["moves"] == [f"{duel.revisions()[1]}: a1"]  # cell 0

    MatchFactory(duel=duel)
    Duel.objects.filter(pk=duel.pk).update(
        status=DuelStatus.SUCCEEDED, result=DuelResult.PLAYER_1_WIN
    )
    LiveEvent.objects.filter(duel=duel).delete()
    end = stream.next()
    assert end["event"] == "end"
    assert end["data"]["result"] == f"{duel.revisions()[0]} won"
    assert end["data"]["replays"] == [{"match": 0, "url": f"/duels/{duel.pk}/matches/0/"}]
    assert [row["match"] for row in end["data"]["results"]] == [0]
    assert stream.response.read() == b""  # and the stream closes
    stream.close()


def test_it_resumes_after_the_last_event_a_client_saw(live_gateway):
    duel = running_duel()
    seen = store(
        duel,
        {"type": "match", "match": 0, "seed": 7, "first_player": 2},
        {"type": "step", "match": 0, "step": 0, "actions": [4, None]},
    )
    missed = store(duel, {"type": "step", "match": 0, "step": 1, "actions": [None, 8]})

    stream = Stream(live_gateway, duel.pk, last_event_id=str(seen.pk))
    resumed = stream.next()
    stream.close()

    # Nothing repeated, nothing lost: the first frame is the move it missed.
    assert resumed["id"] == str(missed.pk)
    assert resumed["data"]["step"] == 2
    assert resumed["data"]["moves"] == [f"{duel.revisions()[0]}: c3"]  # cell 8


def test_it_refuses_a_duel_that_does_not_exist_or_is_not_public(live_gateway):
    private = running_duel(public=False)
    for duel_id in (private.pk, private.pk + 1000):
        status, body, _ = live_gateway.request("GET", f"/api/v1/online/live/{duel_id}")
        assert status == 404
        assert body["error"]["code"] == "not_found"


def test_it_refuses_bad_requests_with_a_json_error(live_gateway):
    duel = running_duel()
    status, body, headers = live_gateway.request("POST", f"/api/v1/online/live/{duel.pk}")
    assert (status, body["error"]["code"], headers["allow"]) == (405, "method_not_allowed", "GET")
    status, body, _ = live_gateway.request(
        "GET", f"/api/v1/online/live/{duel.pk}", headers={"Last-Event-ID": "1; drop"}
    )
    assert (status, body["error"]["code"]) == (400, "bad_request")


def test_it_refuses_more_watchers_from_one_address_than_allowed(live_gateway):
    duel = running_duel()
    held = [Stream(live_gateway, duel.pk) for _ in range(2)]
    for stream in held:
        assert stream.next()["event"] == "frame"

    status, body, _ = live_gateway.request("GET", f"/api/v1/online/live/{duel.pk}")
    assert status == 429 and body["error"]["code"] == "too_many_watchers"

    held.pop().close()
    deadline = time.monotonic() + 10
    while live_gateway.request("GET", f"/api/v1/online/live/{duel.pk + 1000}")[0] == 429:
        assert time.monotonic() < deadline, "a closed stream's place was never freed"
        time.sleep(0.1)
    for stream in held:
        stream.close()
