"""Swiss pairing rules, on plain ids (best first)."""

from __future__ import annotations

import itertools

from tournament_manager.pairing import first_round, next_round


def met(*pairs: tuple[int, int]) -> set[frozenset[int]]:
    return {frozenset(pair) for pair in pairs}


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


def test_it_pairs_neighbours_in_the_standings_who_have_not_met():
    swiss_round = next_round([1, 2, 3, 4], met=met((1, 3), (2, 4)), byes={})

    assert swiss_round.pairs == [(1, 2), (3, 4)]


def test_it_skips_an_opponent_already_met():
    swiss_round = next_round([1, 2, 3, 4], met=met((1, 2), (3, 4)), byes={})

    assert swiss_round.pairs == [(1, 3), (2, 4)]


def test_it_backtracks_rather_than_leave_the_last_two_to_a_rematch():
    # Greedy from the top takes 1-2, then 3 has only 4 left, whom it has met: the search
    # goes back and pairs 1 with 3 instead.
    already = met((3, 4), (2, 4))

    swiss_round = next_round([1, 2, 3, 4], met=already, byes={})

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

    swiss_round = next_round(players, met=already, byes={})

    assert not any(frozenset(pair) in already for pair in swiss_round.pairs)
    assert everyone(swiss_round.pairs, swiss_round.bye) == players


def test_it_allows_a_rematch_only_when_it_cannot_be_avoided():
    swiss_round = next_round([1, 2], met=met((1, 2)), byes={})

    assert swiss_round.pairs == [(1, 2)]


def test_it_gives_the_bye_to_the_lowest_ranked_player_without_one():
    swiss_round = next_round([1, 2, 3, 4, 5], met=met(), byes={5: 1})

    assert swiss_round.bye == 4
    assert everyone(swiss_round.pairs, swiss_round.bye) == [1, 2, 3, 4, 5]


def test_it_moves_the_bye_up_when_the_rest_could_only_be_paired_with_a_rematch():
    # 5 would sit out, but then 4 could only meet players it has met.
    already = met((4, 1), (4, 2), (4, 3))

    swiss_round = next_round([1, 2, 3, 4, 5], met=already, byes={})

    assert swiss_round.bye == 4
    assert not any(frozenset(pair) in already for pair in swiss_round.pairs)


def test_it_gives_a_second_bye_only_when_everyone_has_had_one():
    swiss_round = next_round([1, 2, 3], met=met((1, 2), (1, 3), (2, 3)), byes={1: 1, 2: 1, 3: 1})

    assert swiss_round.bye == 3
    assert swiss_round.pairs == [(1, 2)]
