"""What an agent writes on stderr while choosing a move is kept for that move: everything
written since its previous answer, up to this answer, whatever the timing of the threads
that read it (``sandboxes.base.AgentLog``)."""

from __future__ import annotations

import pytest

from referee.duel import run_duel
from referee.results import DuelResult, MatchRecord
from sandboxes.base import SandboxLimits
from tests.support.sandboxes import agent, hostile, player


def moves_of(record: MatchRecord, number: int) -> list[tuple[int, object]]:
    """(step, action) of every move of duel player ``number`` in ``record`` (the opening's,
    which the referee played, left out)."""
    seat = record.seats.index(number)
    return [
        (step, actions[seat])
        for step, actions in enumerate(record.actions)
        if actions[seat] is not None and step >= record.opening
    ]


def outcome(record: MatchRecord, number: int) -> str:
    mine, best = record.scores[number - 1], max(record.scores)
    if record.scores.count(best) > 1:
        return "draw"
    return "win" if mine == best else "loss"


def expected_logs(result: DuelResult, number: int) -> list[dict[int, str]]:
    """What ``logs_each_move.py`` playing as ``number`` wrote at each of its moves: its
    start hook's line and the previous match's end hook's line go to its first move."""
    expected = []
    for record in result.matches:
        logs = {}
        for place, (step, action) in enumerate(moves_of(record, number)):
            before = ""
            if place == 0:
                if record.index > 0:
                    previous = result.matches[record.index - 1]
                    before += f"match {previous.index} ends: {outcome(previous, number)}\n"
                before += f"match {record.index} starts\n"
            logs[step] = (
                f"{before}match {record.index} step {step}: thinking <b>&amp;</b>\nchose {action}"
            )
        expected.append(logs)
    return expected


def test_each_move_keeps_what_the_agent_wrote_while_choosing_it(any_backend):
    # In the docker sandbox the log comes over a Unix socket instead of a pipe.
    result = run_duel(
        "sum_to_10",
        (agent("logs_each_move.py"), agent("random_agent.py")),
        backend=any_backend,
        matches=4,
        seed=3,
    )

    assert [record.move_logs.get(1, {}) for record in result.matches] == expected_logs(result, 1)
    # The other agent wrote nothing; nothing after the last answer is any move's.
    assert all(2 not in record.move_logs for record in result.matches)
    assert "match 3 ends" in result.logs[0]
    document = result.as_json()
    # Its first move comes after the referee's opening of two.
    assert document["matches"][0]["move_logs"]["1"][0] == {
        "step": 2,
        "log": expected_logs(result, 1)[0][2],
    }
    assert "move_logs" not in result.as_json(include_logs=False)["matches"][0]


def test_the_same_duel_gives_the_same_move_logs_every_time(backend):
    def play() -> list[dict[int, dict[int, str]]]:
        result = run_duel(
            "tic_tac_toe",
            (agent("logs_each_move.py"), agent("logs_each_move.py")),
            backend=backend,
            matches=2,
            seed=8,
        )
        return [record.move_logs for record in result.matches]

    first = play()
    assert first == play() == play()
    assert set(first[0]) == {1, 2}


def test_an_agent_in_any_language_logs_its_moves_on_stderr(backend):
    result = run_duel(
        "sum_to_10",
        (player("sum_to_10/node_agent"), agent("random_agent.py")),
        backend=backend,
        matches=2,
        seed=4,
    )

    for record in result.matches:
        assert record.move_logs[1] == {
            step: f"node-sum: match {record.index} step {step}: playing {action}\n"
            for step, action in moves_of(record, 1)
        }


def test_simultaneous_movers_each_get_their_own_log_at_every_step(backend):
    result = run_duel(
        "rock_paper_scissors",
        (agent("logs_each_move.py"), agent("logs_each_move.py")),
        backend=backend,
        matches=2,
        seed=5,
    )

    for number in (1, 2):
        assert [record.move_logs[number] for record in result.matches] == expected_logs(
            result, number
        )


@pytest.mark.parametrize("at", [1, 3])
def test_a_flood_of_log_is_cut_and_costs_the_agent_nothing_else(backend, at):
    limits = SandboxLimits(log_bytes=10 * 1024, move_log_bytes=4096)
    result = run_duel(
        "connect_four",
        (agent("random_agent.py"), hostile("stderr_flood", at=at)),
        backend=backend,
        matches=1,
        seed=7,
        move_time=5.0,
        time_bank=5.0,
        limits=limits,
    )

    document = result.as_json()
    assert document["errors"] == [0, 0] and not result.infrastructure_error
    [record] = result.matches
    steps = [step for step, _action in moves_of(record, 2)]
    logs = record.move_logs[2]
    flooded = steps[at - 1 :]
    # Its moves before the flood wrote nothing; every flooded move says what was cut.
    assert sorted(logs) == flooded
    line = "log line " * 1000 + "\n"
    # 10 KiB over the duel hold two and a half moves of 4 KiB; then only notes are kept.
    flood = len(line) * 2000
    limit_note = "bytes of this move's log cut: its log limit for the duel is reached]"
    for place, step in enumerate(flooded):
        if place < 2:
            assert logs[step] == (line * 5)[:4096] + (
                f"\n[... {flood - 4096} more bytes of this move's log cut]"
            )
        elif place == 2:
            assert logs[step] == (line * 5)[:2048] + f"\n[... {flood - 2048} {limit_note}"
        else:
            assert logs[step] == f"[... {flood} {limit_note}"
    assert len(flooded) > 3 or at > 1
    kept_bytes = sum(len(text.split("\n[...")[0]) for text in logs.values() if text[0] != "[")
    assert kept_bytes <= limits.log_bytes
