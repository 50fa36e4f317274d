"""Play the example players against the real games, with no referee and no sandbox.

A referee script is a generator: it yields protocol messages and is sent back the
agent's answer to each (``None`` for messages that need no answer). The same script
drives an agent served in-process by ``arena_sdk.serve`` or an agent in a
subprocess, so both are checked against the same rules.
"""

from __future__ import annotations

import io
import random
import select
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from arena_sdk import Agent, load_agent, protocol, serve

from environments.registry import make_environment

EXAMPLE_PLAYERS_DIR = Path(__file__).resolve().parents[2] / "example_players"

RefereeScript = Generator[dict, "dict | None", None]
#: Chooses the opponent's action from (observation, legal actions, random).
Opponent = Callable[[dict, list, random.Random], Any]

NEEDS_AN_ANSWER = (protocol.HELLO, protocol.ACT)
LIMITS = {"move_time": 1.0, "time_bank": 10.0, "startup_time": 5.0}


def random_opponent(observation: dict, legal_actions: list, rng: random.Random) -> Any:
    return rng.choice(legal_actions)


@dataclass
class Transcript:
    """What the agent under test did, for assertions after the duel."""

    #: (legal actions offered, action returned) for every request.
    moves: list[tuple[list, Any]] = field(default_factory=list)
    #: "win", "loss" or "draw" for the agent, one per match.
    outcomes: list[str] = field(default_factory=list)


def outcome_for(scores: list[float], player: int) -> str:
    other = max(score for seat, score in enumerate(scores) if seat != player)
    if scores[player] > other:
        return "win"
    if scores[player] < other:
        return "loss"
    return "draw"


def duel_script(
    environment_name: str,
    transcript: Transcript,
    *,
    matches: int = 4,
    seed: int = 0,
    opponent: Opponent = random_opponent,
) -> RefereeScript:
    """A duel against ``opponent`` in every other seat; the agent under test moves
    through the seats, one a match."""
    environment = make_environment(environment_name)
    opponent_random = random.Random(seed)
    reply = yield {
        "type": protocol.HELLO,
        "protocol": protocol.PROTOCOL_VERSION,
        "environment": environment_name,
        "configuration": environment.configuration,
        "limits": LIMITS,
    }
    assert reply is not None and reply["type"] == protocol.READY, reply
    request_id = 0
    for match in range(matches):
        seat = match % environment.num_players
        match_seed = seed * 1000 + match
        environment.reset(match_seed)
        yield {
            "type": protocol.START,
            "match": match,
            "player": seat,
            "seed": match_seed,
            "first_player": 0,
        }
        while not environment.is_terminal():
            actions = {}
            for player in environment.to_move():
                legal = environment.legal_actions(player)
                observation = environment.observation(player)
                if player != seat:
                    actions[player] = opponent(observation, legal, opponent_random)
                    continue
                request_id += 1
                reply = yield {
                    "type": protocol.ACT,
                    "id": request_id,
                    "step": environment.step_count,
                    "observation": observation,
                    "legal_actions": legal,
                    "time_left": {"move": 1.0, "bank": 10.0},
                }
                assert reply is not None and reply["type"] == protocol.ACTION, reply
                assert reply["id"] == request_id
                assert reply["action"] in legal, (
                    f"{reply['action']!r} is not legal in\n{environment.render_text()}"
                )
                transcript.moves.append((legal, reply["action"]))
                actions[player] = reply["action"]
            environment.step(actions)
        scores = environment.scores()
        transcript.outcomes.append(outcome_for(scores, seat))
        yield {
            "type": protocol.END,
            "match": match,
            "result": transcript.outcomes[-1],
            "scores": scores,
            "reason": "",
            "observation": environment.observation(seat),
        }
    yield {"type": protocol.BYE}


def _lines_for_serve(script: RefereeScript, outgoing: io.BytesIO) -> Iterator[bytes]:
    """Feed ``serve`` one line at a time; it has answered the last one when asked for more."""
    read = 0
    message = next(script)
    while True:
        yield protocol.encode(message)
        written = outgoing.getvalue()[read:]
        read += len(written)
        replies = [protocol.decode(line) for line in written.splitlines()]
        expected = 1 if message["type"] in NEEDS_AN_ANSWER else 0
        assert len(replies) == expected, f"answers to {message['type']}: {replies}"
        reply = replies[0] if replies else None
        try:
            message = script.send(reply)
        except StopIteration:
            return


def _play_in_process(agent: Agent, script: RefereeScript) -> None:
    outgoing = io.BytesIO()
    # serve() only iterates over its input's lines: a generator stands in for the pipe.
    serve(agent, _lines_for_serve(script, outgoing), outgoing)  # type: ignore[arg-type]


def _play_subprocess(
    command: list[str],
    script: RefereeScript,
    *,
    stderr_path: Path,
    timeout: float,
    cwd: Path | None,
    env: dict[str, str] | None,
) -> int:
    """Run ``script`` against an agent process; returns its exit code."""
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=env,
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        message = next(script)
        while True:
            process.stdin.write(protocol.encode(message))
            process.stdin.flush()
            reply = None
            if message["type"] in NEEDS_AN_ANSWER:
                ready, _, _ = select.select([process.stdout], [], [], timeout)
                assert ready, f"no answer to {message['type']} within {timeout} s"
                line = process.stdout.readline()
                assert line, f"the agent closed its output instead of answering {message}"
                reply = protocol.decode(line)
            try:
                message = script.send(reply)
            except StopIteration:
                break
        process.stdin.close()
        return process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@dataclass
class SubprocessDuel:
    transcript: Transcript
    exit_code: int
    stderr: str


@pytest.fixture
def load_player(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Agent]:
    """Load ``example_players/<relative path>`` in-process, as ``python -m arena_sdk`` does.

    Loading puts the file's folder on ``sys.path`` and the module in ``sys.modules``;
    both are put back afterwards so players do not leak into other tests.
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "arena_agent_main", None)
    monkeypatch.delenv("ARENA_MINIMAX_DEPTH", raising=False)

    def load(relative_path: str) -> Agent:
        return load_agent(EXAMPLE_PLAYERS_DIR / relative_path)

    return load


@pytest.fixture
def duel_in_process() -> Callable[..., Transcript]:
    """``duel_in_process(agent, environment_name, matches=, seed=, opponent=)``: a duel
    through ``arena_sdk.serve`` with in-memory streams."""

    def play(agent: Agent, environment_name: str, **options: Any) -> Transcript:
        transcript = Transcript()
        _play_in_process(agent, duel_script(environment_name, transcript, **options))
        return transcript

    return play


@pytest.fixture
def duel_subprocess(tmp_path: Path) -> Callable[..., SubprocessDuel]:
    """``duel_subprocess(command, environment_name, matches=, seed=, opponent=, cwd=, env=)``:
    the same duel against an agent process, one line at a time over pipes."""

    def play(
        command: list[str],
        environment_name: str,
        *,
        timeout: float = 10.0,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        **options: Any,
    ) -> SubprocessDuel:
        transcript = Transcript()
        stderr_path = tmp_path / "agent-stderr.log"
        exit_code = _play_subprocess(
            command,
            duel_script(environment_name, transcript, **options),
            stderr_path=stderr_path,
            timeout=timeout,
            cwd=cwd,
            env=env,
        )
        return SubprocessDuel(transcript, exit_code, stderr_path.read_text(errors="replace"))

    return play
