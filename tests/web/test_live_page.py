"""A duel's page offers the live view while the duel is played, to everyone when its
replays are public; the stream itself is tested in tests/edge/test_live.py and in a
browser in tests/browser/test_live.py."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Duel, DuelStatus
from reads.live import LiveDuel, Spectator, live_duel

pytestmark = pytest.mark.django_db


def test_it_offers_the_live_view_of_a_running_public_duel_instead_of_reloading(client, duel):
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, result="")

    page = client.get(reverse("duel", args=[duel.pk])).content.decode()

    assert f'data-live-url="/api/v1/online/live/{duel.pk}"' in page
    assert "web/live.js" in page
    assert '<noscript><meta http-equiv="refresh"' in page
    assert "environments/tic_tac_toe/static/" in page  # the board's stylesheet


def test_it_offers_no_live_view_of_a_finished_or_private_duel(client, duel, organizer):
    assert "data-live-url" not in client.get(reverse("duel", args=[duel.pk])).content.decode()

    duel.tournament.is_public = False
    duel.tournament.save()
    Duel.objects.filter(pk=duel.pk).update(status=DuelStatus.RUNNING, result="")
    client.force_login(organizer)
    page = client.get(reverse("duel", args=[duel.pk])).content.decode()
    assert "data-live-url" not in page
    assert '<meta http-equiv="refresh" content="5">' in page
    assert live_duel(duel.pk) is None


def test_it_conceals_a_running_match_of_a_game_with_hidden_information(duel):
    live = live_duel(duel.pk)
    assert live is not None
    spectator = Spectator(live)
    spectator.hidden = True
    spectator.take(
        [
            {"type": "match", "match": 0, "seed": 1, "first_player": 1},
            {"type": "step", "match": 0, "step": 0, "actions": [4, None]},
        ]
    )
    running = spectator.frame()
    assert running["view"] is None and running["moves"] == []
    assert "hidden information" in running["status"]

    frames = spectator.take(
        [{"type": "match_end", "match": 0, "result": "PLAYER_1_WIN", "scores": [1, 0]}]
    )
    assert frames[-1]["view"]["board"] == "000010000"  # over: as public as its replay
    assert frames[-1]["results"] == [{"match": 0, "result": f"{duel.revisions()[0]} won"}]


def test_it_offers_a_logged_in_visitor_to_play_a_validated_agent(client, bob, bobs_bot, carol):
    page = reverse("competitor", args=[bobs_bot.environment.name, bobs_bot.name])
    assert "Play against bobs-bot" not in client.get(page).content.decode()

    client.force_login(carol)
    assert "Play against bobs-bot" in client.get(page).content.decode()


@pytest.mark.parametrize(
    ("spec", "players"), [("openspiel:leduc_poker", 2), ("openspiel:leduc_poker(players=4)", 4)]
)
def test_it_shows_a_running_poker_match_only_once_it_is_over(spec, players):
    from environments.registry import make_environment

    environment = make_environment(spec, players=players)
    assert environment.hidden_information
    assert not make_environment("openspiel:tic_tac_toe").hidden_information
    environment.reset(3)
    seat = environment.to_move()[0]
    action = environment.legal_actions(seat)[0]
    spectator = Spectator(
        LiveDuel(
            pk=1,
            environment=spec,
            players=players,
            labels={number: f"p{number}" for number in range(1, players + 1)},
            url="/",
        )
    )
    [running] = spectator.take(
        [
            {"type": "match", "match": 0, "seed": 3, "first_player": 1},
            {
                "type": "step",
                "match": 0,
                "step": 0,
                "actions": [action if index == seat else None for index in range(players)],
            },
        ]
    )
    assert running["view"] is None and running["moves"] == []


def test_it_names_every_player_of_a_game_of_four_by_the_seat_they_sit_in():
    labels = {1: "ann", 2: "bob", 3: "cy", 4: "dee"}
    spectator = Spectator(
        LiveDuel(pk=1, environment="lowest_unique", players=4, labels=labels, url="/")
    )
    [frame] = spectator.take(
        [
            # Match 1 of the rotation: player 2 in seat 0, ..., player 1 in seat 3.
            {"type": "match", "match": 1, "seed": 4, "first_player": 2, "seats": [2, 3, 4, 1]},
            {"type": "step", "match": 1, "step": 0, "actions": [1, 2, 3, 4]},
            {
                "type": "match_end",
                "match": 1,
                "result": "RANKED",
                "scores": [0.0, 1.0, 2 / 3, 1 / 3],
                "ranks": [4, 1, 2, 3],
                "reason": "",
            },
        ]
    )

    assert frame["moves"] == ["bob: 1", "cy: 2", "dee: 3", "ann: 4"]
    assert frame["results"] == [{"match": 1, "result": "bob first"}]
    assert "lowest-unique" in frame["view"]["html"]
