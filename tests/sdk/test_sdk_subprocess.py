"""``python -m arena_sdk <file>`` as a real process, as the sandbox runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from arena_sdk import protocol

from tests.support.imports import imported_after

SDK_DIR = Path(__file__).resolve().parents[2] / "sdk"

CHATTY_AGENT = """
from arena_sdk import agent

@agent
def chatty(turn):
    print("thinking about", turn.legal_actions)
    return turn.legal_actions[0]
"""

CHATTY_WHILE_LOADING_AGENT = """
from arena_sdk import agent

print("loading the model")

@agent
def chatty(turn):
    return turn.legal_actions[0]
"""

MESSAGES: list[dict[str, Any]] = [
    {"type": "hello", "protocol": 1, "environment": "sum_to_10", "configuration": {}},
    {"type": "start", "match": 0, "player": 0, "seed": 1},
    {
        "type": "act",
        "id": 1,
        "step": 0,
        "observation": {"total": 0},
        "legal_actions": [1, 2, 3],
        "time_left": {"move": 1.0, "bank": 10.0},
    },
    {"type": "end", "match": 0, "result": "win", "scores": [1, 0]},
    {"type": "bye"},
]


def run_agent_file(
    path: Path, messages: list[dict], **environment_variables: str
) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "PYTHONPATH": str(SDK_DIR), **environment_variables}
    return subprocess.run(
        [sys.executable, "-m", "arena_sdk", str(path)],
        input=b"".join(protocol.encode(message) for message in messages),
        capture_output=True,
        env=environment,
        cwd=path.parent,
        timeout=30,
    )


def test_print_in_an_agent_goes_to_stderr_not_the_protocol(tmp_path: Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(CHATTY_AGENT))

    # Unbuffered output is the hard case: nothing waits in a buffer to be redirected.
    completed = run_agent_file(path, MESSAGES, PYTHONUNBUFFERED="1")

    assert completed.returncode == 0, completed.stderr.decode()
    replies = [json.loads(line) for line in completed.stdout.splitlines()]
    assert replies == [
        {"type": "ready", "protocol": 1, "name": "chatty"},
        {"type": "action", "id": 1, "action": 1},
    ]
    assert "thinking about [1, 2, 3]" in completed.stderr.decode()


def test_print_while_loading_an_agent_goes_to_stderr_not_the_protocol(tmp_path: Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(CHATTY_WHILE_LOADING_AGENT))

    completed = run_agent_file(path, MESSAGES, PYTHONUNBUFFERED="1")

    assert completed.returncode == 0, completed.stderr.decode()
    assert [json.loads(line)["type"] for line in completed.stdout.splitlines()] == [
        "ready",
        "action",
    ]
    assert "loading the model" in completed.stderr.decode()


def test_a_file_without_an_agent_exits_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "main.py"
    path.write_text("LIMIT = 3\n")

    completed = run_agent_file(path, MESSAGES)

    assert completed.returncode == 3
    assert completed.stdout == b""
    assert "no agent found" in completed.stderr.decode()


FAREWELL_AGENT = """
import atexit, threading, time
from arena_sdk import agent

def finish_work():
    time.sleep(0.2)
    print("the worker thread finished")

threading.Thread(target=finish_work).start()
atexit.register(lambda: print("saved at exit"))

@agent
def farewell(turn):
    print("kept in a buffer until the exit")
    return turn.legal_actions[0]
"""


def test_after_bye_the_agent_exits_as_a_python_program_would(tmp_path: Path) -> None:
    # The SDK skips the interpreter's teardown after bye; what an agent can see of a
    # normal exit still happens: its threads are waited for, its atexit functions run,
    # its buffered output is flushed, and the status is 0.
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(FAREWELL_AGENT))

    completed = run_agent_file(path, MESSAGES)

    assert completed.returncode == 0, completed.stderr.decode()
    log = completed.stderr.decode()
    assert "kept in a buffer until the exit" in log
    assert "the worker thread finished" in log
    assert "saved at exit" in log
    assert log.index("the worker thread finished") < log.index("saved at exit")
    assert [json.loads(line)["type"] for line in completed.stdout.splitlines()] == [
        "ready",
        "action",
    ]


TEARDOWN_AGENT = """
import os, sys, types
from arena_sdk import agent

if {compiled}:
    # As a C or C++ extension would be, whose output may wait in the C library's buffers.
    extension = types.ModuleType("engine")
    extension.__file__ = "/opt/engines/engine.cpython-311-x86_64-linux-gnu.so"
    sys.modules["engine"] = extension


class Model:
    def __del__(self, write=os.write):
        write(2, b"torn down object by object\\n")


model = Model()


@agent
def first(turn):
    return turn.legal_actions[0]
"""


@pytest.mark.parametrize("compiled", [False, True])
def test_the_interpreter_is_torn_down_only_when_compiled_code_is_loaded(
    tmp_path: Path, compiled: bool
) -> None:
    # The usual exit, slower, is what writes out the C library's buffers: kept for agents
    # that load compiled code other than the standard library's.
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(TEARDOWN_AGENT.format(compiled=compiled)))

    completed = run_agent_file(path, MESSAGES)

    assert completed.returncode == 0, completed.stderr.decode()
    assert ("torn down object by object" in completed.stderr.decode()) is compiled
    assert [json.loads(line)["type"] for line in completed.stdout.splitlines()] == [
        "ready",
        "action",
    ]


def test_a_served_agent_imports_neither_json_nor_re() -> None:
    # The json module imports re and compiles its expressions: a fifth of an agent's start.
    served = f"import sys; sys.path.insert(0, {str(SDK_DIR)!r}); import arena_sdk.__main__"

    assert imported_after(served, ("json", "re"), interpreter_options=("-I", "-S")) == []
