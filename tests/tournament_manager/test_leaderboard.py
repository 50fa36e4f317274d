"""The published leaderboard: fitted to every rated match of the current revisions."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.utils import timezone

from core.models import (
    Competitor,
    DuelResult,
    Environment,
    LeaderboardEntry,
    LeaderboardPoint,
    Match,
    RatedPairing,
    Revision,
    Tournament,
)
from reads.selectors import leaderboard
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EnvironmentFactory,
    MatchFactory,
    RevisionFactory,
    TournamentFactory,
)
from tournament_manager.daemon import run_once
from tournament_manager.leaderboard import ladder_strengths, leaderboard_refit
from tournament_manager.ratings import ratings_reset, ratings_update_from_duel

pytestmark = pytest.mark.django_db


@pytest.fixture
def environment() -> Environment:
    return EnvironmentFactory()


@pytest.fixture
def tournament(environment: Environment) -> Tournament:
    return TournamentFactory(environment=environment)


def agent(environment: Environment, name: str) -> Revision:
    return RevisionFactory(
        competitor=CompetitorFactory(environment=environment, name=name), validated=True
    )


def rated(
    tournament: Tournament,
    one: Revision,
    two: Revision,
    *,
    wins: int = 0,
    draws: int = 0,
    losses: int = 0,
) -> None:
    """A finished duel in which ``one`` won, drew and lost that many matches against
    ``two`` (seats alternating), rated as the tournament manager rates it."""
    count = wins + draws + losses
    duel = DuelFactory(
        tournament=tournament, revisions=[one, two], finished=True, num_matches=count
    )
    scores = [(1, 0)] * wins + [(0.5, 0.5)] * draws + [(0, 1)] * losses
    for first, second in scores:
        result = (
            DuelResult.PLAYER_1_WIN
            if first > second
            else DuelResult.PLAYER_2_WIN
            if second > first
            else DuelResult.DRAW
        )
        MatchFactory(duel=duel, scores=[first, second], result=result)
    ratings_update_from_duel(duel=duel)


def entries(environment: Environment) -> dict[str, LeaderboardEntry]:
    return {
        entry.competitor.name: entry
        for entry in LeaderboardEntry.objects.filter(environment=environment).select_related(
            "competitor"
        )
    }


def test_it_ranks_the_current_revisions_by_all_their_rated_matches(environment, tournament):
    strong, middle, weak = (agent(environment, name) for name in ("strong", "middle", "weak"))
    rated(tournament, strong, middle, wins=7, losses=1)
    rated(tournament, middle, weak, wins=6, draws=2)
    rated(tournament, strong, weak, wins=8)

    assert leaderboard_refit(environment=environment)

    table = entries(environment)
    assert [table[name].rank for name in ("strong", "middle", "weak")] == [1, 2, 3]
    assert table["strong"].score > table["middle"].score > table["weak"].score
    assert (table["middle"].matches, table["middle"].wins) == (16, 7)
    assert (table["middle"].draws, table["middle"].losses) == (2, 7)
    for entry in table.values():
        assert entry.rank_best <= entry.rank <= entry.rank_worst
        assert entry.score_sd > 0
    # The mean of the field is 1500.
    assert sum(entry.score for entry in table.values()) / 3 == pytest.approx(1500)
    environment.refresh_from_db()
    assert environment.leaderboard_fitted_at is not None
    assert environment.first_move_advantage is not None


def test_each_refit_adds_a_point_to_the_histories_whose_matches_changed(environment, tournament):
    strong, middle, weak = (agent(environment, name) for name in ("strong", "middle", "weak"))
    rated(tournament, strong, middle, wins=3, losses=1)
    rated(tournament, middle, weak, wins=3, draws=1)

    assert leaderboard_refit(environment=environment)
    first = {point.competitor.name: point for point in LeaderboardPoint.objects.all()}
    assert set(first) == {"strong", "middle", "weak"}
    assert first["middle"].matches == 8
    assert first["strong"].score == entries(environment)["strong"].score

    rated(tournament, strong, weak, wins=4)
    assert leaderboard_refit(environment=environment)
    # strong and weak played: a point each; middle's score moved with the fit, not its
    # matches: none.
    latest = Counter(LeaderboardPoint.objects.values_list("competitor__name", flat=True))
    assert latest == {"strong": 2, "weak": 2, "middle": 1}

    assert not leaderboard_refit(environment=environment)  # nothing changed, nothing fitted
    assert LeaderboardPoint.objects.count() == 5


def test_a_newcomer_with_a_lucky_win_is_provisional_and_listed_after_the_ranked(
    environment, tournament, settings
):
    settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES = 6
    leader, runner_up = agent(environment, "leader"), agent(environment, "runner-up")
    newcomer = agent(environment, "newcomer")
    rated(tournament, leader, runner_up, wins=7, losses=3)
    rated(tournament, newcomer, leader, wins=1)

    leaderboard_refit(environment=environment)

    table = entries(environment)
    assert table["newcomer"].rank is None and table["newcomer"].is_provisional
    assert (table["newcomer"].rank_best, table["newcomer"].rank_worst) == (1, 3)
    assert table["newcomer"].score_sd > 1.5 * table["leader"].score_sd
    # Its one win puts its score above the leader's, yet it is listed last.
    assert table["newcomer"].score > table["leader"].score
    names = [
        row.competitor.name for row in leaderboard(user=AnonymousUser(), environment=environment)
    ]
    assert names == ["leader", "runner-up", "newcomer"]


def test_a_new_revision_starts_again_and_takes_its_old_matches_off_everyone(
    environment, tournament
):
    first, second, third = (agent(environment, name) for name in ("first", "second", "third"))
    rated(tournament, first, second, wins=5, losses=5)
    rated(tournament, second, third, wins=5, losses=5)
    leaderboard_refit(environment=environment)
    assert set(entries(environment)) == {"first", "second", "third"}

    RevisionFactory(competitor=second.competitor, validated=True)
    assert leaderboard_refit(environment=environment)

    # second's new revision has played nothing; first and third never met.
    assert entries(environment) == {}


def test_it_leaves_out_disabled_competitors_and_matches_before_a_reset(environment, tournament):
    one, two, three = (agent(environment, name) for name in ("one", "two", "three"))
    rated(tournament, one, two, wins=10)
    call_command("reset_ratings", "--environment", environment.name, "--yes")
    assert entries(environment) == {}  # the command refits at once

    rated(tournament, two, one, wins=4, losses=4)
    rated(tournament, one, three, wins=6)
    Competitor.objects.filter(pk=three.competitor_id).update(is_disabled=True)
    leaderboard_refit(environment=environment)

    table = entries(environment)
    assert set(table) == {"one", "two"}
    assert table["one"].matches == table["two"].matches == 8
    assert table["one"].score == pytest.approx(table["two"].score, abs=1)


def test_it_refits_only_when_what_it_sees_changed(environment, tournament):
    one, two = agent(environment, "one"), agent(environment, "two")
    rated(tournament, one, two, wins=4, losses=4)
    assert leaderboard_refit(environment=environment)
    fitted_at = Environment.objects.get(pk=environment.pk).leaderboard_fitted_at

    assert not leaderboard_refit(environment=environment)
    assert Environment.objects.get(pk=environment.pk).leaderboard_fitted_at == fitted_at

    rated(tournament, one, two, wins=4)
    assert leaderboard_refit(environment=environment)
    assert entries(environment)["one"].matches == 12


def test_a_slow_fit_waits_ten_times_its_duration_before_the_next(environment, tournament):
    """With a field of thousands a fit takes seconds: matches ending meanwhile wait for the
    next fit, which comes no sooner than ten times the last one's duration after it."""
    one, two = agent(environment, "one"), agent(environment, "two")
    rated(tournament, one, two, wins=4, losses=4)
    assert leaderboard_refit(environment=environment)
    # As if that fit had taken 100 s: the next is due 1,000 s after it.
    Environment.objects.filter(pk=environment.pk).update(leaderboard_fit_seconds=100)
    rated(tournament, one, two, wins=4)

    assert not leaderboard_refit(environment=environment)
    assert entries(environment)["one"].matches == 8

    Environment.objects.filter(pk=environment.pk).update(
        leaderboard_fitted_at=timezone.now() - timedelta(seconds=1001)
    )
    assert leaderboard_refit(environment=environment)
    assert entries(environment)["one"].matches == 12


