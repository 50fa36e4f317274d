"""An organizer adds OpenSpiel games from the admin; reference random players are built,
validated and play a tournament of them from the site, with replays that render."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.models import (
    DuelStatus,
    Environment,
    Match,
    Revision,
    StepStatus,
    Tournament,
    TournamentStatus,
    User,
)
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create
from tests.factories import ParticipantFactory, TournamentFactory

pytestmark = pytest.mark.django_db

RANDOM_PLAYER = Path(__file__).resolve().parents[2] / "example_players/openspiel/random_player.py"
ADD = reverse("admin:core_environment_add")


def add_game(client: Client, spec: str, **fields: object) -> Any:
    return client.post(ADD, {"spec": spec, **fields})


#: Tells, in its log, the game and the limits the referee gave it.
LIMITS_ECHO = b"""
import sys
from arena_sdk import Agent, run

class Echo(Agent):
    def start(self, match):
        print("playing", match.environment, "with", match.limits, file=sys.stderr, flush=True)

    def act(self, turn):
        return turn.legal_actions[0]

run(Echo())
"""


def upload_random(
    owner: User, environment: Environment, capture: Callable, content: bytes | None = None
) -> Revision:
    competitor = competitor_get_or_create(
        owner=owner, environment=environment, name=f"{owner.display_name}-random"
    )
    with capture(execute=True):
        revision = revision_create(
            competitor=competitor,
            uploaded_by=owner,
            filename="main.py",
            content=content or RANDOM_PLAYER.read_bytes(),
        )
    revision.refresh_from_db()
    return revision


def test_the_organizer_adds_chess_and_leduc_poker_with_their_limits(
    organizer_client: Client,
) -> None:
    changelist = organizer_client.get(reverse("admin:core_environment_changelist"))
    form = organizer_client.get(ADD).content.decode()
    assert ADD in changelist.content.decode()
    assert 'name="spec"' in form and 'name="move_time"' in form
    assert "openspiel:go(board_size=9)" in form

    chess = add_game(organizer_client, "openspiel:chess")
    poker = add_game(
        organizer_client, "openspiel:leduc_poker", name="leduc", matches_per_duel=6, move_time=0.5
    )

    assert chess.status_code == poker.status_code == 302
    chess_row = Environment.objects.get(spec="openspiel:chess")
    poker_row = Environment.objects.get(spec="openspiel:leduc_poker")
    assert (chess_row.name, chess_row.title, chess_row.players) == ("chess", "Chess", 2)
    assert (chess_row.matches_per_duel, chess_row.time_bank) == (4, 60)
    assert (poker_row.name, poker_row.matches_per_duel, poker_row.move_time) == ("leduc", 6, 0.5)
    assert poker_row.validation_matches == 4
    assert "Fold, Call and Raise" in poker_row.rules
    page = organizer_client.get(reverse("environment", args=["chess"])).content.decode()
    assert "openspiel:chess" in page
    assert reverse("environment", args=["leduc"]) in organizer_client.get("/").content.decode()
    api = organizer_client.get("/api/v1/environments/leduc").json()
    assert api["spec"] == "openspiel:leduc_poker"


@pytest.mark.parametrize(
    ("spec", "fields", "message"),
    [
        ("openspiel:chesss", {}, "OpenSpiel has no game named 'chesss'; did you mean chess"),
        ("openspiel:go(board_size=nine)", {}, "'board_size' must be int, got 'nine'"),
        ("openspiel:leduc_poker(players=7)", {}, "it has 7 player(s)"),
        ("openspiel:kuhn_poker", {"players": "7"}, "Arena seats 2 to 6 players in a duel, not 7"),
        (
            "openspiel:liars_dice",
            {"players": "3"},
            "OpenSpiel's liars_dice is played by exactly 2 players, not 3",
        ),
        (
            "openspiel:kuhn_poker(players=4)",
            {"players": "3"},
            "the spec sets players=4 and the seats are 3: give the number of players once",
        ),
        ("openspiel:universal_poker", {"players": "3"}, "OpenSpiel crashed setting up"),
        ("tic_tac_toe", {}, "an OpenSpiel spec starts with 'openspiel:'"),
        ("openspiel:tic_tac_toe", {}, "'tic_tac_toe' is the name of a built-in game"),
        ("openspiel:chess", {"move_time": "0"}, "Ensure this value is greater than or equal"),
    ],
)
def test_it_shows_why_a_spec_is_refused_and_adds_nothing(
    organizer_client: Client, spec: str, fields: dict[str, str], message: str
) -> None:
    environments_import()
    before = Environment.objects.count()

    response = add_game(organizer_client, spec, **fields)

    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    assert Environment.objects.count() == before


def test_the_organizer_chooses_the_seats_of_a_game_that_takes_more_players(
    organizer_client: Client,
) -> None:
    form = organizer_client.get(ADD).content.decode()
    assert 'name="players"' in form and "Seats" in form

    four = add_game(organizer_client, "openspiel:leduc_poker", players=4)
    two = add_game(organizer_client, "openspiel:leduc_poker")

    assert four.status_code == two.status_code == 302
    row = Environment.objects.get(spec="openspiel:leduc_poker(players=4)")
    assert (row.name, row.players, row.title) == (
        "leduc_poker_players_4",
        4,
        "Leduc poker (players=4)",
    )
    assert Environment.objects.get(spec="openspiel:leduc_poker").players == 2
    home = organizer_client.get("/").content.decode()
    assert "· 4 players" in home and "· 2 players" in home


def test_it_refuses_a_game_that_is_already_there(organizer_client: Client) -> None:
    add_game(organizer_client, "openspiel:go(board_size=9)")

    again = add_game(organizer_client, "openspiel:go( board_size = 9 )", name="go9")

    assert "The game is already an environment: go_board_size_9" in html.unescape(
        again.content.decode()
    )
    assert Environment.objects.filter(spec__startswith="openspiel:go").count() == 1


def test_an_openspiel_games_limits_are_edited_and_a_built_in_games_are_not(
    organizer_client: Client,
) -> None:
    environments_import()
    add_game(organizer_client, "openspiel:leduc_poker")
    poker = Environment.objects.get(spec="openspiel:leduc_poker")
    change = reverse("admin:core_environment_change", args=[poker.pk])

    sum_to_10 = Environment.objects.get(name="sum_to_10")
    form = organizer_client.get(change).content.decode()
    built_in = organizer_client.get(
        reverse("admin:core_environment_change", args=[sum_to_10.pk])
    ).content.decode()

    assert 'name="move_time"' in form
    assert 'name="spec"' not in form  # the game is fixed once added
    assert 'name="move_time"' not in built_in


def test_agents_play_with_the_limits_the_organizer_set(
    organizer_client: Client, alice: User, django_capture_on_commit_callbacks: Callable
) -> None:
    add_game(organizer_client, "openspiel:kuhn_poker", move_time=0.75, time_bank=3)
    poker = Environment.objects.get(spec="openspiel:kuhn_poker")
    poker.validation_matches = 2
    poker.save()
    change = reverse("admin:core_environment_change", args=[poker.pk])
    edited = {"name": "kuhn", "title": "Kuhn", "is_active": "on", "move_time": 0.5, "time_bank": 2}
    fields = ("matches_per_duel", "ladder_matches_per_duel", "validation_matches", "startup_time")
    edited |= {field: getattr(poker, field) for field in fields}
    edited |= {"memory_mb": 300, "cpu_seconds": 100}
    refused = organizer_client.post(change, {**edited, "name": "tic_tac_toe"})
    assert "'tic_tac_toe' is the name of a built-in game." in html.unescape(
        refused.content.decode()
    )
    assert organizer_client.post(change, edited).status_code == 302
    poker.refresh_from_db()
    assert (poker.name, poker.spec, poker.move_time) == ("kuhn", "openspiel:kuhn_poker", 0.5)

    revision = upload_random(alice, poker, django_capture_on_commit_callbacks, LIMITS_ECHO)

    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").log
    assert "validated: 2 self-play matches" in revision.job("validation").log
    assert "playing openspiel:kuhn_poker with" in revision.job("validation").log
    assert "'move_time': 0.5, 'time_bank': 2.0" in revision.job("validation").log
    assert "'memory_mb': 300" in revision.job("validation").log


@pytest.mark.parametrize("spec", ["openspiel:chess", "openspiel:leduc_poker"])
def test_random_players_validate_and_play_a_tournament_with_replays(
    organizer_client: Client,
    client: Client,
    alice: User,
    bob: User,
    spec: str,
    run_action: Callable[..., list[str]],
    django_capture_on_commit_callbacks: Callable,
) -> None:
    add_game(organizer_client, spec, matches_per_duel=2)
    environment = Environment.objects.get(spec=spec)
    players = [
        upload_random(alice, environment, django_capture_on_commit_callbacks),
        upload_random(bob, environment, django_capture_on_commit_callbacks),
    ]
    for revision in players:
        assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").log

    tournament = TournamentFactory(environment=environment, matches_per_duel=2)
    for revision in players:
        ParticipantFactory(tournament=tournament, revision=revision)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_action(Tournament, "launch", [tournament])[-1] == "Launched: 1"
    tournament.refresh_from_db()

    assert tournament.status == TournamentStatus.COMPLETED
    duel = tournament.duels.get()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    assert [seat.errors for seat in duel.players()] == [0, 0]
    matches = list(Match.objects.filter(duel=duel).order_by("index"))
    assert len(matches) == 2
    for match in matches:
        page = client.get(match.get_absolute_url())
        text = page.content.decode()
        assert page.status_code == 200
        assert 'class="openspiel openspiel-' in text
        assert "Over:" in text
        assert "no longer replay" not in text
        found = re.search(r'<script id="replay-views"[^>]*>(.*?)</script>', text, re.S)
        assert found, "no views on the page"
        views = json.loads(found.group(1))
        assert len(views) == match.steps + 1
        # Drawn in the browser by the game's drawer: a chess position, a leduc table.
        assert {view["kind"] for view in views} == {
            "openspiel:chess": {"chess"},
            "openspiel:leduc_poker": {"leduc"},
        }[spec]
        # The move list names each move as OpenSpiel does (e4, Raise), not by its object.
        moves = re.findall(r'<code class="move-action">(.*?)</code>', html.unescape(text))
        texts = [action["text"] for step in match.actions for action in step if action]
        assert moves == texts
    for asset in ("openspiel.css", "openspiel.js"):
        served = client.get(reverse("environment_static", args=[environment.name, asset]))
        assert served.status_code == 200


def test_only_an_organizer_adds_a_game(client: Client, alice: User) -> None:
    alice.is_staff = True
    alice.save()
    client.force_login(alice)

    response = add_game(client, "openspiel:chess")

    assert response.status_code in (302, 403)
    assert not Environment.objects.filter(spec="openspiel:chess").exists()
