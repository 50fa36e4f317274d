"""The agent side of the protocol, driven with in-memory streams."""

from __future__ import annotations

import io
from typing import Any

import pytest
from arena_sdk import (
    Agent,
    KaggleAgent,
    Match,
    PlayerAgent,
    Result,
    Turn,
    agent,
    protocol,
    serve,
)

HELLO = {
    "type": "hello",
    "protocol": 1,
    "environment": "connect_four",
    "configuration": {"rows": 6, "columns": 7, "inarow": 4},
    "limits": {"move_time": 1.0, "time_bank": 10.0, "startup_time": 15.0},
}
BOARD = [0] * 42


def start(match: int = 0, player: int = 1, seed: int = 42) -> dict:
    return {"type": "start", "match": match, "player": player, "seed": seed, "first_player": 0}


def act(request_id: int, step: int = 0, legal_actions: list | None = None) -> dict:
    return {
        "type": "act",
        "id": request_id,
        "step": step,
        "observation": {"board": BOARD, "mark": 2},
        "legal_actions": [0, 1, 2, 3, 4, 5, 6] if legal_actions is None else legal_actions,
        "time_left": {"move": 0.9, "bank": 8.5},
    }


def end(result: str = "win", match: int = 0) -> dict:
    return {
        "type": "end",
        "match": match,
        "result": result,
        "scores": {"win": [0, 1], "loss": [1, 0], "draw": [0.5, 0.5]}[result],
        "reason": "",
        "observation": {"board": [2, *BOARD[1:]], "mark": 2},
    }


BYE = {"type": "bye"}


def run_serve(agent_under_test: Agent, messages: list[dict]) -> list[dict]:
    incoming = io.BytesIO(b"".join(protocol.encode(message) for message in messages))
    outgoing = io.BytesIO()
    serve(agent_under_test, incoming, outgoing)
    return [protocol.decode(line) for line in outgoing.getvalue().splitlines()]


