"""The formats' rules on factory rows: who plays whom, when, and how standings rank them.

Duels are played on paper (``finish``); the real pipeline is in test_services.py,
test_ladder.py and test_manager_pipeline.py.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    Duel,
    DuelResult,
    DuelStatus,
    Job,
    JobKind,
    LeaderboardEntry,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tests.factories import (
    CompetitorFactory,
    DuelFactory,
    EnvironmentFactory,
    LeaderboardEntryFactory,
    MatchFactory,
    RatingFactory,
    RevisionFactory,
)
from tests.tournament_manager.conftest import Finish
from tournament_manager.daemon import withdraw_disabled_participants
from tournament_manager.ratings import ratings_update_from_duel
from tournament_manager.selectors import paused_revisions, tournament_progress
from tournament_manager.services.ladder import ladder_matchmake, ladder_refresh_entries
from tournament_manager.services.participants import participant_withdraw
from tournament_manager.services.settlement import duel_rerun
from tournament_manager.services.standings import standings_update
from tournament_manager.services.swiss import swiss_round_next
from tournament_manager.services.tournaments import (
    tournament_create,
    tournament_launch,
    tournament_stop,
)

pytestmark = pytest.mark.django_db(transaction=True)

SWISS = TournamentFormat.SWISS
LADDER = TournamentFormat.LADDER


def entrants(tournament: Tournament) -> list[Revision]:
    return [p.revision for p in tournament.participants.order_by("pk").select_related("revision")]


def standing(tournament: Tournament) -> dict[int, Participant]:
    return {p.revision_id: p for p in tournament.participants.all()}


def pairs_of(duels: Iterable[Duel]) -> set[frozenset[int]]:
    return {frozenset((d.revisions()[0].pk, d.revisions()[1].pk)) for d in duels}


def play(
    finish: Finish,
    tournament: Tournament,
    first: Revision,
    second: Revision,
    *,
    draw: bool = False,
    scores: tuple[float, float] = (2, 0),
) -> Duel:
    """``first`` beats ``second`` (or they draw) in the duel between them."""
    duel = tournament.duels.of_revision(first).of_revision(second).get()
    if draw:
        return finish(duel, DuelResult.DRAW, scores=(1, 1))
    if duel.revisions()[0].pk == first.pk:
        return finish(duel, DuelResult.PLAYER_1_WIN, scores=scores)
    return finish(duel, DuelResult.PLAYER_2_WIN, scores=(scores[1], scores[0]))


# --- round robin ------------------------------------------------------------------------


def test_it_schedules_every_pair_once_in_a_round_robin(make_tournament, dispatched):
    tournament = tournament_launch(tournament=make_tournament(4))

    duels = list(tournament.duels.all())
    assert len(duels) == len(pairs_of(duels)) == 6
    assert sorted(dispatched) == sorted(duel.pk for duel in duels)
    assert tournament.status == TournamentStatus.RUNNING
    assert (tournament.duels_total, tournament.duels_done, tournament.duels_failed) == (6, 0, 0)


def test_it_ranks_by_points_then_duels_won(make_tournament, finish, dispatched):
    tournament = tournament_launch(tournament=make_tournament(4))
    a, b, c, d = entrants(tournament)
    play(finish, tournament, a, c)
    play(finish, tournament, a, d)
    play(finish, tournament, b, a)
    play(finish, tournament, b, c, draw=True)
    play(finish, tournament, b, d, draw=True)
    play(finish, tournament, c, d)

    table = standing(tournament)
    assert [(table[r.pk].points, table[r.pk].wins) for r in (a, b, c, d)] == [
        (4, 2),
        (4, 1),
        (3, 1),
        (1, 0),
    ]
    assert [table[r.pk].rank for r in (a, b, c, d)] == [1, 2, 3, 4]
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_total, tournament.duels_done) == (6, 6)


def test_it_breaks_equal_points_and_wins_by_match_score(make_tournament, finish, dispatched):
    tournament = tournament_launch(tournament=make_tournament(3))
    a, b, c = entrants(tournament)
    play(finish, tournament, a, b, scores=(2, 0))
    play(finish, tournament, b, c, scores=(1.5, 0.5))
    play(finish, tournament, c, a, scores=(2, 0))

    table = standing(tournament)
    assert {table[r.pk].points for r in (a, b, c)} == {2}
    assert [table[r.pk].rank for r in (c, a, b)] == [1, 2, 3]


def test_a_withdrawn_participant_keeps_its_results_ranks_last_and_plays_no_more(
    make_tournament, finish, dispatched
):
    tournament = tournament_launch(tournament=make_tournament(3))
    a, b, c = entrants(tournament)
    play(finish, tournament, c, a)
    Revision.objects.filter(pk=c.pk).update(is_disabled=True)

    assert withdraw_disabled_participants()

    unplayed = tournament.duels.of_revision(c).of_revision(b).get()
    assert unplayed.status == DuelStatus.CANCELLED
    table = standing(tournament)
    assert table[c.pk].withdrawn and table[c.pk].points == 2 and table[c.pk].rank == 3
    assert table[a.pk].losses == 1
    assert not withdraw_disabled_participants()

    play(finish, tournament, a, b)
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert (tournament.duels_total, tournament.duels_done, tournament.progress_percent) == (
        2,
        2,
        100,
    )
    assert standing(tournament)[c.pk].rank == 3


# --- Swiss -------------------------------------------------------------------------------


def test_it_seeds_swiss_by_the_leaderboard_and_pairs_top_half_against_bottom_half(
    make_tournament, dispatched
):
    tournament = make_tournament(5, format=SWISS, rounds=3)
    one, two, three, four, unplaced = entrants(tournament)
    LeaderboardEntryFactory(revision=three, rank=1, score=1700)
    LeaderboardEntryFactory(revision=one, rank=2, score=1600)
    # Provisional: after the ranked ones, by score; then the one not on it.
    LeaderboardEntryFactory(revision=two, rank=None, score=1400)
    LeaderboardEntryFactory(revision=four, rank=None, score=1450)
    # openskill says the opposite: it no longer seeds (bench_seeding, BENCHMARKS.md).
    for revision, mu in ((one, 10), (two, 45), (three, 5), (four, 30), (unplaced, 50)):
        RatingFactory(competitor=revision.competitor, mu=mu, sigma=1)

    tournament = tournament_launch(tournament=tournament)

    seeds = {p.revision_id: p.seed for p in tournament.participants.all()}
    assert [seeds[r.pk] for r in (three, one, four, two, unplaced)] == [1, 2, 3, 4, 5]
    duels = list(tournament.duels.all())
    # The last seed sits out: 1 v 3, 2 v 4.
    assert pairs_of(duels) == {frozenset((three.pk, four.pk)), frozenset((one.pk, two.pk))}
    assert {duel.round for duel in duels} == {1}
    assert tournament.current_round == 1
    assert tournament.duels_total == 2 + 2 * 2  # this round's duels and two more rounds


def test_it_gives_a_bye_worth_a_won_duel_for_an_odd_count(make_tournament, dispatched):
    tournament = tournament_launch(tournament=make_tournament(5, format=SWISS, rounds=2))
    *_, last_seed = entrants(tournament)

    assert tournament.duels.count() == 2
    assert last_seed.pk not in {r for pair in pairs_of(tournament.duels.all()) for r in pair}
    sits_out = standing(tournament)[last_seed.pk]
    assert (sits_out.byes, sits_out.points, sits_out.wins, sits_out.rank) == (1, 2, 0, 1)


def test_it_pairs_the_next_round_once_the_current_one_is_over(make_tournament, finish, dispatched):
    tournament = tournament_launch(tournament=make_tournament(4, format=SWISS, rounds=3))
    one, two, three, four = entrants(tournament)  # seeded in order of entry: no ratings
    play(finish, tournament, one, three)
    tournament.refresh_from_db()
    assert not swiss_round_next(tournament=tournament)

    play(finish, tournament, two, four)
    tournament.refresh_from_db()
    assert swiss_round_next(tournament=tournament)
    assert not swiss_round_next(tournament=Tournament.objects.get(pk=tournament.pk))

    second = list(tournament.duels.filter(round=2))
    assert pairs_of(second) == {frozenset((one.pk, two.pk)), frozenset((three.pk, four.pk))}
    assert set(dispatched) >= {duel.pk for duel in second}
    tournament.refresh_from_db()
    assert tournament.current_round == 2


def test_it_ranks_swiss_players_on_equal_points_by_buchholz_before_wins_and_score(
    make_tournament, finish, dispatched
):
    tournament = tournament_launch(tournament=make_tournament(4, format=SWISS, rounds=2))
    one, two, three, four = entrants(tournament)
    play(finish, tournament, one, three)
    play(finish, tournament, four, two)
    tournament.refresh_from_db()
    assert swiss_round_next(tournament=tournament)
    # Score groups: one and four on 2 points, two and three on 0.
    assert pairs_of(tournament.duels.filter(round=2)) == {
        frozenset((one.pk, four.pk)),
        frozenset((two.pk, three.pk)),
    }

    play(finish, tournament, one, four)
    play(finish, tournament, two, three, scores=(3, 0))

    rows = standing(tournament)
    # four and two: 2 points and a win each, two with more match points; four met
    # stronger opponents (one's 4 points and two's 2, against four's 2 and three's 0).
    assert [(rows[r.pk].points, rows[r.pk].buchholz) for r in (four, two)] == [(2, 6), (2, 2)]
    assert [rows[r.pk].rank for r in (one, four, two, three)] == [1, 2, 3, 4]
    assert rows[two.pk].score > rows[four.pk].score


def test_it_plays_swiss_to_the_end_without_rematches_and_a_bye_each(
    make_tournament, finish, dispatched
):
    tournament = tournament_launch(tournament=make_tournament(3, format=SWISS, rounds=3))

    for round_number in (1, 2, 3):
        for duel in tournament.duels.filter(round=round_number):
            finish(duel, DuelResult.PLAYER_1_WIN)
        tournament.refresh_from_db()
        swiss_round_next(tournament=tournament)

    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert tournament.duels.count() == len(pairs_of(tournament.duels.all())) == 3
    participants = list(tournament.participants.all())
    assert [p.byes for p in participants] == [1, 1, 1]
    assert sum(p.points for p in participants) == 3 * 2 + 3 * 2
    assert (tournament.duels_total, tournament.duels_done) == (3, 3)


def test_a_failed_swiss_duel_holds_the_next_round_until_it_is_rerun(
    make_tournament, finish, dispatched
):
    tournament = tournament_launch(tournament=make_tournament(4, format=SWISS, rounds=2))
    first, second = tournament.duels.order_by("pk")
    finish(first)
    finish(second, failed=True)
    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.FAILED
    assert "the next round waits" in tournament.error
    assert not swiss_round_next(tournament=tournament)

    duel_rerun(duel=second)
    tournament.refresh_from_db()
    assert (tournament.status, tournament.error) == (TournamentStatus.RUNNING, "")
    finish(second)
    tournament.refresh_from_db()
    assert swiss_round_next(tournament=tournament)


def test_a_withdrawn_swiss_player_is_not_paired_again(make_tournament, finish, dispatched):
    tournament = tournament_launch(tournament=make_tournament(4, format=SWISS, rounds=3))
    for duel in tournament.duels.all():
        finish(duel)
    leaver = entrants(tournament)[3]
    participant_withdraw(participant=tournament.participants.get(revision=leaver))

    tournament.refresh_from_db()
    assert swiss_round_next(tournament=tournament)

    second = tournament.duels.filter(round=2)
    assert second.count() == 1
    assert leaver.pk not in {r for pair in pairs_of(second) for r in pair}
    assert standing(tournament)[leaver.pk].rank == 4


# --- ladder ---------------------------------------------------------------------------


def competitors(count: int) -> list[Revision]:
    """``count`` competitors of tic-tac-toe with one validated revision each."""
    environment = EnvironmentFactory()
    return [
        RevisionFactory(competitor=CompetitorFactory(environment=environment), validated=True)
        for _ in range(count)
    ]


def test_a_ladder_enters_the_newest_validated_revision_of_every_competitor(
    make_tournament, dispatched
):
    first, second = competitors(2)
    newer = RevisionFactory(competitor=first.competitor, validated=True)
    RevisionFactory(competitor=CompetitorFactory(environment=first.competitor.environment))

    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    playing = set(
        tournament.participants.filter(withdrawn=False).values_list("revision", flat=True)
    )
    assert playing == {newer.pk, second.pk}
    assert not ladder_refresh_entries(tournament=tournament)

    replacement = RevisionFactory(competitor=second.competitor, validated=True)
    assert ladder_refresh_entries(tournament=tournament)
    table = standing(tournament)
    assert table[second.pk].withdrawn and not table[replacement.pk].withdrawn


def test_a_ladder_keeps_at_most_its_concurrent_duels(make_tournament, finish, settings, dispatched):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    competitors(5)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    assert ladder_matchmake(tournament=tournament) == 2
    assert ladder_matchmake(tournament=tournament) == 0
    busy = [r for pair in pairs_of(tournament.duels.all()) for r in pair]
    assert len(busy) == len(set(busy)) == 4

    finish(tournament.duels.first())
    assert ladder_matchmake(tournament=tournament) == 1
    assert tournament.duels.filter(status=DuelStatus.QUEUED).count() == 2
    assert sorted(dispatched) == sorted(tournament.duels.values_list("pk", flat=True))


def test_a_ladder_of_four_plays_one_duel_at_a_time_so_a_freed_slot_has_a_choice(
    make_tournament, finish, settings, dispatched
):
    """With two slots, the two agents just finished would only have each other: the second
    slot is left free rather than replay them."""
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    settings.ARENA_LADDER_NEWCOMER_DUELS = 0
    top, bottom, near_top, near_bottom = competitors(4)
    places = ((top, 1900), (near_top, 1898), (bottom, 1100), (near_bottom, 1090))
    for rank, (revision, score) in enumerate(places, start=1):
        LeaderboardEntryFactory(revision=revision, rank=rank, score=score, score_sd=40)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    assert ladder_matchmake(tournament=tournament) == 1
    assert ladder_matchmake(tournament=tournament) == 0
    first = tournament.duels.get()
    assert pairs_of([first]) == {frozenset((top.pk, near_top.pk))}
    finish(first)
    # As the refit after it would: the duel settled their order.
    LeaderboardEntry.objects.filter(competitor=top.competitor).update(score=2100, score_sd=20)

    assert ladder_matchmake(tournament=tournament) == 1
    second = tournament.duels.get(status=DuelStatus.QUEUED)
    assert pairs_of([second]) == {frozenset((bottom.pk, near_bottom.pk))}


def test_a_ladder_of_two_plays(make_tournament, settings, dispatched):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    competitors(2)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    assert ladder_matchmake(tournament=tournament) == 1


def test_a_ladder_plays_short_duels_by_default(dispatched):
    environment = EnvironmentFactory(matches_per_duel=10, ladder_matches_per_duel=2)

    ladder = tournament_create(environment=environment, name="ladder", revisions=[], format=LADDER)
    round_robin = tournament_create(environment=environment, name="rr", revisions=[])

    assert ladder.matches_per_duel == 2
    assert round_robin.matches_per_duel == 10


def test_a_ladder_gives_each_of_a_pair_the_first_seat_in_turn(
    make_tournament, finish, settings, dispatched
):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    competitors(2)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    orders = []
    for _ in range(4):
        assert ladder_matchmake(tournament=tournament) == 1
        duel = tournament.duels.get(status=DuelStatus.QUEUED)
        orders.append((duel.revisions()[0].pk, duel.revisions()[1].pk))
        finish(duel)

    assert orders[0] == orders[2] == orders[1][::-1] == orders[3][::-1]


def test_a_ladder_pairs_by_the_published_leaderboard_not_the_online_ratings(
    make_tournament, settings, dispatched
):
    """The leaderboard places two pairs of near equals far apart; the online ratings say
    otherwise, and an entry of a competitor's older revision says nothing of its new one."""
    settings.ARENA_LADDER_CONCURRENT_DUELS = 2
    settings.ARENA_LADDER_NEWCOMER_DUELS = 0
    top, near_top, bottom, near_bottom, middle = competitors(5)
    places = ((top, 1900), (near_top, 1890), (middle, 1500), (bottom, 1100), (near_bottom, 1095))
    for rank, (revision, score) in enumerate(places, start=1):
        LeaderboardEntryFactory(revision=revision, rank=rank, score=score, score_sd=40)
    for revision, mu in ((top, 40), (near_top, 10), (bottom, 39), (near_bottom, 11), (middle, 25)):
        RatingFactory(competitor=revision.competitor, mu=mu, sigma=1)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    assert ladder_matchmake(tournament=tournament) == 2
    assert pairs_of(tournament.duels.all()) == {
        frozenset((top.pk, near_top.pk)),
        frozenset((bottom.pk, near_bottom.pk)),
    }


