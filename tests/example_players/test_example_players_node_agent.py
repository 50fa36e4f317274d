"""The Node.js example agent speaks the protocol with no SDK."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.require import require

NODE_AGENT = Path(__file__).resolve().parents[2] / "example_players/sum_to_10/node_agent/agent"


@pytest.fixture(autouse=True)
def require_node() -> None:
    require(
        shutil.which("node"),
        "node is not installed (apt-get install nodejs), so the Node.js example agent cannot run",
    )


def exchange(lines: list[dict]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE_AGENT)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=30,
    )


def act(request_id: int, total: int, legal_actions: list) -> dict:
    return {
        "type": "act",
        "id": request_id,
        "step": 0,
        "observation": {"total": total, "target": 10, "mark": 1},
        "legal_actions": legal_actions,
        "time_left": {"move": 1.0, "bank": 10.0},
    }


HELLO = {
    "type": "hello",
    "protocol": 1,
    "environment": "sum_to_10",
    "configuration": {"target": 10, "max_add": 3},
}
START = {"type": "start", "match": 0, "player": 0, "seed": 3}
END = {"type": "end", "match": 0, "result": "win", "scores": [1, 0]}
BYE = {"type": "bye"}


def test_its_entry_point_is_an_executable_with_a_node_shebang() -> None:
    assert os.access(NODE_AGENT, os.X_OK)
    assert NODE_AGENT.read_text().startswith("#!/usr/bin/env node\n")


def test_it_answers_hello_and_each_act_and_exits_on_bye() -> None:
    completed = exchange([HELLO, START, act(17, 0, [1, 2, 3]), act(18, 3, [1, 2, 3]), END, BYE])

    assert completed.returncode == 0, completed.stderr
    assert [json.loads(line) for line in completed.stdout.splitlines()] == [
        {"type": "ready", "protocol": 1, "name": "node-sum"},
        # Totals 2 and 6 leave the opponent a multiple of 4 to go.
        {"type": "action", "id": 17, "action": 2},
        {"type": "action", "id": 18, "action": 3},
    ]


def test_it_falls_back_to_the_first_legal_action() -> None:
    losing_position = act(1, 2, [1, 2, 3])
    other_game = {**act(2, 0, ["rock", "paper"]), "observation": {"round": 0}}
    completed = exchange([HELLO, START, losing_position, other_game, BYE])

    actions = [json.loads(line).get("action") for line in completed.stdout.splitlines()]
    assert actions == [None, 1, "rock"]


def test_it_exits_when_its_input_closes() -> None:
    completed = exchange([HELLO, START])
    assert completed.returncode == 0
    assert len(completed.stdout.splitlines()) == 1


def test_it_logs_bad_input_to_stderr_and_carries_on() -> None:
    completed = subprocess.run(
        [str(NODE_AGENT)],
        input="not json\n" + json.dumps(HELLO) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert [json.loads(line)["type"] for line in completed.stdout.splitlines()] == ["ready"]
    assert "not JSON" in completed.stderr


def test_it_plays_whole_duels_legally_and_wins_when_it_moves_first(
    duel_subprocess: Callable,
) -> None:
    duel = duel_subprocess([str(NODE_AGENT)], "sum_to_10", matches=6)
    assert duel.exit_code == 0, duel.stderr
    assert duel.transcript.outcomes[0::2] == ["win"] * 3