class Recorder(Agent):
    """Remembers every hook call and answers the first legal action."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def start(self, match: Match) -> None:
        self.calls.append(("start", match))

    def act(self, turn: Turn) -> Any:
        self.calls.append(("act", turn))
        return turn.legal_actions[0]

    def end(self, result: Result) -> None:
        self.calls.append(("end", result))


def test_it_answers_hello_with_ready() -> None:
    replies = run_serve(Recorder(), [HELLO, BYE])
    assert replies == [{"type": "ready", "protocol": 1, "name": "Recorder"}]


def test_it_runs_start_act_end_with_what_the_referee_sent() -> None:
    recorder = Recorder()
    replies = run_serve(recorder, [HELLO, start(), act(7, step=1), end("win"), BYE])

    assert replies[1] == {"type": "action", "id": 7, "action": 0}
    assert [name for name, _ in recorder.calls] == ["start", "act", "end"]
    match, turn, result = (value for _, value in recorder.calls)
    assert (match.environment, match.configuration, match.limits) == (
        "connect_four",
        HELLO["configuration"],
        HELLO["limits"],
    )
    assert (match.index, match.player, match.seed, match.first_player) == (0, 1, 42, 0)
    assert turn.match is match and turn.player == 1
    assert (turn.step, turn.observation, turn.legal_actions) == (
        1,
        {"board": BOARD, "mark": 2},
        [0, 1, 2, 3, 4, 5, 6],
    )
    assert (turn.move_time_left, turn.time_bank_left) == (0.9, 8.5)
    assert result.match is match
    assert (result.outcome, result.scores, result.reason) == ("win", [0, 1], "")
    assert result.observation == end()["observation"]
    assert result.reward == 1


def test_it_echoes_the_id_of_each_request() -> None:
    replies = run_serve(Recorder(), [HELLO, start(), act(7), act(8), act(1234), BYE])
    assert [reply["id"] for reply in replies[1:]] == [7, 8, 1234]


def test_it_tells_the_agent_its_seat_and_the_count_of_players() -> None:
    recorder = Recorder()
    hello = {**HELLO, "environment": "lowest_unique", "player_count": 4}

    run_serve(recorder, [hello, start(player=3), BYE])

    [(_, match)] = recorder.calls
    assert (match.player, match.player_count) == (3, 4)


def test_it_counts_two_players_when_the_hello_does_not_say() -> None:
    recorder = Recorder()

    run_serve(recorder, [HELLO, start(), BYE])

    assert recorder.calls[0][1].player_count == 2


def test_it_reports_an_exception_in_act_and_keeps_serving() -> None:
    @agent
    def fragile(turn: Turn) -> Any:
        if turn.step == 0:
            raise ValueError("no idea what to play")
        return turn.legal_actions[-1]

    replies = run_serve(fragile, [HELLO, start(), act(1, step=0), act(2, step=1), BYE])

    assert replies[1] == {
        "type": "error",
        "id": 1,
        "message": "ValueError: no idea what to play",
    }
    assert replies[2] == {"type": "action", "id": 2, "action": 6}


def test_it_logs_the_traceback_of_a_failing_act_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @agent
    def fragile(turn: Turn) -> Any:
        raise KeyError("board")

    run_serve(fragile, [HELLO, start(), act(1), BYE])
    assert "Traceback" in capsys.readouterr().err


def test_it_reports_an_action_that_is_not_json_as_an_error() -> None:
    @agent
    def returns_a_set(turn: Turn) -> Any:
        return {1, 2}

    replies = run_serve(returns_a_set, [HELLO, start(), act(3), BYE])
    assert replies[1]["type"] == "error"
    assert replies[1]["id"] == 3
    assert "not JSON serializable" in replies[1]["message"]


def test_it_reports_running_out_of_memory_as_its_own_kind() -> None:
    @agent
    def greedy(turn: Turn) -> Any:
        raise MemoryError

    replies = run_serve(greedy, [HELLO, start(), act(5), BYE])
    assert replies[1]["type"] == "error"
    assert replies[1]["id"] == 5
    assert replies[1]["kind"] == "memory"


def test_it_stops_at_bye() -> None:
    recorder = Recorder()
    replies = run_serve(recorder, [HELLO, BYE, start(), act(1)])
    assert [reply["type"] for reply in replies] == ["ready"]
    assert recorder.calls == []


def test_it_stops_when_the_stream_ends() -> None:
    replies = run_serve(Recorder(), [HELLO, start(), act(1)])
    assert [reply["type"] for reply in replies] == ["ready", "action"]


def test_it_calls_the_decorator_hooks() -> None:
    events: list[str] = []

    @agent
    def hooked(turn: Turn) -> Any:
        events.append("act")
        return 0

    @hooked.on_start
    def begin(match: Match) -> None:
        events.append(f"start {match.index}")

    @hooked.on_end
    def finish(result: Result) -> None:
        events.append(f"end {result.outcome}")

    run_serve(hooked, [HELLO, start(match=3), act(1), end("draw", match=3), BYE])
    assert events == ["start 3", "act", "end draw"]


def test_turn_random_is_seeded_by_match_seed_and_player() -> None:
    @agent
    def dice(turn: Turn) -> Any:
        return turn.random.randrange(1_000_000)

    def first_draw(seed: int, player: int) -> int:
        replies = run_serve(dice, [HELLO, start(seed=seed, player=player), act(1), BYE])
        return replies[1]["action"]

    assert first_draw(seed=5, player=0) == first_draw(seed=5, player=0)
    assert first_draw(seed=5, player=0) != first_draw(seed=5, player=1)
    assert first_draw(seed=5, player=0) != first_draw(seed=6, player=0)


# -- the Player adapter --------------------------------------------------------------


class RecordingPlayer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def start(self, state: dict, valid_actions: list) -> Any:
        self.calls.append(("start", valid_actions))
        return valid_actions[0]

    def step(self, state: dict, valid_actions: list, prev_reward: float) -> Any:
        self.calls.append(("step", valid_actions, prev_reward))
        return valid_actions[-1]

    def end(self, state: dict, prev_reward: float) -> None:
        self.calls.append(("end", state["board"][0], prev_reward))


def test_player_adapter_starts_each_match_then_steps_then_ends_with_the_reward() -> None:
    player = RecordingPlayer()
    replies = run_serve(
        PlayerAgent(player),
        [
            HELLO,
            *(start(match=0), act(1), act(2), act(3), end("win", match=0)),
            *(start(match=1), act(4), end("loss", match=1)),
            *(start(match=2), act(5), act(6), end("draw", match=2)),
            BYE,
        ],
    )
    legal = [0, 1, 2, 3, 4, 5, 6]
    assert player.calls == [
        ("start", legal),
        ("step", legal, 0),
        ("step", legal, 0),
        ("end", 2, 1),
        ("start", legal),
        ("end", 2, -1),
        ("start", legal),
        ("step", legal, 0),
        ("end", 2, 0),
    ]
    assert [reply.get("action") for reply in replies[1:]] == [0, 6, 6, 0, 0, 6]
    assert replies[0]["name"] == "RecordingPlayer"


def test_player_adapter_works_without_an_end_method() -> None:
    class Minimal:
        def start(self, state: dict, valid_actions: list) -> Any:
            return valid_actions[0]

        def step(self, state: dict, valid_actions: list, prev_reward: float) -> Any:
            return valid_actions[0]

    replies = run_serve(PlayerAgent(Minimal()), [HELLO, start(), act(1), end(), BYE])
    assert replies[1]["action"] == 0


# -- the Kaggle adapter --------------------------------------------------------------


def test_kaggle_adapter_gives_attribute_access_and_the_time_bank() -> None:
    seen: list[tuple] = []

    def kaggle_agent(observation: Any, configuration: Any) -> int:
        seen.append(
            (
                observation.board is observation["board"],
                observation.mark,
                observation.step,
                observation.remainingOverageTime,
                configuration.columns,
                configuration["rows"],
                configuration.inarow,
                configuration.actTimeout,
                configuration.agentTimeout,
            )
        )
        return observation.mark

    replies = run_serve(KaggleAgent(kaggle_agent), [HELLO, start(), act(9, step=4), BYE])

    assert replies[0]["name"] == "kaggle_agent"
    assert replies[1] == {"type": "action", "id": 9, "action": 2}
    assert seen == [(True, 2, 4, 8.5, 7, 6, 4, 1.0, 15.0)]


def test_kaggle_adapter_passes_only_the_observation_to_a_one_argument_agent() -> None:
    def kaggle_agent(observation: Any) -> int:
        return observation.board[0]

    replies = run_serve(KaggleAgent(kaggle_agent), [HELLO, start(), act(1), BYE])
    assert replies[1]["action"] == 0


class NumpyLikeInt:
    """Stands for ``numpy.int64``: not an int, but has ``item()``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def item(self) -> int:
        return self.value


