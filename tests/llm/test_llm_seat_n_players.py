"""An LLM player in a game of four: the harness sets the game up for the duel's count of
players, plays legally from any seat, and its faults cost the three others nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm.config import LLMConfig
from llm.local_server import LocalLLMServer, Reply, rule_based
from referee.duel import run_duel
from referee.results import FaultKind
from sandboxes.base import AgentSource
from sandboxes.llm import LLMSandbox
from tests.support.sandboxes import PLAYERS

RANDOM = AgentSource.from_path(PLAYERS / "lowest_unique" / "random_player.py")


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as local:
        yield local


def play(server, backend, llm_player, brain=rule_based):
    server.brain = brain
    sources = [RANDOM] * 4
    backends = [backend] * 4
    sources[llm_player - 1] = AgentSource.llm("scripted")
    backends[llm_player - 1] = LLMSandbox(
        LLMConfig(base_url=server.url, model="scripted", api_key="sk-test")
    )
    return run_duel(
        "lowest_unique",
        sources,
        backend=tuple(backends),
        seed=3,
        matches=4,
        move_time=1.0,
        time_bank=1.0,
    )


@pytest.mark.parametrize("llm_player", [1, 3])
def test_it_plays_every_seat_of_a_game_of_four_legally(server, backend, llm_player):
    result = play(server, backend, llm_player)

    assert not result.infrastructure_error, result.error_msg
    assert result.as_json()["errors"] == [0, 0, 0, 0]
    seats = {match.transcripts[llm_player]["seat"] for match in result.matches}
    assert seats == {0, 1, 2, 3}
    system = result.matches[0].transcripts[llm_player]["turns"][0]["attempts"][0]["messages"][0]
    assert "against 3 other players" in system["content"]


def test_its_illegal_answers_are_charged_to_it_alone(server, backend):
    result = play(server, backend, 2, brain=lambda request: Reply(text="ANSWER: 99"))

    for match in result.matches:
        assert [(fault.player, fault.kind) for fault in match.faults] == [
            (2, FaultKind.ILLEGAL_ACTION)
        ]
        assert match.scores == [1.0, 0.0, 1.0, 1.0]
