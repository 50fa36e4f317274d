"""Every misbehaviour ends with the right blame, in bounded time, leaving nothing behind.

Player 1 is a well-behaved random agent, player 2 the hostile one; then a game of four
with the hostile player in each seat in turn. Each test runs with agents started fresh,
then with agents forked by fork servers, as a worker's warm pool hands them out. The
``backend`` fixture checks after each test that no agent folder and no sandbox process
remain.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.channel import Channel
from referee.duel import run_duel
from referee.results import DuelResult, Outcome
from sandboxes.base import AgentSource, SandboxLimits
from sandboxes.process import ProcessSandbox
from tests.support.sandboxes import (
    RecordingSandbox,
    agent,
    assert_blamed_on_the_second_player,
    checked_sandbox,
    duel_with_random_agent,
    fault_kinds,
    hostile,
)


@pytest.fixture(params=["process", "forked"])
def backend(request: pytest.FixtureRequest, sandbox_root: Path) -> Iterator[RecordingSandbox]:
    """Each test with agents started fresh, then forked (``any_backend``'s two kinds of
    the process sandbox)."""
    yield from checked_sandbox(sandbox_root, forked=request.param == "forked")


# The honest agent lives under these clocks too: its bank is the margin a loaded machine needs.
FAST: dict[str, Any] = {"matches": 3, "move_time": 0.3, "time_bank": 1.0, "startup_time": 10.0}


def duel(backend: ProcessSandbox, source: AgentSource, **overrides: object) -> DuelResult:
    return duel_with_random_agent(backend, source, **{**FAST, **overrides})


@pytest.mark.parametrize("behaviour", ["sleep", "busy"])
def test_it_charges_a_timeout_restarts_once_then_forfeits(backend, behaviour):
    # A minute to start: a duel that waited for that deadline by mistake fails the bound
    # below, which the two move timeouts (1.3 s each) and a restart do not reach even on
    # a loaded machine.
    result = duel(backend, hostile(behaviour), startup_time=60.0)

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["timeout", "timeout", "forfeit"]
    assert "move limit" in result.matches[0].faults[0].message
    assert result.restarts[1] == 1
    assert result.duration < 40


def test_it_charges_a_slow_start_as_a_timeout(backend):
    # The limit binds the honest agent too: 3 s is far beyond its start-up even on a loaded
    # machine (0.5 s was not, once), and the hostile agent sleeps an hour.
    result = duel(backend, hostile("slow_start"), startup_time=3.0)

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["timeout", "timeout", "forfeit"]
    assert "within 3.0 s" in result.matches[0].faults[0].message


def test_it_charges_unbounded_memory_as_memory_exceeded(backend):
    # Reaching the cap means touching every page up to it, which takes a loaded machine
    # longer than FAST's move time: it gets the time, to be charged for memory, not time.
    result = duel(backend, hostile("memory"), limits=SandboxLimits(memory_mb=256), move_time=5.0)

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["memory_exceeded", "memory_exceeded", "forfeit"]
    assert "MemoryError" in result.logs[1]


def test_it_contains_a_fork_bomb_and_kills_every_copy(backend):
    result = duel(backend, hostile("fork_bomb"), limits=SandboxLimits(max_processes=32))

    assert_blamed_on_the_second_player(result)
    assert set(fault_kinds(result)) <= {"timeout", "crash", "malformed_message", "forfeit"}
    if os.geteuid() == 0:
        # The well-behaved agent's user id is swept in the background, by a process that
        # takes that id for a moment: once that is done, nothing of either agent runs (a
        # forked agent's fork server waits for the next duel).
        assert backend.flush(60)
        assert backend.uids and backend.agents_left() == []


def test_it_charges_megabytes_without_a_newline_as_oversized(backend):
    result = duel(backend, hostile("garbage"), max_message_bytes=1 << 20)

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["oversized_message", "oversized_message", "forfeit"]


def test_it_charges_invalid_json_as_malformed_and_plays_on(backend):
    result = duel(backend, hostile("garbage_lines"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["malformed_message"] * 3
    assert "this is not json" in result.matches[0].faults[0].message
    assert result.restarts[1] == 0


@pytest.mark.parametrize(
    ("behaviour", "explanation"),
    [("illegal", "99 is illegal: column 99 is out of range"), ("wrong_type", "must be an integer")],
)
def test_it_charges_an_illegal_action(backend, behaviour, explanation):
    result = duel(backend, hostile(behaviour, at=2))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["illegal_action"] * 3
    fault = result.matches[0].faults[0]
    assert explanation in fault.message
    # The first request was answered well; the second was the illegal one.
    assert fault.step is not None and fault.step >= 1
    assert len(result.matches[0].actions) == fault.step


def test_it_charges_an_exit_mid_match_as_a_crash(backend):
    result = duel(backend, hostile("exit", at=2))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "exited with status 3" in result.matches[0].faults[0].message
    assert result.matches[0].faults[0].step is not None


def test_it_charges_a_closed_stdout_as_a_crash(backend):
    result = duel(backend, hostile("close_stdout"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "closed its output" in result.matches[0].faults[0].message


def test_it_stops_a_huge_file_at_the_file_size_limit(backend, sandbox_root):
    result = duel(backend, hostile("huge_file"), limits=SandboxLimits(max_file_mb=8))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "file size limit" in result.matches[0].faults[0].message


def test_it_keeps_a_flooded_log_capped_without_blame(backend):
    limits = SandboxLimits(log_bytes=32 * 1024)
    result = duel(backend, hostile("stderr_flood"), limits=limits, move_time=5.0)

    assert result.as_json()["errors"][1] == 0
    assert len(result.logs[1]) < 40 * 1024
    assert "bytes of log dropped" in result.logs[1]


def test_it_charges_an_exception_in_act_without_restarting(backend):
    result = duel(backend, agent("raises_in_act.py"))

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash"] * 3
    assert "ZeroDivisionError" in result.matches[0].faults[0].message
    assert result.restarts[1] == 0


def test_it_sends_print_output_to_the_log_not_the_protocol(backend):
    result = duel(backend, agent("prints_to_stdout.py"))

    assert result.as_json()["errors"][1] == 0
    assert "thinking about" in result.logs[1]


def test_it_records_an_import_error_at_start_as_a_crash(backend):
    result = duel(
        backend, AgentSource.from_path(agent("random_agent.py").path.parent / "crash_at_import")
    )

    assert_blamed_on_the_second_player(result)
    assert fault_kinds(result) == ["crash", "crash", "forfeit"]
    assert "while starting" in result.matches[0].faults[0].message
    assert "tensorflow" in result.logs[1]


def _exchange_one_move(backend: ProcessSandbox, source: AgentSource, victim_dir: str = "") -> str:
    """Start ``source`` alone, play one request by hand and return its log."""
    running = backend.start(source, limits=SandboxLimits(), label="p2-snoop")
    try:
        channel = Channel(running, max_message_bytes=1 << 16)
        deadline = time.monotonic() + 10
        channel.send({"type": "hello", "protocol": 1}, deadline)
        assert channel.receive(deadline)["type"] == "ready"
        channel.send({"type": "start", "match": 0, "player": 0, "seed": 1}, deadline)
        channel.send(
            {
                "type": "act",
                "id": 1,
                "match": 0,
                "step": 0,
                "observation": {},
                "legal_actions": [1],
                "time_left": {"move": 5, "bank": 0},
            },
            deadline,
        )
        assert channel.receive_reply(1, deadline)["action"] == 1
    finally:
        running.close()
    # After close: the log is complete once the drain thread has read to the end.
    return running.log()


@pytest.mark.usefixtures("needs_root")
def test_it_keeps_an_agent_out_of_another_agents_folder(backend):
    victim = backend.start(agent("random_agent.py"), limits=SandboxLimits(), label="p1-victim")
    try:
        victim_dir = str(victim.workdir)
        log = _exchange_one_move(backend, hostile("snoop", HOSTILE_TARGET=victim_dir))
    finally:
        victim.close()

    assert "LEAKED" not in log
    # Confined, the other folder is not in its view at all; unconfined, its rights stop it.
    refusal = "[Errno 2] No such file" if backend.confined else "[Errno 13] Permission denied"
    assert log.count(f"denied: {refusal}") == 4


@pytest.mark.usefixtures("needs_root")
def test_it_gives_an_agent_no_network(backend):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        log = _exchange_one_move(backend, hostile("network", HOSTILE_PORT=str(port)))

    assert "CONNECTED" not in log
    assert "network denied" in log


# --- a game of four: the misbehaving seat in each position -----------------------------------

FOUR_SEATS = {
    # behaviour: the faults it is charged in its three matches
    "sleep": ["timeout", "timeout", "forfeit"],
    "busy": ["timeout", "timeout", "forfeit"],
    "garbage_lines": ["malformed_message"] * 3,
    "illegal": ["illegal_action"] * 3,
    "wrong_type": ["illegal_action"] * 3,
    "exit": ["crash", "crash", "forfeit"],
    "close_stdout": ["crash", "crash", "forfeit"],
}
#: Behaving at their second request: the first was answered well.
AT_SECOND = {"exit", "illegal", "wrong_type"}


@pytest.mark.parametrize("seat", [1, 2, 3, 4])
@pytest.mark.parametrize("behaviour", list(FOUR_SEATS))
def test_in_a_game_of_four_only_the_misbehaving_player_is_charged(backend, behaviour, seat):
    sources = [agent("random_agent.py") for _ in range(3)]
    sources.insert(
        seat - 1, hostile(behaviour, at=2) if behaviour in AT_SECOND else hostile(behaviour)
    )

    result = run_duel("lowest_unique", sources, backend=backend, seed=7, **FAST)

    document = result.as_json()
    assert document["num_players"] == 4 and document["other_errors"] == 0
    assert fault_kinds(result, player_number=seat) == FOUR_SEATS[behaviour]
    assert document["errors"] == [3 if number == seat else 0 for number in range(1, 5)]
    # The others played every match to its end: nobody else was charged anything.
    others = [number for number in range(1, 5) if number != seat]
    assert all(fault_kinds(result, player_number=number) == [] for number in others)
    assert document["result"] != Outcome.ERROR
