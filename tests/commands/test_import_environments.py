from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from core.models import Environment
from core.services.environments import environment_add_openspiel

pytestmark = pytest.mark.django_db

GAMES = [
    "acrobot",
    "cartpole",
    "connect_four",
    "frozen_lake",
    "lowest_unique",
    "mountain_car",
    "quarto",
    "rock_paper_scissors",
    "sum_to_10",
    "tic_tac_toe",
]


def test_it_creates_the_ten_environments() -> None:
    out = io.StringIO()

    call_command("import_environments", stdout=out)

    assert sorted(Environment.objects.values_list("name", flat=True)) == GAMES
    for name in GAMES:
        assert name in out.getvalue()
    assert "Imported 10 environment(s)." in out.getvalue()
    assert Environment.objects.get(name="cartpole").players == 1


def test_it_updates_them_when_run_again() -> None:
    call_command("import_environments", stdout=io.StringIO())
    Environment.objects.filter(name="connect_four").update(matches_per_duel=1, is_active=False)

    call_command("import_environments", stdout=io.StringIO())

    connect_four = Environment.objects.get(name="connect_four")
    assert connect_four.matches_per_duel == 10
    assert not connect_four.is_active  # the organizers' choice stays
    assert Environment.objects.count() == len(GAMES)


def test_it_leaves_the_openspiel_games_alone_and_says_which_no_longer_load() -> None:
    environment_add_openspiel(spec="openspiel:chess", limits={"move_time": 2.0})
    # A game a later open_spiel dropped.
    environment_add_openspiel(spec="openspiel:kuhn_poker", name="gone")
    Environment.objects.filter(name="gone").update(spec="openspiel:no_such_game")
    out = io.StringIO()

    call_command("import_environments", stdout=out)

    assert Environment.objects.get(name="chess").move_time == 2.0
    assert (
        "chess                  openspiel:chess (OpenSpiel, added in the admin)" in out.getvalue()
    )
    assert "gone                   no longer loads: OpenSpiel has no game named" in out.getvalue()
    assert Environment.objects.count() == len(GAMES) + 2


def test_it_refuses_to_overwrite_an_openspiel_game_named_like_a_built_in_one() -> None:
    environment_add_openspiel(spec="openspiel:tic_tac_toe", name="ttt")
    Environment.objects.filter(name="ttt").update(name="tic_tac_toe")

    with pytest.raises(CommandError, match="has the name of the built-in game"):
        call_command("import_environments", stdout=io.StringIO())

    assert Environment.objects.get(name="tic_tac_toe").spec == "openspiel:tic_tac_toe"
