"""A person's game in the browser, as the edge tests drive it: the referee's side stood in
for on the in-process seat bus, and a logged-in browser with its CSRF token."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Duel
from core.services.online import seat_bus


@pytest.fixture
def in_process_bus(settings: Any) -> None:
    """The seat bus of this process (no Redis), and tasks sent, not run: the test plays the
    referee's side itself."""
    settings.ARENA_ONLINE_BUS_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = False


ACT = {
    "type": "act",
    "id": 3,
    "match": 0,
    "step": 0,
    "observation": {"board": [0] * 9, "mark": 1},
    "legal_actions": [0, 1, 2, 3, 4, 5, 6, 7, 8],
    "time_left": {"move": 60.0, "bank": 300.0},
}


def bus_seat(duel: Duel) -> str:
    """The game's own seat on the bus: the person's competitor's, in this duel."""
    person = next(seat for seat in duel.players() if seat.revision.competitor.is_human)
    return person.revision.competitor.seat_in(duel.pk)


def asked(duel: Duel) -> None:
    seat = bus_seat(duel)
    bus = seat_bus()
    bus.seat_open(seat, duel=duel.pk, announcement=b'{"type":"duel"}')
    bus.publish(seat, json.dumps(ACT).encode(), awaits="act:3")


def browser(user) -> tuple[Client, str]:
    """A logged-in browser with the CSRF token its page gives it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(reverse("home"))
    token = client.cookies.get("csrftoken")
    if token is None:
        page = client.get(reverse("profile"))
        assert page.status_code == 200
        token = client.cookies["csrftoken"]
    return client, token.value


def reply(client: Client, duel: Duel, body: dict, token: str | None) -> tuple[int, dict]:
    headers: dict[str, Any] = {"HTTP_X_CSRFTOKEN": token} if token else {}
    response = client.post(
        reverse("human_reply", args=[duel.pk]),
        data=json.dumps(body),
        content_type="application/json",
        **headers,
    )
    return response.status_code, response.json()
