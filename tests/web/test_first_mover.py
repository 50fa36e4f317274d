"""Who moves first is the game's to say, on every page (issue 26: in chess OpenSpiel's
first seat is Black, so White, the second seat, opens; backgammon's opening roll decides;
a game of simultaneous moves has no first mover)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Duel, DuelResult, Environment, Match, User
from core.services.environments import environment_add_openspiel
from core.services.human import human_game_create
from environments.registry import make_environment
from reads.replays import first_mover
from tests.factories import DuelFactory, RevisionFactory, TournamentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_game_names_its_first_mover():
    def first(game: str, seed: int) -> int | None:
        return first_mover(make_environment(game, players=2), seed)

    assert first("openspiel:chess", 1) == 1  # White
    assert first("tic_tac_toe", 1) == 0
    assert first("rock_paper_scissors", 1) is None  # at once
    # Backgammon: whoever the opening roll favours, which the seed decides.
    assert {first("openspiel:backgammon", seed) for seed in range(1, 9)} == {0, 1}
    assert first_mover(None, 1) is None  # a game no longer installed
    # Games of more seats: leduc poker of four opens with its first seat after the deal.
    poker = make_environment("openspiel:leduc_poker(players=4)", players=4)
    assert {first_mover(poker, seed) for seed in range(1, 9)} == {0}
    assert first_mover(make_environment("openspiel:chinese_checkers(players=3)"), 1) == 0


def chess_duel() -> tuple[Duel, Match]:
    chess = environment_add_openspiel(spec="openspiel:chess")
    duel = DuelFactory(tournament=TournamentFactory(environment=chess), finished=True)
    duel.seats.update(score=0.5, rank=1)
    match = Match.objects.create(
        duel=duel, index=0, first_player=1, seats=[1, 2], scores=[0.5, 0.5], seed=7,
        result=DuelResult.DRAW,
    )  # fmt: skip
    return duel, match


def test_a_chess_duel_and_its_replay_say_white_moves_first(client):
    duel, match = chess_duel()
    black, white = (str(revision) for revision in duel.revisions())

    page = client.get(duel.get_absolute_url()).content.decode()
    replay = client.get(match.get_absolute_url()).content.decode()

    # The duel page's "First to move" column: the player in the second seat, White.
    row = page[page.index("First to move") :]
    row = row[row.index("<tbody") :]
    assert row.index(white) < row.index("Draw") and black not in row[: row.index("Draw")]
    # The replay's list of seats marks the second one.
    seats = replay[replay.index("Seat 1") : replay.index("</ul>", replay.index("Seat 1"))]
    assert seats.index("moves first") > seats.index("Seat 2")


def play_page(user: User, environment: Environment, side: str = "first") -> str:
    opponent = RevisionFactory(validated=True, competitor__environment=environment)
    duel = human_game_create(user=user, opponent=opponent, side=side)
    client = Client()
    client.force_login(user)
    return client.get(reverse("play", args=[duel.pk])).content.decode()


def test_a_person_is_told_who_opens_as_the_game_says_on_the_side_they_chose():
    chess = environment_add_openspiel(spec="openspiel:chess")
    tic_tac_toe = RevisionFactory(validated=True).competitor.environment

    # Moving second in chess is playing Black: the agent, White, opens.
    as_black = play_page(UserFactory(), chess, side="second")
    as_white = play_page(UserFactory(), chess, side="first")
    against_tic_tac_toe = play_page(UserFactory(), tic_tac_toe)

    assert "moves first" in as_black and "you move first" not in as_black
    assert "you move first" in as_white
    assert "you move first" in against_tic_tac_toe
