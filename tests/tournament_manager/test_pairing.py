"""Swiss pairing rules, on plain ids (ranked by points, then seed: best first)."""

from __future__ import annotations

import itertools

from tournament_manager.pairing import first_round, next_round, score_groups


def met(*pairs: tuple[int, int]) -> set[frozenset[int]]:
    return {frozenset(pair) for pair in pairs}


def level(*players: int) -> dict[int, int]:
    """Everyone on the same points: one score group."""
    return dict.fromkeys(players, 0)


def everyone(pairs: list[tuple[int, int]], bye: int | None) -> list[int]:
    players = [player for pair in pairs for player in pair]
    return sorted([*players, *([] if bye is None else [bye])])


def test_it_pairs_round_one_top_half_against_bottom_half():
    swiss_round = first_round([1, 2, 3, 4, 5, 6])

    assert swiss_round.pairs == [(1, 4), (2, 5), (3, 6)]
    assert swiss_round.bye is None


def test_it_gives_the_last_seed_the_bye_in_round_one_of_an_odd_count():
    swiss_round = first_round([1, 2, 3, 4, 5])

    assert swiss_round.bye == 5
    assert swiss_round.pairs == [(1, 3), (2, 4)]


def test_it_groups_players_by_points_most_first_keeping_their_order():
    points = {1: 4, 2: 2, 3: 4, 4: 0, 5: 2}

    assert score_groups([1, 3, 2, 5, 4], points) == [[1, 3], [2, 5], [4]]


def test_it_pairs_each_score_group_top_half_against_bottom_half():
    # 8 players after 2 rounds (1-5, 2-6, 3-7, 4-8 then 1-3, 2-4, 5-7, 6-8, the better
    # seed winning): 1 and 2 on 4 points, 3 to 6 on 2, 7 and 8 on 0.
    points = {1: 4, 2: 4, 3: 2, 4: 2, 5: 2, 6: 2, 7: 0, 8: 0}
    already = met((1, 5), (2, 6), (3, 7), (4, 8), (1, 3), (2, 4), (5, 7), (6, 8))

    swiss_round = next_round(list(range(1, 9)), points=points, met=already, byes={})

    assert swiss_round.pairs == [(1, 2), (3, 5), (4, 6), (7, 8)]
    assert swiss_round.bye is None


def test_it_floats_the_lowest_player_of_an_odd_group_down_to_the_next():
    points = {1: 4, 2: 4, 3: 2, 4: 2, 5: 2, 6: 0, 7: 0, 8: 0}

    swiss_round = next_round(list(range(1, 9)), points=points, met=met(), byes={})

    assert swiss_round.pairs == [(1, 2), (3, 4), (5, 7), (6, 8)]


def test_it_reorders_the_bottom_half_of_a_group_to_avoid_a_rematch():
    points = {1: 4, 2: 4, 3: 2, 4: 2, 5: 2, 6: 0, 7: 0, 8: 0}

    swiss_round = next_round(list(range(1, 9)), points=points, met=met((5, 7)), byes={})

    assert swiss_round.pairs == [(1, 2), (3, 4), (5, 8), (6, 7)]


def test_it_floats_another_player_down_when_the_lowest_one_has_met_the_group_below():
    points = {1: 4, 2: 4, 3: 2, 4: 2, 5: 2, 6: 0, 7: 0, 8: 0}
    already = met((5, 6), (5, 7), (5, 8))

    swiss_round = next_round(list(range(1, 9)), points=points, met=already, byes={})

    assert swiss_round.pairs == [(1, 2), (3, 5), (4, 7), (6, 8)]


def test_it_floats_a_whole_group_down_rather_than_pair_a_rematch_in_it():
    points = {1: 4, 2: 4, 3: 2, 4: 2}

    swiss_round = next_round([1, 2, 3, 4], points=points, met=met((1, 2)), byes={})

    assert swiss_round.pairs == [(1, 3), (2, 4)]


def test_it_skips_an_opponent_already_met():
    swiss_round = next_round(
        [1, 2, 3, 4], points=level(1, 2, 3, 4), met=met((1, 3), (2, 4)), byes={}
    )

    assert swiss_round.pairs == [(1, 4), (2, 3)]


def test_it_backtracks_rather_than_leave_the_last_two_to_a_rematch():
    # Top half against bottom half leaves 2 with 4, whom it has met, and 1 with 4 leaves
    # 2 with 3: fine.
    already = met((3, 4), (2, 4))

    swiss_round = next_round([1, 2, 3, 4], points=level(1, 2, 3, 4), met=already, byes={})

    assert swiss_round.pairs == [(1, 4), (2, 3)]
    assert not any(frozenset(pair) in already for pair in swiss_round.pairs)


def test_it_finds_a_pairing_without_rematch_whenever_one_exists():
    players = list(range(1, 9))
    everything = list(itertools.combinations(players, 2))
    # Rounds of a round-robin schedule (circle method): 6 rounds played, 1 left possible.
    rounds = []
    circle = players[1:]
    for _ in range(7):
        lineup = [players[0], *circle]
        rounds.append([(lineup[i], lineup[-1 - i]) for i in range(4)])
        circle = circle[-1:] + circle[:-1]
    already = met(*[pair for played in rounds[:6] for pair in played])
    assert len(already) < len(everything)
    points = {player: 2 * (player % 3) for player in players}

    swiss_round = next_round(players, points=points, met=already, byes={})

    assert not any(frozenset(pair) in already for pair in swiss_round.pairs)
    assert everyone(swiss_round.pairs, swiss_round.bye) == players


def test_it_allows_a_rematch_only_when_it_cannot_be_avoided():
    swiss_round = next_round([1, 2], points=level(1, 2), met=met((1, 2)), byes={})

    assert swiss_round.pairs == [(1, 2)]


def test_it_pairs_everyone_when_every_pairing_is_a_rematch():
    players = [1, 2, 3, 4]
    already = met(*itertools.combinations(players, 2))

    swiss_round = next_round(players, points={1: 6, 2: 4, 3: 2, 4: 0}, met=already, byes={})

    assert swiss_round.pairs == [(1, 2), (3, 4)]


def test_it_gives_the_bye_to_the_lowest_ranked_player_without_one():
    swiss_round = next_round([1, 2, 3, 4, 5], points=level(1, 2, 3, 4, 5), met=met(), byes={5: 1})

    assert swiss_round.bye == 4
    assert everyone(swiss_round.pairs, swiss_round.bye) == [1, 2, 3, 4, 5]


def test_it_moves_the_bye_up_when_the_rest_could_only_be_paired_with_a_rematch():
    # 5 would sit out, but then 4 could only meet players it has met.
    already = met((4, 1), (4, 2), (4, 3))

    swiss_round = next_round([1, 2, 3, 4, 5], points=level(1, 2, 3, 4, 5), met=already, byes={})

    assert swiss_round.bye == 4
    assert not any(frozenset(pair) in already for pair in swiss_round.pairs)


def test_it_gives_a_second_bye_only_when_everyone_has_had_one():
    swiss_round = next_round(
        [1, 2, 3], points=level(1, 2, 3), met=met((1, 2), (1, 3), (2, 3)), byes={1: 1, 2: 1, 3: 1}
    )

    assert swiss_round.bye == 3
    assert swiss_round.pairs == [(1, 2)]