def test_a_revision_newer_than_its_leaderboard_entry_is_paired_as_unmeasured(
    make_tournament, settings, dispatched
):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    settings.ARENA_LADDER_NEWCOMER_DUELS = 0
    leader, follower, newcomer = competitors(3)
    LeaderboardEntryFactory(revision=leader, rank=1, score=1900, score_sd=30)
    LeaderboardEntryFactory(revision=follower, rank=2, score=1300, score_sd=30)
    # The newcomer's entry was fitted on a revision it has since replaced: next to the
    # leader's on the leaderboard, yet unmeasured as it plays now.
    LeaderboardEntryFactory(revision=newcomer, rank=1, score=1905, score_sd=30)
    replacement = RevisionFactory(competitor=newcomer.competitor, validated=True)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))

    assert ladder_matchmake(tournament=tournament) == 1
    # Unmeasured, it is as unsure against either; the leader and the follower are sure,
    # so it is paired (with the follower, the nearer in the prior's mean of 1500).
    assert pairs_of(tournament.duels.all()) == {frozenset((replacement.pk, follower.pk))}


def won_matches(tournament: Tournament, winner: Revision, loser: Revision, count: int) -> None:
    """A finished ladder duel of ``count`` matches, all won by ``winner``, seats alternating,
    rated as the tournament manager rates it (its standings read the rated pairings)."""
    duel = DuelFactory(
        tournament=tournament, revisions=[winner, loser], finished=True, num_matches=count
    )
    for _ in range(count):
        MatchFactory(duel=duel, scores=[1, 0])
    ratings_update_from_duel(duel=duel)


