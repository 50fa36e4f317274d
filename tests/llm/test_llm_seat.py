"""The ``llm`` seat: a model behind an OpenAI-compatible server plays through the referee
like any agent. The server is ``llm.local_server`` on loopback, scripted to answer well,
illegally, unparseably, slowly, with 500 and 429, with broken streams and huge answers;
the official ``openai`` client gets the same answers from it as from a real server, and
the harness sends the official client's requests (``test_provider.py``). Every case is
played with the LLM player first and second, and each ends with its documented outcome:
the model's faults are charged to it alone, the provider's failures end the duel in
error, unrated.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llm import harness
from llm.config import LLMConfig
from llm.local_server import LocalLLMServer, Reply, rule_based
from referee.duel import run_duel
from referee.results import DuelResult, FaultKind, Outcome
from sandboxes.base import AgentSource, SandboxBackend
from sandboxes.llm import LLMSandbox
from tests.support.sandboxes import PLAYERS

KEY = "sk-test-7f3a9c-never-shown"
RANDOM = AgentSource.from_path(PLAYERS / "tic_tac_toe" / "random_player.py")
MOVE_TIME = 1.0
TIME_BANK = 1.0

pytestmark = pytest.mark.parametrize("llm_player", [1, 2], ids=["llm-first", "llm-second"])


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as local:
        yield local


def play(
    server: LocalLLMServer,
    backend: SandboxBackend,
    llm_player: int,
    brain: Callable[[dict[str, Any]], Reply] = rule_based,
    *,
    matches: int = 2,
    **settings: Any,
) -> DuelResult:
    server.brain = brain
    config = LLMConfig(base_url=server.url, model="scripted", api_key=KEY, **settings)
    seat = LLMSandbox(config)
    sources = (AgentSource.llm("scripted"), RANDOM)
    backends: tuple[SandboxBackend, SandboxBackend] = (seat, backend)
    if llm_player == 2:
        sources, backends = (sources[1], sources[0]), (backends[1], backends[0])
    return run_duel(
        "tic_tac_toe",
        sources,
        backend=backends,
        seed=7,
        matches=matches,
        move_time=MOVE_TIME,
        time_bank=TIME_BANK,
        # Every move of the game an agent's: the checks below read each step as a seat's.
        opening_moves=0,
    )


def other(player: int) -> int:
    return 3 - player


def conversation(result: DuelResult, match: int, player: int) -> dict[str, Any]:
    return result.matches[match].transcripts[player]


def assert_key_nowhere(result: DuelResult) -> None:
    assert KEY not in json.dumps(result.as_json(include_logs=True))


def assert_lost_every_match_by(result: DuelResult, player: int, kind: FaultKind) -> None:
    winner = Outcome.PLAYER_1_WIN if player == 2 else Outcome.PLAYER_2_WIN
    assert not result.infrastructure_error
    for match in result.matches:
        assert match.result is winner
        assert [(fault.player, fault.kind) for fault in match.faults] == [(player, kind)]
    # The opponent is charged nothing.
    assert result.errors_of(other(player)) == 0


def scripted(*replies: Reply, then: Callable[[dict[str, Any]], Reply] = rule_based):
    """Answers with ``replies`` in turn, then with ``then``."""
    queue = list(replies)
    lock = threading.Lock()

    def brain(request: dict[str, Any]) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then(request)

    return brain


# --- a model that plays well ---------------------------------------------------------------


def test_it_plays_and_records_every_request_and_answer(server, backend, llm_player):
    result = play(server, backend, llm_player)

    assert result.result is not Outcome.ERROR
    assert result.errors_of(llm_player) == 0
    for match in result.matches:
        record = match.transcripts[llm_player]
        llm_moves = [
            step[record["seat"]] for step in match.actions if step[record["seat"]] is not None
        ]
        assert [turn["action"] for turn in record["turns"]] == llm_moves
        assert record["harness_hash"] and record["harness_version"] == "1"
        for turn in record["turns"]:
            assert turn["outcome"] == "legal"
            [attempt] = turn["attempts"]
            assert attempt["messages"][0]["role"] == "system"
            assert attempt["answer"].endswith(f"ANSWER: {json.dumps(turn['action'])}")
            assert attempt["prompt_tokens"] > 0 and attempt["completion_tokens"] > 0
        assert record["summary"]["moves"] == len(llm_moves)
        # The opponent keeps no conversation.
        assert other(llm_player) not in match.transcripts
    # The key went to the server, and nowhere else.
    assert {headers.get("authorization") for headers in server.headers} == {f"Bearer {KEY}"}
    assert_key_nowhere(result)


# --- the model's faults: charged to it ------------------------------------------------------


def test_it_charges_an_illegal_action_after_two_retries_naming_the_error(
    server, backend, llm_player
):
    result = play(server, backend, llm_player, lambda request: Reply("ANSWER: 99"))

    assert_lost_every_match_by(result, llm_player, FaultKind.ILLEGAL_ACTION)
    assert "99 is illegal: cell 99 is out of range 0..8" in result.matches[0].faults[0].message
    [turn] = conversation(result, 0, llm_player)["turns"]
    assert [attempt["kind"] for attempt in turn["attempts"]] == ["move", "retry", "retry"]
    assert [attempt["verdict"] for attempt in turn["attempts"]] == ["illegal"] * 3
    retry = turn["attempts"][1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "ANSWER: 99"}
    assert "99 is not one of the legal actions" in retry[-1]["content"]
    assert turn["outcome"] == "illegal" and turn["action"] == 99
    assert len(server.requests) == 3 * len(result.matches)


def test_it_charges_an_unparseable_answer_as_an_illegal_action_never_choosing_for_it(
    server, backend, llm_player
):
    result = play(server, backend, llm_player, lambda request: Reply("The centre, I think."))

    assert_lost_every_match_by(result, llm_player, FaultKind.ILLEGAL_ACTION)
    assert "the final line 'ANSWER: <action>' is missing" in result.matches[0].faults[0].message
    [turn] = conversation(result, 0, llm_player)["turns"]
    assert [attempt["verdict"] for attempt in turn["attempts"]] == ["unparseable"] * 3
    assert turn["outcome"] == "unparseable"
    # No move was played for the model: its seat acted in no step of any match.
    for index, match in enumerate(result.matches):
        seat = conversation(result, index, llm_player)["seat"]
        assert all(step[seat] is None for step in match.actions)


def test_it_recovers_when_a_retry_gets_a_legal_answer(server, backend, llm_player):
    result = play(server, backend, llm_player, scripted(Reply("ANSWER: [4]")), matches=1)

    assert result.errors_of(llm_player) == 0
    first = conversation(result, 0, llm_player)["turns"][0]
    # [4] is valid JSON but not a legal action: refused as illegal, then asked again.
    assert [attempt["verdict"] for attempt in first["attempts"]] == ["illegal", "legal"]
    assert first["outcome"] == "legal"
    assert conversation(result, 0, llm_player)["summary"]["retries"] == 1


def test_it_refuses_a_huge_answer_without_reading_it_all(server, backend, llm_player):
    huge = "thinking " * 200_000 + "\nANSWER: 4"
    result = play(server, backend, llm_player, lambda request: Reply(huge), max_answer_chars=5000)

    assert_lost_every_match_by(result, llm_player, FaultKind.ILLEGAL_ACTION)
    [turn] = conversation(result, 0, llm_player)["turns"]
    assert [attempt["verdict"] for attempt in turn["attempts"]] == ["too_long"] * 3
    assert all(len(attempt["answer"]) <= 5000 for attempt in turn["attempts"])


def test_it_loses_on_time_when_the_model_answers_after_its_clock(server, backend, llm_player):
    slow = lambda request: Reply("ANSWER: 4", delay=MOVE_TIME + TIME_BANK + 1)  # noqa: E731
    result = play(server, backend, llm_player, slow)

    assert_lost_every_match_by(result, llm_player, FaultKind.TIMEOUT)
    assert conversation(result, 0, llm_player)["turns"][0]["outcome"] in ("timeout", "unanswered")


# --- the provider's failures: Arena's, never the model's -------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        Reply("overloaded", status=500),
        Reply("slow down", status=429, retry_after=0.1),
        Reply("xxxx " * 3000 + "\nANSWER: 4", truncate=True),
        Reply("bad gateway", status=502),
    ],
    ids=["500", "429-retry-after", "broken-stream", "502"],
)
def test_it_retries_a_failing_provider_and_plays_on(server, backend, llm_player, failure):
    result = play(server, backend, llm_player, scripted(failure), matches=1)

    assert result.result is not Outcome.ERROR
    assert result.errors_of(llm_player) == 0
    first = conversation(result, 0, llm_player)["turns"][0]["attempts"][0]
    [error] = first["provider_errors"]
    assert error["waited_ms"] >= 100
    assert conversation(result, 0, llm_player)["summary"]["provider_retries"] == 1


@pytest.mark.parametrize(
    ("brain", "settings", "said"),
    [
        (lambda request: Reply("overloaded", status=500), {}, "HTTP 500: overloaded"),
        (
            lambda request: Reply("slow down", status=429, retry_after=120),
            {},
            "asked to wait 120 s, more than the 60 s allowed",
        ),
        (
            lambda request: Reply("ANSWER: 4" + " " * 30_000, truncate=True),
            {},
            "the answer's stream",
        ),
        (
            lambda request: Reply("ANSWER: 4", delay=0.5),
            {"request_timeout": 0.2},
            "no answer within 0.2 s), and the move's clock ran out",
        ),
        (
            lambda request: Reply(f"Incorrect API key provided: {KEY}", status=401),
            {},
            "refused the request: HTTP 401: Incorrect API key provided: [the API key]",
        ),
    ],
    ids=["500-always", "429-too-long", "broken-always", "request-timeout", "401"],
)
def test_it_ends_the_duel_in_error_unrated_when_the_provider_keeps_failing(
    server, backend, llm_player, brain, settings, said
):
    result = play(server, backend, llm_player, brain, **settings)

    assert result.result is Outcome.ERROR
    assert "the model's server failed" in result.infrastructure_error
    assert said in result.infrastructure_error
    # Nobody is charged a fault: it is not the model's failure, nor its opponent's.
    assert result.errors_of(1) == result.errors_of(2) == 0
    assert_key_nowhere(result)


def test_a_failing_provider_is_never_the_models_timeout_however_late_the_harness_hears(
    server, backend, llm_player, monkeypatch
):
    # A loaded machine: the harness hears each request long after the referee sent it, so
    # its own deadline, meant to come a little before the referee's, comes long after it,
    # and the provider is still being retried when the referee's clock runs out.
    monkeypatch.setattr(harness, "DEADLINE_MARGIN", -60.0)
    failing = lambda request: Reply("overloaded", status=500)  # noqa: E731
    result = play(server, backend, llm_player, failing, provider_retries=50)

    assert result.result is Outcome.ERROR
    assert "the model's server failed" in result.infrastructure_error
    assert "HTTP 500: overloaded), and the move's clock ran out" in result.infrastructure_error
    assert result.errors_of(1) == result.errors_of(2) == 0


def test_it_gives_up_after_its_retries(server, backend, llm_player):
    calls = itertools.count()

    def failing(request: dict[str, Any]) -> Reply:
        next(calls)
        return Reply("overloaded", status=503, retry_after=0.05)

    result = play(server, backend, llm_player, failing, provider_retries=2, matches=1)

    assert result.result is Outcome.ERROR
    assert "failed 3 times in a row" in result.infrastructure_error
    assert next(calls) == 3
