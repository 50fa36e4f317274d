"""The remote seat: an online agent plays through the referee exactly as a hosted one,
and whatever it does wrong (leaving, never coming, being slow, answering twice) costs
only itself, from either seat; whatever Arena does wrong costs nobody.

The online agent is a ``BusClient``: an SDK agent on the seat bus, through the same
gateway functions an HTTP client goes through. Both buses (in memory, and Redis) are
tried where the bus matters.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from arena_sdk import Agent

from referee.duel import run_duel
from referee.results import DuelResult, Outcome
from sandboxes.base import AgentSource, SandboxBackend, SandboxLimits
from sandboxes.memory_seat_bus import MemorySeatBus
from sandboxes.redis_seat_bus import RedisSeatBus
from sandboxes.remote import RemoteSandbox
from sandboxes.seat_bus import SeatBus
from tests.support.online import BusClient, gateway_running
from tests.support.sandboxes import PLAYERS, agent, hostile

RANDOM = PLAYERS / "connect_four" / "random_player.py"
# Limits an honest agent never reaches, even on a loaded machine (a cold container's
# start, a reconnecting client): only the tests whose agent breaks them wait them out.
GRACE = 5.0
ALLOWANCE = 0.2
MOVE_TIME = 1.0
TIME_BANK = 2.0
STARTUP_TIME = 30.0
#: For the online agent that never connects: its seat's grace period, and how long the first
#: match waits for it. The grace must run out first, and with a margin a loaded machine
#: cannot eat (at 5 s each, CI once saw the start-up time run out first: the agent was
#: restarted rather than gone).
NEVER_CONNECTS_GRACE = 1.0
NEVER_CONNECTS_STARTUP_TIME = 10.0


@pytest.fixture(params=["memory", "redis"])
def bus(request: pytest.FixtureRequest) -> Iterator[SeatBus]:
    """A seat bus with a gateway alive: in memory, then in a real Redis."""
    made = (
        MemorySeatBus()
        if request.param == "memory"
        else RedisSeatBus(request.getfixturevalue("redis_url"))
    )
    with gateway_running(made) as alive:
        yield alive


@pytest.fixture
def memory_bus() -> Iterator[SeatBus]:
    with gateway_running(MemorySeatBus()) as alive:
        yield alive


@pytest.fixture
def seat() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def duel(
    bus: SeatBus,
    seat: str,
    opponent: AgentSource,
    backend: SandboxBackend,
    *,
    online_player: int = 1,
    matches: int = 3,
    seed: int = 11,
    allowance: float = ALLOWANCE,
    grace: float = GRACE,
    **overrides: float,
) -> DuelResult:
    remote = RemoteSandbox(bus, duel=1, grace=grace, allowance=allowance)
    online = AgentSource.remote("online", seat=seat)
    sources = (online, opponent) if online_player == 1 else (opponent, online)
    backends = (remote, backend) if online_player == 1 else (backend, remote)
    settings: dict[str, Any] = {
        "move_time": MOVE_TIME,
        "time_bank": TIME_BANK,
        "startup_time": STARTUP_TIME,
        **overrides,
    }
    return run_duel(
        "connect_four", sources, backend=backends, seed=seed, matches=matches, **settings
    )


def faults_of(result: DuelResult, player: int) -> list[list[str]]:
    return [
        [fault.kind.value for fault in match.faults if fault.player == player]
        for match in result.matches
    ]


def won_by(result: DuelResult, player: int) -> bool:
    winner = Outcome.PLAYER_1_WIN if player == 1 else Outcome.PLAYER_2_WIN
    return all(match.result is winner for match in result.matches)


class Slow(Agent):
    """Thinks too long once: at its second move of its first match."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.moves = 0

    def act(self, turn):
        self.moves += 1
        if self.moves == 2:
            time.sleep(self.seconds)
        return turn.random.choice(turn.legal_actions)


class Illegal(Agent):
    def act(self, turn):
        return 99


# --- plays like a hosted agent -------------------------------------------------------------


def test_it_plays_an_online_agent_exactly_as_a_hosted_one(bus, seat, backend):
    hosted = run_duel(
        "connect_four",
        (agent("random_agent.py"), AgentSource.from_path(RANDOM)),
        backend=backend,
        seed=5,
        matches=4,
    )
    with BusClient(bus, seat, RANDOM):
        online = duel(
            bus, seat, agent("random_agent.py"), backend, online_player=2, seed=5, matches=4
        )

    assert not online.infrastructure_error
    assert faults_of(online, 2) == [[]] * 4
    # A deterministic agent's matches are the same whether it is hosted or online.
    assert [match.actions for match in online.matches] == [
        match.actions for match in hosted.matches
    ]


