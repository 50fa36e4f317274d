"""The evidence behind a rating counts distinct matches: a match identical to an earlier
one of its duel (the same seats, the same actions) is rated once, and the leaderboard and
the competitor page count it once."""

from __future__ import annotations

import pytest

from core.models import (
    DuelResult,
    Environment,
    LeaderboardEntry,
    RatedPairing,
    RatingChange,
    Revision,
    Tournament,
)
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EnvironmentFactory,
    MatchFactory,
    RevisionFactory,
    TournamentFactory,
)
from tournament_manager.leaderboard import leaderboard_refit
from tournament_manager.ratings import ratings_update_from_duel

pytestmark = pytest.mark.django_db

#: Two tic-tac-toe matches, each a real one: X takes the top row while O answers below.
TOP_ROW = [[0, None], [None, 3], [1, None], [None, 4], [2, None]]
LEFT_COLUMN = [[0, None], [None, 1], [3, None], [None, 2], [6, None]]


@pytest.fixture
def environment() -> Environment:
    return EnvironmentFactory()


@pytest.fixture
def tournament(environment: Environment) -> Tournament:
    return TournamentFactory(environment=environment)


def agent(environment: Environment, name: str) -> Revision:
    return RevisionFactory(
        competitor=CompetitorFactory(environment=environment, name=name, is_public=True),
        validated=True,
    )


def duel_of(tournament: Tournament, one: Revision, two: Revision, matches: list) -> None:
    """A finished duel of these (seats, actions) matches, seat 1 winning each, rated."""
    duel = DuelFactory(
        tournament=tournament, revisions=[one, two], finished=True, num_matches=len(matches)
    )
    for seats, actions in matches:
        winner = seats[0]
        MatchFactory(
            duel=duel,
            seats=seats,
            first_player=seats[0],
            actions=actions,
            scores=[1.0, 0.0] if winner == 1 else [0.0, 1.0],
            result=DuelResult.PLAYER_1_WIN if winner == 1 else DuelResult.PLAYER_2_WIN,
        )
    ratings_update_from_duel(duel=duel)


def test_identical_matches_of_a_duel_are_rated_and_counted_once(environment, tournament, client):
    one, two = agent(environment, "repeater"), agent(environment, "echo")
    duel_of(
        tournament,
        one,
        two,
        [
            ([1, 2], TOP_ROW),
            ([2, 1], TOP_ROW),  # the same moves, the other seats: another match
            ([1, 2], TOP_ROW),  # match 0 again
            ([1, 2], LEFT_COLUMN),
            ([2, 1], TOP_ROW),  # match 1 again
        ],
    )

    assert RatingChange.objects.filter(reason="match").count() == 3 * 2
    assert sum(RatedPairing.objects.values_list("games", flat=True)) == 3
    assert leaderboard_refit(environment=environment)
    entry = LeaderboardEntry.objects.get(competitor=one.competitor)
    assert (entry.matches, entry.wins, entry.losses) == (3, 2, 1)
    # What the site shows as the evidence behind the rating.
    leaderboard = client.get(f"/environments/{environment.name}/leaderboard/").content.decode()
    assert '<td class="num">3</td>' in leaderboard
    assert '<td class="num">5</td>' not in leaderboard
    page = client.get(one.competitor.get_absolute_url()).content.decode()
    assert "3 matches, 2-0-1" in page


def test_matches_of_two_duels_alike_both_count(environment, tournament):
    one, two = agent(environment, "steady"), agent(environment, "rival")
    # Only a duel's own repeats count once: another duel is other evidence (a new revision
    # of the same code, another day's machine).
    duel_of(tournament, one, two, [([1, 2], TOP_ROW)])
    duel_of(tournament, one, two, [([1, 2], TOP_ROW)])

    assert leaderboard_refit(environment=environment)
    assert LeaderboardEntry.objects.get(competitor=one.competitor).matches == 2
