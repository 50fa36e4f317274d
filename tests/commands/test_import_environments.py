from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from core.models import Environment

pytestmark = pytest.mark.django_db

GAMES = [
    "connect_four",
    "lowest_unique",
    "quarto",
    "rock_paper_scissors",
    "sum_to_10",
    "tic_tac_toe",
]


def test_it_creates_the_six_environments() -> None:
    out = io.StringIO()

    call_command("import_environments", stdout=out)

    assert sorted(Environment.objects.values_list("name", flat=True)) == GAMES
    for name in GAMES:
        assert name in out.getvalue()
    assert "Imported 6 environment(s)." in out.getvalue()


def test_it_updates_them_when_run_again() -> None:
    call_command("import_environments", stdout=io.StringIO())
    Environment.objects.filter(name="connect_four").update(matches_per_duel=1, is_active=False)

    call_command("import_environments", stdout=io.StringIO())

    connect_four = Environment.objects.get(name="connect_four")
    assert connect_four.matches_per_duel == 10
    assert not connect_four.is_active  # the organizers' choice stays
    assert Environment.objects.count() == 6