@pytest.mark.parametrize("online_player", [1, 2], ids=["online-first", "online-second"])
def test_it_never_charges_an_online_agent_for_its_hosted_opponents_fault(
    memory_bus, seat, backend, online_player
):
    with BusClient(memory_bus, seat, RANDOM):
        result = duel(
            memory_bus, seat, hostile("garbage_lines", at=1), backend, online_player=online_player
        )

    assert faults_of(result, online_player) == [[]] * 3
    assert won_by(result, online_player)


# --- its own faults, from either seat ------------------------------------------------------


@pytest.mark.parametrize("online_player", [1, 2], ids=["online-first", "online-second"])
def test_it_charges_an_online_agent_that_leaves_every_remaining_match_by_timeout(
    bus, seat, any_backend, online_player
):
    with BusClient(bus, seat, RANDOM, drop_after=2):
        result = duel(bus, seat, agent("random_agent.py"), any_backend, online_player=online_player)

    assert not result.infrastructure_error
    assert faults_of(result, online_player) == [["timeout"]] * 3
    assert faults_of(result, 3 - online_player) == [[]] * 3
    assert won_by(result, 3 - online_player)
    messages = [match.faults[0].message for match in result.matches]
    assert any(f"did not come back within the {GRACE:g} s grace period" in m for m in messages)
    # Once its grace period is over, nothing more waits for it (said by the messages, not
    # by a clock, which a loaded machine would fool).
    assert messages[2].startswith("not played: ")
    log = result.logs[0] if online_player == 1 else result.logs[1]
    assert "the client is not connected" in log


@pytest.mark.parametrize("resume", [True, False], ids=["with-its-seq", "from-scratch"])
def test_it_lets_an_online_agent_come_back_within_its_grace_period(bus, seat, backend, resume):
    with BusClient(bus, seat, RANDOM, drop_after=3, away=0.8, resume=resume) as client:
        result = duel(bus, seat, agent("random_agent.py"), backend, time_bank=2.0)

    assert faults_of(result, 1) == [[]] * 3
    assert "the client is not connected" in result.logs[0]
    if resume:
        # Nothing lost, nothing repeated: every reply was to an open request.
        assert client.refused == []
    else:
        # A client that lost its place gets the duel again; its answers to requests
        # already answered are refused, and change nothing.
        assert {refused.code for refused in client.refused} == {"not_your_turn"}


@pytest.mark.parametrize("online_player", [1, 2], ids=["online-first", "online-second"])
def test_it_charges_an_online_agent_that_never_connects(memory_bus, seat, backend, online_player):
    result = duel(
        memory_bus,
        seat,
        agent("random_agent.py"),
        backend,
        online_player=online_player,
        grace=NEVER_CONNECTS_GRACE,
        startup_time=NEVER_CONNECTS_STARTUP_TIME,
    )

    assert faults_of(result, online_player) == [["timeout"]] * 3
    assert won_by(result, 3 - online_player)
    messages = [match.faults[0].message for match in result.matches]
    # Only the first match waited for it (its start-up time); the others were not played.
    # (Said by the messages, not by a clock, which a loaded machine would fool.)
    assert messages[0].startswith("while starting: ")
    assert all(message.startswith("not played: ") for message in messages[1:])


@pytest.mark.parametrize("online_player", [1, 2], ids=["online-first", "online-second"])
def test_it_charges_a_slow_online_agent_a_timeout_and_lets_it_play_on(
    memory_bus, seat, backend, online_player
):
    too_long = MOVE_TIME + TIME_BANK + ALLOWANCE + 0.5
    with BusClient(memory_bus, seat, Slow(too_long)) as client:
        result = duel(
            memory_bus, seat, agent("random_agent.py"), backend, online_player=online_player
        )

    assert faults_of(result, online_player) == [["timeout"], [], []]
    restarts = result.restarts[0] if online_player == 1 else result.restarts[1]
    assert restarts == 1
    # Its late answer was refused at the gateway; it never reached the referee.
    assert [refused.code for refused in client.refused] == ["not_your_turn"]