def test_ladder_standings_are_a_fit_of_its_own_matches(make_tournament, dispatched):
    top, middle, bottom, gone, idle = competitors(5)
    # Online ratings that say the opposite: the ladder ranks by its matches, not by them.
    for revision, mu in ((top, 10), (middle, 20), (bottom, 40), (gone, 50)):
        RatingFactory(competitor=revision.competitor, mu=mu, sigma=1)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))
    won_matches(tournament, top, middle, 4)
    won_matches(tournament, middle, bottom, 4)
    won_matches(tournament, gone, top, 6)
    participant_withdraw(participant=tournament.participants.get(revision=gone))

    standings_update(tournament=tournament)

    table = standing(tournament)
    assert [table[r.pk].rank for r in (top, middle, bottom, idle, gone)] == [1, 2, 3, 4, 5]


def test_standings_are_written_only_where_they_changed(make_tournament, dispatched):
    """A ladder of thousands recomputes its standings often; a new duel moves a few."""
    top, middle, bottom = competitors(3)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))
    won_matches(tournament, top, middle, 4)
    standings_update(tournament=tournament)

    with CaptureQueriesContext(connection) as unchanged:
        standings_update(tournament=tournament)
    won_matches(tournament, middle, bottom, 4)
    with CaptureQueriesContext(connection) as changed:
        standings_update(tournament=tournament)

    assert not [q for q in unchanged.captured_queries if q["sql"].startswith("UPDATE")]
    assert [q for q in changed.captured_queries if q["sql"].startswith("UPDATE")]
    table = standing(tournament)
    assert [table[r.pk].rank for r in (top, middle, bottom)] == [1, 2, 3]