def test_the_tournament_manager_refits_every_changed_environment(environment, tournament):
    one, two = agent(environment, "one"), agent(environment, "two")
    rated(tournament, one, two, wins=6, losses=2)

    assert run_once()

    assert entries(environment)["one"].rank == 1
    assert not run_once()


def test_self_play_and_validation_duels_never_reach_it(environment):
    revision = agent(environment, "alone")
    duel = DuelFactory(validation=True, revisions=[revision, revision], finished=True)
    MatchFactory(duel=duel)
    ratings_update_from_duel(duel=duel)

    leaderboard_refit(environment=environment, force=True)

    assert entries(environment) == {}


def test_it_tells_no_first_move_advantage_in_a_game_of_simultaneous_moves(client):
    """Rock-paper-scissors has no first move: whatever the fit puts on the seat order is
    not said (issue 26: "Moving first is worth -19 points")."""
    game = EnvironmentFactory(name="rock_paper_scissors")
    tournament = TournamentFactory(environment=game)
    one, two = agent(game, "one"), agent(game, "two")
    rated(tournament, one, two, wins=5, losses=3)

    assert leaderboard_refit(environment=game, force=True)

    game.refresh_from_db()
    assert game.first_move_advantage is None
    assert "Moving first" not in client.get(game.get_absolute_url()).content.decode()