def test_it_gives_an_online_agent_its_network_allowance(memory_bus, seat, backend):
    # Over the move limit by 1.2 s, 0.8 s less than the allowance: on time online, late if
    # hosted (margins a loaded machine cannot eat; the agent is slow on one move only).
    slow = Slow(MOVE_TIME + 1.2)
    with BusClient(memory_bus, seat, slow):
        result = duel(
            memory_bus,
            seat,
            agent("random_agent.py"),
            backend,
            allowance=2.0,
            time_bank=0.0,
            matches=1,
        )

    assert faults_of(result, 1) == [[]]


@pytest.mark.parametrize("online_player", [1, 2], ids=["online-first", "online-second"])
def test_it_charges_an_online_agents_illegal_action_and_plays_on(
    memory_bus, seat, backend, online_player
):
    with BusClient(memory_bus, seat, Illegal()):
        result = duel(
            memory_bus, seat, agent("random_agent.py"), backend, online_player=online_player
        )

    assert faults_of(result, online_player) == [["illegal_action"]] * 3
    restarts = result.restarts[0] if online_player == 1 else result.restarts[1]
    assert restarts == 0


def test_it_refuses_a_second_answer_to_the_same_request_and_plays_on(bus, seat, backend):
    with BusClient(bus, seat, RANDOM, twice=True) as client:
        result = duel(bus, seat, agent("random_agent.py"), backend)

    assert faults_of(result, 1) == [[]] * 3
    assert client.refused
    codes = [refused.code for refused in client.refused]
    # The second answer to the very last request may come once the duel is over (its
    # 'bye' ends the duel for the client at once): refused as such.
    assert set(codes[:-1]) == {"not_your_turn"}
    assert codes[-1] in ("not_your_turn", "not_playing")
    assert len(client.refused) == len(client.accepted)


# --- Arena's failures are nobody's -----------------------------------------------------------


class BrokenBus(MemorySeatBus):
    """Fails like a Redis that went away, after ``publishes`` messages."""

    def __init__(self, publishes: int) -> None:
        super().__init__()
        self.publishes = publishes

    def publish(self, seat: str, line: bytes, *, awaits: str | None) -> str:
        self.publishes -= 1
        if self.publishes < 0:
            raise ConnectionError("Connection refused (the bus is down)")
        return super().publish(seat, line, awaits=awaits)


def test_it_ends_the_duel_in_error_when_the_seat_bus_fails(seat, backend):
    with gateway_running(BrokenBus(publishes=6)) as bus, BusClient(bus, seat, RANDOM):
        result = duel(bus, seat, agent("random_agent.py"), backend)

    assert "the seat bus failed" in result.infrastructure_error
    assert result.as_json()["result"] == "ERROR"


def test_it_ends_the_duel_in_error_when_no_gateway_could_take_the_agent_back(seat, backend):
    bus = MemorySeatBus()  # no gateway has said it is alive

    result = duel(bus, seat, agent("random_agent.py"), backend)

    assert "no network gateway is running" in result.infrastructure_error
    assert result.as_json()["result"] == "ERROR"


def test_it_leaves_nothing_pending_once_the_duel_is_over(bus, seat, backend):
    with BusClient(bus, seat, RANDOM):
        duel(bus, seat, agent("random_agent.py"), backend, matches=1)

    assert asyncio.run(bus.pending(seat)) == []
    assert asyncio.run(bus.current_duel(seat)) is None


def test_it_lets_a_seats_keys_expire_on_redis(redis_url, seat, backend):
    import redis

    from sandboxes.seat_bus import SEAT_KEYS_TTL

    with gateway_running(RedisSeatBus(redis_url)) as bus, BusClient(bus, seat, RANDOM):
        duel(bus, seat, agent("random_agent.py"), backend, matches=1)

    client = redis.Redis.from_url(redis_url)
    keys = client.keys(f"arena:seat:{seat}:*")
    assert keys  # the events (and the connections) stay for a client that comes back...
    for key in keys:
        # ...but none for good: a model that stops playing leaves nothing behind.
        assert 0 < client.ttl(key) <= SEAT_KEYS_TTL, key


def test_its_duel_is_over_for_the_client_once_the_referee_says_bye(bus, seat):
    """The client's status no longer says it plays while the referee stores the results:
    the seat's duel ends at ``bye``, before the seat is closed."""
    sandbox = RemoteSandbox(bus, duel=7, grace=GRACE, allowance=0.0)
    remote = sandbox.start(
        AgentSource.remote("online", seat=seat), limits=SandboxLimits(), label="online"
    )
    try:
        assert asyncio.run(bus.current_duel(seat)) is not None
        os.write(remote.request_fd, b'{"type":"bye"}\n')
        deadline = time.monotonic() + 30
        while asyncio.run(bus.current_duel(seat)) is not None:
            assert time.monotonic() < deadline, "the duel stayed open after bye"
            time.sleep(0.05)
        # Its end, as after a hosted agent's bye: the relay closes the seat, then records
        # the end (on a loaded machine the test can see the first before the second).
        assert remote.termination(wait=30) is not None
    finally:
        remote.close()