def test_it_stops_a_ladder(make_tournament, dispatched):
    competitors(4)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))
    ladder_matchmake(tournament=tournament)

    tournament_stop(tournament=tournament)

    tournament.refresh_from_db()
    assert tournament.status == TournamentStatus.COMPLETED
    assert set(tournament.duels.values_list("status", flat=True)) == {DuelStatus.CANCELLED}
    assert ladder_matchmake(tournament=tournament) == 0
    with pytest.raises(ArenaError, match="not running"):
        tournament_stop(tournament=tournament)
    with pytest.raises(ArenaError, match="only a ladder"):
        tournament_stop(tournament=make_tournament(2))


# --- progress -----------------------------------------------------------------------------


def test_it_estimates_the_time_left_from_the_average_duel(make_tournament, finish, dispatched):
    tournament = tournament_launch(tournament=make_tournament(4))
    first, second, third, *_ = tournament.duels.order_by("pk")
    finish(first)
    finish(second)
    Duel.objects.filter(pk=third.pk).update(status=DuelStatus.RUNNING)
    tournament.refresh_from_db()

    progress = tournament_progress(tournament)

    assert (progress.done, progress.running, progress.queued, progress.failed) == (2, 1, 3, 0)
    assert progress.average_duel_seconds == pytest.approx(60)
    assert progress.seconds_left == pytest.approx(60 * 4)  # four left, one at a time
    assert str(progress) == "2 done, 1 running, 3 queued; about 4 min left"


