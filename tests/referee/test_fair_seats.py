"""One agent's misbehaviour never costs the others anything, from any seat, in either sandbox.

Every case pits a hostile agent against an honest random one, with the hostile agent
first as player 1 and then as player 2, in the ``process`` and the ``docker`` sandbox.
Each asserts that the honest agent wins every match without a fault, that the hostile
one is charged the named fault in every match, that the duel ends within a bound set by
the limits (a hopeless agent costs at most its start-up limit once per start), and (in
the fixtures) that no agent process, container or folder is left behind.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from referee.agents import MAX_RESTARTS
from referee.duel import run_duel
from referee.results import DuelResult, Outcome
from sandboxes.base import AgentSource, SandboxBackend, SandboxLimits
from tests.support.sandboxes import agent, hostile

#: The limits of the cases charged by the clock, which bind the honest agent too: its cold
#: container's start on a loaded machine took more than 2 s once.
STARTUP_TIME = 3.0
MOVE_TIME = 0.3
TIME_BANK = 0.3
#: What starting, stopping and restarting two agents may add to a duel's wall time (a
#: container takes about half a second to start and as long to remove).
SLACK = 8.0
#: The wall-time bounds catch waits of the wrong order (a limit applied twice, a deadline
#: waited for where an end should be seen at once), never a slow machine: they leave room
#: for one this many times slower than a quiet one (a CI run beside other suites on two
#: cores took 8.2 s where a quiet one takes 3).
LOAD_ROOM = 3.0
#: The start-up and move limits of the cases whose fault is not the clock's: so long that
#: a loaded machine's slowness (a container's cold start, touching every page up to a
#: memory cap, writing a file up to its cap) never reaches them, and so long that waiting
#: for one by mistake could not pass the wall-time bound.
LONG_STARTUP_TIME = 60.0
LONG_MOVE_TIME = 60.0
STARTS = 1 + MAX_RESTARTS


@dataclasses.dataclass(frozen=True)
class Case:
    behaviour: str
    #: 0: before the handshake; N: at the agent's N-th move.
    at: int
    #: The hostile agent's fault in each of the three matches.
    faults: tuple[str, ...]
    #: Upper bound on the duel's wall time, before SLACK, of a case charged by the clock
    #: (the others end within one long limit).
    bound: float
    limits: SandboxLimits = dataclasses.field(default_factory=SandboxLimits)

    @property
    def id(self) -> str:
        return f"{self.behaviour}-{'at-start' if self.at == 0 else 'mid-match'}"

    @property
    def charged_by_the_clock(self) -> bool:
        """Whether its fault is a timeout: only then does it play under the short limits.

        Every other case gets the long ones, so that it is charged its own fault (a crash,
        the memory cap) however slow the machine, and never the clock's.
        """
        return all(fault in ("timeout", "forfeit") for fault in self.faults)

    @property
    def startup_time(self) -> float:
        return STARTUP_TIME if self.charged_by_the_clock else LONG_STARTUP_TIME

    @property
    def move_time(self) -> float:
        return MOVE_TIME if self.charged_by_the_clock else LONG_MOVE_TIME

    @property
    def wall_time_limit(self) -> float:
        """Below what the duel must end: a deadline waited for where an end should be seen
        at once takes a whole long limit, however fast the machine."""
        if self.charged_by_the_clock:
            return LOAD_ROOM * (self.bound + SLACK)
        return min(LONG_STARTUP_TIME, LONG_MOVE_TIME)


HANG_AT_START = STARTS * STARTUP_TIME
HANG_MID_MATCH = STARTS * (MOVE_TIME + TIME_BANK)
RESTARTED = ("{}", "{}", "forfeit")


def restarted(kind: str) -> tuple[str, ...]:
    """A fatal fault, the same again after the one restart, then a forfeit."""
    return tuple(part.format(kind) for part in RESTARTED)


CASES = [
    Case("sleep", 0, restarted("timeout"), HANG_AT_START),
    Case("busy", 0, restarted("timeout"), HANG_AT_START),
    Case("ignore_signals", 0, restarted("timeout"), HANG_AT_START),
    Case("stderr_forever", 0, restarted("timeout"), HANG_AT_START),
    Case("fork_bomb", 0, restarted("timeout"), HANG_AT_START, SandboxLimits(max_processes=32)),
    Case("huge_file", 0, restarted("crash"), 0.0, SandboxLimits(max_file_mb=8)),
    Case("garbage", 0, restarted("oversized_message"), 0.0),
    Case("huge_line", 0, restarted("oversized_message"), 0.0),
    Case("garbage_lines", 0, restarted("malformed_message"), 0.0),
    Case("daemon", 0, restarted("crash"), 0.0),
    Case("close_stdout", 0, restarted("crash"), 0.0),
    Case("exit", 0, restarted("crash"), 0.0),
    Case("sleep", 1, restarted("timeout"), HANG_MID_MATCH),
    Case("memory", 1, restarted("memory_exceeded"), 0.0, SandboxLimits(memory_mb=256)),
    Case("exit", 2, restarted("crash"), 0.0),
    Case("illegal", 2, ("illegal_action",) * 3, 0.0),
    Case("garbage_lines", 1, ("malformed_message",) * 3, 0.0),
]


def play(
    backend: SandboxBackend,
    case: Case,
    hostile_player: int,
    *,
    environment: str = "connect_four",
    players: int = 2,
) -> DuelResult:
    """Honest random agents, and the hostile one as player ``hostile_player``."""
    sources: list[AgentSource] = [agent("random_agent.py")] * players
    sources[hostile_player - 1] = hostile(case.behaviour, at=case.at)
    return run_duel(
        environment,
        sources,
        backend=backend,
        seed=7,
        matches=3,
        move_time=case.move_time,
        time_bank=TIME_BANK,
        startup_time=case.startup_time,
        max_message_bytes=1 << 20,
        limits=case.limits,
    )


@pytest.mark.parametrize("hostile_player", [1, 2], ids=["hostile-first", "hostile-second"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_it_charges_only_the_hostile_agent_and_the_honest_one_wins(
    any_backend, case, hostile_player
):
    honest_player = 3 - hostile_player
    started = time.monotonic()

    result = play(any_backend, case, hostile_player)

    elapsed = time.monotonic() - started
    assert not result.infrastructure_error
    hostile_faults = [
        [fault.kind.value for fault in match.faults if fault.player == hostile_player]
        for match in result.matches
    ]
    honest_faults = [
        fault.describe()
        for match in result.matches
        for fault in match.faults
        if fault.player == honest_player
    ]
    assert honest_faults == []
    assert hostile_faults == [[kind] for kind in case.faults]
    winner = Outcome.PLAYER_1_WIN if honest_player == 1 else Outcome.PLAYER_2_WIN
    assert [match.result for match in result.matches] == [winner] * 3
    assert result.result is winner
    assert elapsed < case.wall_time_limit, f"the duel took {elapsed:.1f} s"


#: A way to fail each, for a worker that cannot see its agents' processes: the clock's (the
#: agent must be killed), memory (only the server can tell), a crash leaving a daemon.
UNSEEN = ("sleep-at-start", "fork_bomb-at-start", "daemon-at-start", "sleep-mid-match")
UNSEEN_CASES = [case for case in CASES if case.id in UNSEEN or case.behaviour == "memory"]


@pytest.mark.parametrize("hostile_player", [1, 2], ids=["hostile-first", "hostile-second"])
@pytest.mark.parametrize("case", UNSEEN_CASES, ids=[case.id for case in UNSEEN_CASES])
def test_it_charges_the_same_where_the_agents_processes_are_not_seen(
    docker_unseen_backend, case, hostile_player
):
    # (The forked docker agents of a worker in a container of its own: compose's.)
    test_it_charges_only_the_hostile_agent_and_the_honest_one_wins(
        docker_unseen_backend, case, hostile_player
    )


@pytest.mark.parametrize("hostile_player", [1, 2], ids=["hostile-first", "hostile-second"])
def test_it_sees_a_closed_stdout_at_once_not_at_the_deadline(backend, hostile_player):
    case = Case("close_stdout", 0, restarted("crash"), 0.0)
    started = time.monotonic()

    result = play(backend, case, hostile_player)

    # Below the start-up limit: the end of its output is the end of the agent.
    assert time.monotonic() - started < case.wall_time_limit
    assert "closed its output" in result.matches[0].faults[0].message


@pytest.mark.parametrize("hostile_player", [1, 2], ids=["hostile-first", "hostile-second"])
def test_it_sees_an_agent_that_left_a_daemon_behind_end_at_once(backend, hostile_player):
    case = Case("daemon", 0, restarted("crash"), 0.0)
    started = time.monotonic()

    result = play(backend, case, hostile_player)

    # Its daemon still holds its output open, but the agent itself has exited.
    assert time.monotonic() - started < case.wall_time_limit
    assert "exited with status 0" in result.matches[0].faults[0].message


#: Games of more than two players: a hostile agent in each of the four seats of lowest
#: unique number, among three honest ones (a sample of the cases above, one per way to fail).
N_PLAYER_CASES = [
    Case("sleep", 0, restarted("timeout"), HANG_AT_START),
    Case("sleep", 1, restarted("timeout"), HANG_MID_MATCH),
    Case("exit", 2, restarted("crash"), 0.0),
    Case("garbage_lines", 1, ("malformed_message",) * 3, 0.0),
    Case("illegal", 2, ("illegal_action",) * 3, 0.0),
]


@pytest.mark.parametrize("hostile_player", [1, 2, 3, 4], ids=lambda player: f"hostile-{player}")
@pytest.mark.parametrize("case", N_PLAYER_CASES, ids=[case.id for case in N_PLAYER_CASES])
def test_it_charges_only_the_hostile_agent_of_four_and_the_others_lose_nothing(
    any_backend, case, hostile_player
):
    started = time.monotonic()

    result = play(any_backend, case, hostile_player, environment="lowest_unique", players=4)

    elapsed = time.monotonic() - started
    assert not result.infrastructure_error
    assert [
        [(fault.player, fault.kind.value) for fault in match.faults] for match in result.matches
    ] == [[(hostile_player, kind)] for kind in case.faults]
    # Every honest player scores the whole match, shared first place; the hostile one nothing.
    expected = [0.0 if player == hostile_player else 1.0 for player in range(1, 5)]
    assert [match.scores for match in result.matches] == [expected] * 3
    assert result.scores == [3 * score for score in expected]
    assert result.as_json()["ranks"] == [4 if score == 0 else 1 for score in expected]
    assert result.result is Outcome.RANKED
    assert elapsed < case.wall_time_limit, f"the duel took {elapsed:.1f} s"