# --- a game of four: the online seat in each position ---------------------------------------

LOWEST_UNIQUE = PLAYERS / "lowest_unique" / "random_player.py"


def four_seats(
    bus: SeatBus, seat: str, backend: SandboxBackend, *, online_player: int
) -> DuelResult:
    """A duel of lowest-unique: three hosted random players and the online one, seated
    ``online_player``-th."""
    sources = [agent("random_agent.py") for _ in range(3)]
    backends: list[SandboxBackend] = [backend] * 3
    sources.insert(online_player - 1, AgentSource.remote("online", seat=seat))
    backends.insert(online_player - 1, RemoteSandbox(bus, duel=1, grace=GRACE, allowance=ALLOWANCE))
    return run_duel(
        "lowest_unique",
        sources,
        backend=tuple(backends),
        seed=11,
        matches=3,
        move_time=MOVE_TIME,
        time_bank=TIME_BANK,
        startup_time=STARTUP_TIME,
    )


@pytest.mark.parametrize("online_player", [1, 2, 3, 4])
def test_in_a_game_of_four_an_online_agent_that_leaves_is_charged_alone(
    memory_bus, seat, backend, online_player
):
    with BusClient(memory_bus, seat, LOWEST_UNIQUE, drop_after=2):
        result = four_seats(memory_bus, seat, backend, online_player=online_player)

    assert not result.infrastructure_error
    assert faults_of(result, online_player) == [["timeout"]] * 3
    for other in {1, 2, 3, 4} - {online_player}:
        assert faults_of(result, other) == [[]] * 3
    assert "the client is not connected" in result.logs[online_player - 1]


@pytest.mark.parametrize("online_player", [1, 2, 3, 4])
def test_in_a_game_of_four_an_online_agent_plays_like_the_others(
    memory_bus, seat, backend, online_player
):
    with BusClient(memory_bus, seat, LOWEST_UNIQUE):
        result = four_seats(memory_bus, seat, backend, online_player=online_player)

    assert not result.infrastructure_error
    assert all(faults_of(result, player) == [[]] * 3 for player in (1, 2, 3, 4))
    assert result.as_json()["errors"] == [0, 0, 0, 0]


def test_a_seat_playing_an_evaluation_says_so_and_names_no_duel(bus, seat):
    sandbox = RemoteSandbox(bus, duel=7, grace=GRACE, allowance=0.0, kind="evaluation")
    remote = sandbox.start(
        AgentSource.remote("online", seat=seat), limits=SandboxLimits(), label="online"
    )
    try:
        playing = asyncio.run(bus.current_duel(seat))
        assert playing is not None
        assert (playing.duel, playing.evaluation) == (None, 7)
        events = asyncio.run(bus.events_after(seat, "0", 1.0))
        announcement = json.loads(events[0][1])
        assert announcement["type"] == "duel"
        assert (announcement["duel"], announcement["evaluation"]) == (None, 7)
    finally:
        remote.close()


class Resigns(Agent):
    """Resigns at its second move of the duel, as a person's Resign button does (the move
    it answers with after is refused: nothing is pending any more)."""

    def __init__(self, bus: SeatBus, seat: str) -> None:
        self.bus = bus
        self.seat = seat
        self.moves = 0

    def act(self, turn):
        self.moves += 1
        if self.moves == 2:
            assert asyncio.run(self.bus.resign(self.seat))
        return turn.random.choice(turn.legal_actions)


@pytest.mark.parametrize("online_player", [1, 2], ids=["resigns-first", "resigns-second"])
def test_a_seat_that_resigns_loses_the_rest_of_its_duel_and_the_other_loses_nothing(
    memory_bus, seat, backend, online_player
):
    with BusClient(memory_bus, seat, Resigns(memory_bus, seat)):
        result = duel(
            memory_bus, seat, agent("random_agent.py"), backend, online_player=online_player
        )

    assert not result.infrastructure_error
    # The matches after are lost as the one it left was: "not played: it resigned".
    assert faults_of(result, online_player) == [["resigned"]] * 3
    assert faults_of(result, 3 - online_player) == [[]] * 3
    assert won_by(result, 3 - online_player)
    assert "resigned" in result.matches[0].faults[0].message