def test_it_estimates_nothing_before_a_duel_is_over_or_for_a_ladder(make_tournament, dispatched):
    tournament = tournament_launch(tournament=make_tournament(3))
    assert tournament_progress(tournament).seconds_left is None

    competitors(2)
    ladder = tournament_launch(tournament=make_tournament(0, format=LADDER))
    assert tournament_progress(ladder).seconds_left is None
    assert standings_update(tournament=ladder)


def test_a_ladder_pauses_an_entry_whose_duels_all_fail_and_the_others_play_on(
    make_tournament, finish, settings, dispatched
):
    settings.ARENA_LADDER_CONCURRENT_DUELS = 1
    settings.ARENA_LADDER_PAUSE_AFTER_FAILURES = 3
    broken, first, second, third = competitors(4)
    tournament = tournament_launch(tournament=make_tournament(0, format=LADDER))
    # Its server died: each duel it was paired into failed, whoever it met.
    for opponent in (first, second, first):
        finish(DuelFactory(tournament=tournament, revisions=[broken, opponent]), failed=True)

    paused = paused_revisions([broken.pk, first.pk, second.pk, third.pk])

    # The opponents are not blamed: "first" met it twice, between other games.
    assert list(paused) == [broken.pk]
    assert paused[broken.pk].startswith("its last 3 duels failed, played by no one")
    for _ in range(3):
        assert ladder_matchmake(tournament=tournament) == 1
        duel = tournament.duels.get(status=DuelStatus.QUEUED)
        assert broken.pk not in {revision.pk for revision in duel.revisions()}
        finish(duel)

    # Validated again (its owner fixed it): paired again.
    Job.objects.filter(revision=broken, kind=JobKind.VALIDATION).update(ended_at=timezone.now())
    assert paused_revisions([broken.pk]) == {}