def recount(matches: list[Match]) -> Counter[tuple[int | None, int, int, int, str]]:
    """The rated pairings counted again from the matches themselves: by tournament, the
    revisions in seats 1 and 2, the first mover; games, seat 1's wins, draws."""
    counted: Counter[tuple[int | None, int, int, int, str]] = Counter()
    for match in matches:
        one, two = match.duel.revisions()
        key = (match.duel.tournament_id, one.pk, two.pk, match.first_player)
        counted[(*key, "games")] += 1
        counted[(*key, "one_wins")] += match.scores[0] > match.scores[1]
        counted[(*key, "draws")] += match.scores[0] == match.scores[1]
    return +counted  # without the zeros


def test_its_pairings_count_every_rated_match_once_as_the_matches_say(environment):
    """The refit reads pairings counted as each duel is rated, not the matches: over a
    random history in two tournaments they say what the matches say, and so do the
    entries' records."""
    rng = random.Random(27)
    field = [agent(environment, f"agent-{number}") for number in range(5)]
    tournaments = [TournamentFactory(environment=environment) for _ in range(2)]
    for _ in range(15):
        one, two = rng.sample(field, 2)
        wins, draws, losses = (rng.randint(0, 2) for _ in range(3))
        rated(rng.choice(tournaments), one, two, wins=wins + 1, draws=draws, losses=losses)

    stored: Counter[tuple[int | None, int, int, int, str]] = Counter()
    for pairing in RatedPairing.objects.all():
        key = (pairing.tournament_id, pairing.one_id, pairing.two_id, pairing.first_player)
        for field_name in ("games", "one_wins", "draws"):
            stored[(*key, field_name)] += getattr(pairing, field_name)
    matches = list(Match.objects.select_related("duel"))
    assert +stored == recount(matches)

    leaderboard_refit(environment=environment)
    for revision in field:
        mine = [match for match in matches if revision in match.duel.revisions()]
        seat = {match.pk: match.duel.revisions().index(revision) for match in mine}
        entry = entries(environment)[revision.competitor.name]
        assert entry.matches == len(mine)
        assert entry.wins == sum(
            match.scores[seat[match.pk]] > match.scores[1 - seat[match.pk]] for match in mine
        )
        assert entry.draws == sum(match.scores[0] == match.scores[1] for match in mine)


def test_a_reset_starts_the_leaderboard_again_and_a_ladder_keeps_its_standings(environment):
    ladder = TournamentFactory(environment=environment, format="ladder")
    one, two = agent(environment, "one"), agent(environment, "two")
    rated(ladder, one, two, wins=6, losses=2)
    before = ladder_strengths(tournament=ladder)
    assert before[one.pk] > before[two.pk]

    ratings_reset(environment_id=environment.pk)

    leaderboard_refit(environment=environment, force=True)
    assert entries(environment) == {}
    assert ladder_strengths(tournament=ladder) == before
    rated(ladder, two, one, wins=1)
    leaderboard_refit(environment=environment)
    assert entries(environment)["one"].matches == 1
    assert sum(pairing.games for pairing in RatedPairing.objects.filter(tournament=ladder)) == 9


def test_deleting_the_games_takes_their_pairings_with_them(environment, tournament):
    one, two = agent(environment, "one"), agent(environment, "two")
    rated(tournament, one, two, wins=6, losses=2)
    assert RatedPairing.objects.exists()

    call_command("delete_games", "--environment", environment.name, "--yes")

    assert not RatedPairing.objects.exists()
    leaderboard_refit(environment=environment, force=True)
    assert entries(environment) == {}
