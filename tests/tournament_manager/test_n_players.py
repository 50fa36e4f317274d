"""A tournament of a game of four players from the site's pipeline: five agents uploaded,
built and validated, a round robin over every group of four, ratings for all, standings,
the tournament, duel and replay pages and the REST API."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import transaction

from core.errors import ArenaError
from core.models import (
    Duel,
    DuelResult,
    DuelStatus,
    Environment,
    LeaderboardEntry,
    Match,
    Rating,
    RatingChange,
    TournamentFormat,
    TournamentStatus,
)
from core.services.environments import environment_add_openspiel
from environments.base import replay, shares_beaten
from environments.openspiel.adapter import OpenSpielEnvironment
from environments.registry import make_environment
from referee.results import ranks_from_scores, seat_rotation
from tests.pipeline import PLAYERS, make_user, pipeline, upload  # noqa: F401
from tournament_manager.daemon import run_once
from tournament_manager.leaderboard import leaderboard_refit
from tournament_manager.services.round_robin import round_robin_groups
from tournament_manager.services.tournaments import tournament_create, tournament_launch

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("pipeline"),
    pytest.mark.slow,
]

GAME = "lowest_unique"


def field_of_five():
    owner = make_user()
    players = [("bidder", "low_bidder.py")] + [
        (f"rando-{number}", "random_player.py") for number in range(1, 5)
    ]
    revisions = [upload(owner, GAME, name, PLAYERS / GAME / file) for name, file in players]
    assert all(revision.is_valid for revision in revisions), [
        revision.job("validation").log for revision in revisions
    ]
    return revisions


def launch(revisions, **fields):
    with transaction.atomic():
        tournament = tournament_create(
            environment=Environment.objects.get(name=GAME),
            name="Four-player cup",
            revisions=revisions,
            matches_per_duel=4,
            **fields,
        )
        tournament_launch(tournament=tournament)
    tournament.refresh_from_db()
    return tournament


def test_it_plays_a_round_robin_over_every_group_of_four_and_rates_all_four(client):
    revisions = field_of_five()

    tournament = launch(revisions)

    assert tournament.status == TournamentStatus.COMPLETED, tournament.error
    # C(5, 4) groups: each agent plays 4 duels, every two agents meet in 3.
    assert (tournament.duels_total, tournament.duels_done, tournament.duels_failed) == (5, 5, 0)
    duels = list(tournament.duels.order_by("pk"))
    plays = Counter(revision.pk for duel in duels for revision in duel.revisions())
    assert plays == dict.fromkeys((revision.pk for revision in revisions), 4)
    for duel in duels:
        assert duel.status == DuelStatus.SUCCEEDED
        assert duel.num_players == 4
        assert duel.result in (DuelResult.RANKED, DuelResult.DRAW)
        matches = list(duel.matches.order_by("index"))
        assert [match.seats for match in matches] == [seat_rotation(4, i) for i in range(4)]
        # Each match's scores are each player's share of the others beaten: they sum to 2.
        assert all(sum(match.scores) == pytest.approx(2.0) for match in matches)
        assert sum(player.score for player in duel.players()) == pytest.approx(8.0)

    # Every match rated all four of its players, each change logged.
    assert Match.objects.filter(duel__tournament=tournament).count() == 20
    assert RatingChange.objects.filter(reason="match").count() == 20 * 4
    ratings = Rating.objects.filter(competitor__in=[r.competitor for r in revisions])
    assert sorted(rating.games for rating in ratings) == [16] * 5
    assert all(rating.sigma < 25 / 3 for rating in ratings)

    # The published leaderboard fits each match as a game between each two of its players,
    # and shows each player's matches as it played them: 4 duels of 4 matches, as rated.
    environment = Environment.objects.get(name=GAME)
    assert leaderboard_refit(environment=environment, force=True)
    entries = list(LeaderboardEntry.objects.filter(environment=environment))
    assert len(entries) == 5
    assert all(entry.matches == 4 * 4 for entry in entries)
    assert all(entry.wins + entry.draws + entry.losses == entry.matches for entry in entries)

    # Standings: each duel counts as the six duels between its players, 2 points each.
    standings = list(tournament.participants.order_by("rank", "pk"))
    assert sum(participant.points for participant in standings) == 5 * 6 * 2
    assert standings[0].rank == 1
    assert all(p.wins + p.draws + p.losses == 4 * 3 for p in standings)

    page = client.get(tournament.get_absolute_url())
    assert page.status_code == 200
    assert "Players 2 to 4" in page.content.decode()
    duel = duels[0]
    duel_page = client.get(duel.get_absolute_url()).content.decode()
    for revision in duel.revisions():
        assert str(revision) in duel_page
    replay = client.get(duel.matches.get(index=1).get_absolute_url())
    assert replay.status_code == 200
    html = replay.content.decode()
    assert 'class="lowest-unique"' in html
    assert html.count('class="seat-number"') == 4
    assert "Round" in html and "Points" in html

    document = client.get(f"/api/v1/duels/{duel.pk}").json()
    assert document["num_players"] == 4
    assert [player["number"] for player in document["players"]] == [1, 2, 3, 4]
    assert {player["rank"] for player in document["players"]} >= {1}
    matches = client.get(f"/api/v1/duels/{duel.pk}/matches").json()
    first = matches["items"][0] if isinstance(matches, dict) else matches[0]
    assert first["seats"] == [1, 2, 3, 4]
    assert len(first["scores"]) == 4


def test_it_validates_each_upload_with_a_copy_in_every_seat_and_replays_it(client):
    bidder = field_of_five()[0]

    validation = Duel.objects.of_revision(bidder).get(is_validation=True)

    assert validation.num_players == 4
    assert validation.revisions() == [bidder] * 4
    assert all(len(match.seats) == 4 for match in validation.matches.all())
    page = client.get(validation.get_absolute_url())
    assert page.status_code == 200
    assert f"{bidder} (player 4)" in page.content.decode()
    replay = client.get(validation.matches.get(index=3).get_absolute_url())
    assert replay.status_code == 200
    assert replay.content.decode().count('class="seat-number"') == 4


def test_it_refuses_a_swiss_tournament_of_a_game_of_four_with_a_clear_error():
    revisions = field_of_five()

    with pytest.raises(ArenaError, match=r"Swiss pairs two players.*round robin or a ladder"):
        launch(revisions, format=TournamentFormat.SWISS, rounds=2)


def test_it_refuses_a_round_robin_of_fewer_participants_than_seats():
    revisions = field_of_five()[:3]

    with pytest.raises(ArenaError, match="needs at least 4 participants"):
        launch(revisions)


def test_it_schedules_every_group_once_with_seat_1_turning():
    groups = round_robin_groups([1, 2, 3, 4, 5, 6], 4)

    assert len(groups) == 15
    assert len({frozenset(group) for group in groups}) == 15
    # Any two participants meet in C(4, 2) = 6 groups.
    pairs = Counter(frozenset((a, b)) for g in groups for a in g for b in g if a < b)
    assert set(pairs.values()) == {6}
    firsts = Counter(group[0] for group in groups)
    assert max(firsts.values()) - min(firsts.values()) <= 1
    assert round_robin_groups([1, 2, 3], 2) == [(1, 2), (1, 3), (2, 3)]
    with pytest.raises(ArenaError, match="play a ladder instead"):
        round_robin_groups(list(range(40)), 4)


def test_a_ladder_matches_groups_of_four_rates_them_and_ranks_every_entry(settings):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    revisions = field_of_five()
    with transaction.atomic():
        ladder = tournament_create(
            environment=Environment.objects.get(name=GAME),
            name="Four-player ladder",
            revisions=[],
            format=TournamentFormat.LADDER,
        )
        tournament_launch(tournament=ladder)

    assert run_once()  # one group of four, played in this process
    assert run_once()  # the one left out waited longest: it anchors the next group

    duels = list(ladder.duels.order_by("pk"))
    assert len(duels) == 2
    assert all(duel.status == DuelStatus.SUCCEEDED and duel.num_players == 4 for duel in duels)
    # Four matches a duel (info.yml): each player sits in each seat once.
    assert all(duel.num_matches == 4 for duel in duels)
    played = Counter(revision.pk for duel in duels for revision in duel.revisions())
    assert set(played) == {revision.pk for revision in revisions}
    for revision in revisions:
        assert Rating.objects.get(competitor=revision.competitor).games == 4 * played[revision.pk]
    ranks = list(ladder.participants.values_list("rank", flat=True))
    assert None not in ranks and min(rank for rank in ranks if rank is not None) == 1


def test_an_openspiel_game_of_three_plays_a_duel_stored_with_each_seats_rank(client):
    # The organizer chose three seats for Kuhn poker: the spec carries the count.
    environment = environment_add_openspiel(spec="openspiel:kuhn_poker", players=3)
    assert (environment.spec, environment.players) == ("openspiel:kuhn_poker(players=3)", 3)
    owner = make_user()
    random_player = PLAYERS / "openspiel" / "random_player.py"
    revisions = [
        upload(owner, environment.name, f"random-{number}", random_player) for number in (1, 2, 3)
    ]
    assert all(revision.is_valid for revision in revisions), [
        revision.job("validation").log for revision in revisions
    ]
    with transaction.atomic():
        tournament = tournament_create(
            environment=environment, name="Kuhn of three", revisions=revisions, matches_per_duel=6
        )
        tournament_launch(tournament=tournament)
    tournament.refresh_from_db()

    assert tournament.status == TournamentStatus.COMPLETED, tournament.error
    duel = tournament.duels.get()
    assert duel.status == DuelStatus.SUCCEEDED, duel.error
    assert duel.num_players == 3
    seats = duel.players()
    scores = [seat.score for seat in seats]
    # Each seat is stored with its rank by total score, equal totals sharing one.
    assert [seat.rank for seat in seats] == ranks_from_scores(scores)
    expected = DuelResult.DRAW if len(set(scores)) == 1 else DuelResult.RANKED
    assert duel.result == expected
    matches = list(duel.matches.order_by("index"))
    assert [match.seats for match in matches] == [seat_rotation(3, i) for i in range(6)]
    for match in matches:
        # The match replays from its seed and moves to OpenSpiel's returns, which its
        # scores rank: each player's share of the others whose return it beat.
        game = make_environment(environment.game)
        assert isinstance(game, OpenSpielEnvironment)
        replay(game, match.seed, match.actions)
        returns = dict(zip(match.seats, game.returns(), strict=True))
        assert match.scores == shares_beaten([returns[number] for number in (1, 2, 3)])
    assert scores == pytest.approx(
        [sum(match.scores[number] for match in matches) for number in range(3)]
    )

    replay_page = client.get(matches[0].get_absolute_url()).content.decode()
    assert replay_page.count('class="seat-number"') == 3
    assert "Player 3 to move" in replay_page and "Over:" in replay_page
    document = client.get(f"/api/v1/duels/{duel.pk}").json()
    assert [player["rank"] for player in document["players"]] == [seat.rank for seat in seats]