def test_it_sends_numpy_style_scalars_as_plain_numbers() -> None:
    @agent
    def argmax(turn: Turn) -> NumpyLikeInt:
        return NumpyLikeInt(turn.legal_actions[-1])

    replies = run_serve(argmax, [HELLO, start(), act(1, legal_actions=[0, 6]), BYE])

    assert replies[-1] == {"type": "action", "id": 1, "action": 6}


def test_it_logs_a_failing_end_hook_and_plays_the_next_match(capsys) -> None:
    class FragileEnd(Agent):
        def act(self, turn: Turn) -> Any:
            return turn.legal_actions[0]

        def end(self, result: Result) -> None:
            raise RuntimeError("could not save statistics")

    messages = [HELLO, start(0), act(1), end(match=0), start(1), act(2), BYE]
    replies = run_serve(FragileEnd(), messages)

    assert [reply["type"] for reply in replies] == ["ready", "action", "action"]
    assert "could not save statistics" in capsys.readouterr().err


def test_it_answers_an_act_before_start_with_an_error() -> None:
    @agent
    def first(turn: Turn) -> Any:
        return turn.legal_actions[0]

    replies = run_serve(first, [HELLO, act(5), BYE])

    assert replies[-1] == {"type": "error", "id": 5, "message": "protocol error: act before start"}


@pytest.mark.parametrize(
    "line",
    [b'{"type":"act","id":1}\n', b'{"type":"act","id":1}', b'  {"type":"act","id":1} \r\n'],
)
def test_a_protocol_line_is_one_object_with_whitespace_around_it(line: bytes) -> None:
    assert protocol.decode(line) == {"type": "act", "id": 1}


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"act"} {"type":"act"}\n',
        b'{"type":"act"}x',
        b"",
        b"[1]\n",
        b'{"id":1}',
        b'{"type":"act"',
        b'{"type":"act",}\n',
    ],
)
def test_anything_else_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        protocol.decode(line)


MESSAGE = {"type": "act", "id": 1, "observation": {"board": [0, 1.5, None, True]}, "name": "é\n"}


def test_the_json_module_reads_and_writes_the_same_lines_where_its_c_half_is_missing(
    monkeypatch,
) -> None:
    line = protocol.encode(MESSAGE)
    monkeypatch.setattr(protocol, "_scan", None)
    monkeypatch.setattr(protocol, "_encode", None)

    assert protocol.encode(MESSAGE) == line
    assert protocol.decode(line) == MESSAGE
    assert protocol.decode(b"  " + line) == MESSAGE
    with pytest.raises(ValueError):
        protocol.decode(line + b"x")
