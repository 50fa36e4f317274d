"""Ladder matchmaking rules, on plain agents (no database)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import pytest

from tournament_manager.matchmaking import POOL_BASE, LadderAgent, Matchmaker, _Field

MATCHMAKER = Matchmaker(wait_seconds=600, newcomer_duels=5)


def agent(
    key: int, mu: float, *, sigma: float = 2.0, duels: int = 20, waiting: float = 0
) -> LadderAgent:
    return LadderAgent(key=key, competitor=key, mu=mu, sigma=sigma, duels=duels, waiting=waiting)


def keys(pairs: list[tuple[LadderAgent, LadderAgent]]) -> list[set[int]]:
    return [{one.key, two.key} for one, two in pairs]


def test_it_pairs_agents_with_close_ratings():
    agents = [agent(1, 40), agent(2, 25), agent(3, 39), agent(4, 24)]

    pairs = MATCHMAKER.pairings(agents, slots=2)

    assert sorted(keys(pairs), key=min) == [{1, 3}, {2, 4}]


def test_it_does_not_replay_a_pair_whose_order_is_sure():
    # 1 and 2 are far apart and measured well: another duel would not change their order.
    agents = [
        agent(1, 35, sigma=1),
        agent(2, 15, sigma=1),
        agent(3, 25, sigma=6),
        agent(4, 27, sigma=6),
    ]

    pairs = MATCHMAKER.pairings(agents, slots=1)

    assert keys(pairs) == [{3, 4}]
    assert MATCHMAKER.uncertainty(agents[0], agents[1]) < 1e-6


def test_it_prefers_the_pair_whose_order_is_least_certain_at_the_same_rating_gap():
    # Both pairs are 3 points apart; 3 and 4 are measured far less well.
    agents = [
        agent(1, 30, sigma=1),
        agent(2, 27, sigma=1),
        agent(3, 20, sigma=5),
        agent(4, 17, sigma=5),
    ]

    pairs = MATCHMAKER.pairings(agents, slots=1)

    assert keys(pairs) == [{3, 4}]
    assert MATCHMAKER.uncertainty(agents[0], agents[1]) < 0.02
    assert 0.3 < MATCHMAKER.uncertainty(agents[2], agents[3]) < 0.5


def test_equal_ratings_are_a_coin_toss():
    assert MATCHMAKER.uncertainty(agent(1, 25), agent(2, 25)) == 0.5


def test_it_fills_no_more_than_the_free_slots():
    agents = [agent(key, 25 + key) for key in range(1, 7)]

    assert len(MATCHMAKER.pairings(agents, slots=1)) == 1
    assert len(MATCHMAKER.pairings(agents, slots=5)) == 3
    assert MATCHMAKER.pairings(agents, slots=0) == []


def test_it_chooses_the_best_pairing_for_everyone_not_the_first_acceptable():
    # Taking agents in order would pair 1 with 2 (close enough) and leave 3 with 4, far
    # apart; the best pairing is 1-3 (equal) and 2-4 (equal).
    agents = [agent(1, 30), agent(2, 22), agent(3, 30), agent(4, 22)]

    assert sorted(keys(MATCHMAKER.pairings(agents, slots=2)), key=min) == [{1, 3}, {2, 4}]


def test_it_never_pairs_two_revisions_of_one_competitor():
    twin = dataclasses.replace(agent(2, 25), competitor=1)

    assert MATCHMAKER.pairings([agent(1, 25), twin], slots=1) == []


def test_it_gives_a_long_waiting_agent_a_game_despite_a_far_rating():
    outlier = agent(9, 60)
    field = [agent(1, 25), agent(2, 25.5), agent(3, 24.5)]

    assert 9 not in {
        a.key for pair in MATCHMAKER.pairings([*field, outlier], slots=1) for a in pair
    }
    waited = dataclasses.replace(outlier, waiting=MATCHMAKER.wait_seconds)
    assert 9 in {a.key for pair in MATCHMAKER.pairings([*field, waited], slots=1) for a in pair}


def test_it_favours_newcomers():
    veteran = agent(2, 25, duels=50)
    newcomer = agent(3, 25, duels=0)

    pairs = MATCHMAKER.pairings([agent(1, 25), veteran, newcomer], slots=1)

    assert keys(pairs) == [{1, 3}]


def simulate(matchmaker: Matchmaker, *, steps: int = 200) -> tuple[dict[int, int], float]:
    """One slot, one duel a minute, five close agents and a far-off one (key 5): games per
    agent, and the longest anyone waited between two duels."""
    agents = {key: agent(key, mu) for key, mu in enumerate([25, 25.2, 24.8, 25.1, 24.9, 70])}
    last_played = dict.fromkeys(agents, 0.0)
    games = dict.fromkeys(agents, 0)
    longest_wait = 0.0
    for step in range(1, steps):
        now = step * 60.0
        idle = [
            dataclasses.replace(agent, waiting=now - last_played[key])
            for key, agent in agents.items()
        ]
        [(one, two)] = matchmaker.pairings(idle, slots=1)
        for played in (one, two):
            longest_wait = max(longest_wait, now - last_played[played.key])
            last_played[played.key] = now
            games[played.key] += 1
    return games, longest_wait


def test_no_agent_waits_forever():
    games, longest_wait = simulate(MATCHMAKER)

    assert min(games.values()) >= 10, games
    # Bounded by about what a pairing's quality is worth in waiting time, not by the run.
    assert longest_wait <= MATCHMAKER.wait_seconds, longest_wait
    # Close ratings are still preferred: the outlier plays the least.
    assert games[5] == min(games.values()), games


def test_it_is_the_waiting_bonus_that_gets_the_outlier_its_games():
    games, _ = simulate(Matchmaker(wait_seconds=1e12, newcomer_duels=0))

    assert games[5] == 0


# --- online agents -------------------------------------------------------------------------

ONLINE_MATCHMAKER = Matchmaker(wait_seconds=600, newcomer_duels=5, fill_seconds=60)


def online(key: int, mu: float, *, waiting: float = 0) -> LadderAgent:
    return dataclasses.replace(agent(key, mu, waiting=waiting), online=True)


def test_it_pairs_online_agents_with_each_other_first():
    agents = [online(1, 25), agent(2, 25), online(3, 30), agent(4, 25)]

    pairs = ONLINE_MATCHMAKER.pairings(agents, slots=1, online_slots=1)

    assert sorted(keys(pairs), key=min) == [{1, 3}, {2, 4}]


def test_it_fills_in_a_hosted_opponent_once_an_online_agent_has_waited():
    agents = [online(1, 25, waiting=59), agent(2, 25)]
    assert ONLINE_MATCHMAKER.pairings(agents, slots=5, online_slots=5) == []

    agents = [online(1, 25, waiting=61), agent(2, 25)]

    assert keys(ONLINE_MATCHMAKER.pairings(agents, slots=5, online_slots=5)) == [{1, 2}]


def test_it_counts_online_duels_in_their_own_slots():
    agents = [
        online(1, 25),
        online(2, 25),
        online(3, 25),
        online(4, 25),
        agent(5, 25),
        agent(6, 25),
    ]

    pairs = ONLINE_MATCHMAKER.pairings(agents, slots=0, online_slots=2)

    assert len(pairs) == 2
    assert all(one.online and two.online for one, two in pairs)
    hosted_only = ONLINE_MATCHMAKER.pairings(agents, slots=1, online_slots=0)
    assert keys(hosted_only) == [{5, 6}]


def test_it_gives_llm_players_the_network_slots_and_lets_them_meet_anyone():
    hosted = [agent(key, 25) for key in (1, 2)]
    llm = [dataclasses.replace(agent(key, 25), waits_on_network=True) for key in (3, 4)]

    # No hosted slot free: the LLM players still play, each other or a hosted agent.
    pairs = MATCHMAKER.pairings([*hosted, *llm], slots=0, online_slots=2)
    assert len(pairs) == 2
    assert all(one.networked or two.networked for one, two in pairs)
    # And they take none of the hosted slots.
    pairs = MATCHMAKER.pairings([*hosted, *llm], slots=1, online_slots=0)
    assert [(one.key, two.key) for one, two in pairs] == [(1, 2)]


# --- games of more than two players ----------------------------------------------------


def test_it_groups_agents_of_close_ratings_around_the_one_waiting_longest():
    agents = [
        agent(1, 40),
        agent(2, 25, waiting=1200),
        agent(3, 39),
        agent(4, 24),
        agent(5, 26),
        agent(6, 41),
        agent(7, 23),
        agent(8, 38),
    ]

    groups = MATCHMAKER.groupings(agents, size=4, slots=2)

    assert [{member.key for member in group} for group in groups] == [{2, 4, 5, 7}, {1, 3, 6, 8}]
    assert groups[0][0].key == 2


def test_it_leaves_out_agents_too_few_to_fill_a_group_and_respects_the_slots():
    agents = [agent(key, 25) for key in range(1, 7)]

    assert len(MATCHMAKER.groupings(agents, size=4, slots=3)) == 1
    assert MATCHMAKER.groupings(agents, size=4, slots=0) == []
    assert MATCHMAKER.groupings(agents[:3], size=4, slots=1) == []


def test_it_never_groups_two_revisions_of_one_competitor():
    agents = [dataclasses.replace(agent(key, 25), competitor=key % 3) for key in range(1, 7)]

    groups = MATCHMAKER.groupings(agents, size=3, slots=2)

    assert len(groups) == 2
    for group in groups:
        assert len({member.competitor for member in group}) == 3


def test_it_groups_pairs_as_pairings_does():
    agents = [agent(1, 40), agent(2, 25), agent(3, 39), agent(4, 24)]

    assert MATCHMAKER.groupings(agents, size=2, slots=2) == MATCHMAKER.pairings(agents, slots=2)


# --- large fields: scored pairs grow with the agents, not their square ----------------------


def reference_score(matchmaker: Matchmaker, one: LadderAgent, two: LadderAgent) -> float:
    """A pair's score as the module's notes define it, written out with ``math``."""
    spread = math.hypot(one.sigma, two.sigma)
    uncertainty = 0.5 * math.erfc(abs(one.mu - two.mu) / (spread * math.sqrt(2)))

    def bonus(agent: LadderAgent) -> float:
        newcomer = 0.5 * max(0.0, 1 - agent.duels / matchmaker.newcomer_duels)
        return agent.waiting / matchmaker.wait_seconds + newcomer

    return uncertainty + bonus(one) + bonus(two)


def exhaustive_pairings(
    matchmaker: Matchmaker, agents: list[LadderAgent], slots: int
) -> list[tuple[LadderAgent, LadderAgent]]:
    """The greedy pairing over every pair, as the ladder did before it scored candidates
    only: the reference the faster pass is held to."""
    scored = sorted(
        (-reference_score(matchmaker, one, two), one.key, two.key, one, two)
        for one, two in itertools.combinations(agents, 2)
        if one.competitor != two.competitor
    )
    chosen: list[tuple[LadderAgent, LadderAgent]] = []
    busy: set[int] = set()
    for _, _, _, one, two in scored:
        if one.key in busy or two.key in busy:
            continue
        chosen.append((one, two))
        busy.update((one.key, two.key))
        if len(chosen) == slots:
            break
    return chosen


def random_field(seed: int, size: int) -> list[LadderAgent]:
    rng = random.Random(seed)
    return [
        agent(
            key,
            rng.gauss(25, 8),
            sigma=rng.choice([0.8, 1.5, 3.0, 8.3]),
            duels=rng.randrange(0, 40),
            waiting=rng.expovariate(1 / 300),
        )
        for key in range(1, size + 1)
    ]


@pytest.mark.parametrize("seed", range(8))
def test_on_a_large_field_it_chooses_as_well_as_scoring_every_pair(seed):
    """600 agents, 8 duels to fill: the pool holds 64 of them, and the pairs outside it
    that are scored are rating neighbours and the least sure agents. The choice is the
    one scoring all 179,700 pairs would make, or within 1 % of its total score, and the
    agent that has waited longest plays."""
    agents = random_field(seed, 600)

    def total(pairs: list[tuple[LadderAgent, LadderAgent]]) -> float:
        return sum(reference_score(MATCHMAKER, one, two) for one, two in pairs)

    fast = MATCHMAKER.pairings(agents, slots=8)
    every = exhaustive_pairings(MATCHMAKER, agents, 8)

    assert len(fast) == 8
    assert total(fast) >= 0.99 * total(every)
    longest = max(agents, key=lambda one: one.waiting)
    assert any(longest in pair for pair in fast)


def test_the_pairs_scored_grow_linearly_with_the_idle_agents():
    scored = []
    for size in (1_000, 10_000):
        field = _Field(MATCHMAKER, random_field(1, size))
        one, _two = field.candidates(POOL_BASE + 4 * 8)
        scored.append(len(one))

    assert scored[1] <= 11 * scored[0]
    assert scored[1] < 10 * 10_000  # every pair would be 50 million


def test_groups_on_a_large_field_are_of_close_ratings_and_the_longest_waiting_plays():
    agents = random_field(3, 2_000)

    groups = MATCHMAKER.groupings(agents, size=4, slots=6)

    assert len(groups) == 6
    seated = [member for group in groups for member in group]
    assert len({member.key for member in seated}) == 24
    assert max(agents, key=lambda one: one.waiting) in seated
