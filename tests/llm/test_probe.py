"""An LLM player's validation (``llm.probe``): one real request, the game's first move, to
a server on loopback (``llm.local_server``) that answers well, badly, or not at all."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from llm.config import LLMConfig
from llm.local_server import LocalLLMServer, Reply, rule_based
from llm.probe import probe


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as local:
        yield local


def config(url: str) -> LLMConfig:
    return LLMConfig(base_url=url, model="scripted", api_key="sk-probe-never-shown")


@pytest.mark.parametrize("environment", ["tic_tac_toe", "connect_four"])
def test_a_server_that_plays_passes_with_one_request(server, environment):
    server.brain = rule_based

    result = probe(config(server.url), environment, seconds=10)

    assert result.passed, result.message
    assert "answered the first move with a legal one" in result.message
    assert len(server.requests) == 1


def test_an_answer_that_is_no_move_still_passes_and_says_so(server):
    server.brain = lambda request: Reply("I would rather chat about the weather.")

    result = probe(config(server.url), "tic_tac_toe", seconds=10)

    assert result.passed
    assert "not with a legal move (unparseable)" in result.message


def test_a_server_that_refuses_fails_with_its_own_words(server):
    server.brain = lambda request: Reply("The model 'scripted' does not exist", status=404)

    result = probe(config(server.url), "tic_tac_toe", seconds=10)

    assert not result.passed
    assert result.message.startswith("the server could not play:")
    assert "does not exist" in result.message
    assert "sk-probe-never-shown" not in result.message


def test_an_unreachable_server_fails():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    # Nothing listens on the port any more.
    result = probe(config(f"http://127.0.0.1:{port}/v1"), "tic_tac_toe", seconds=5)

    assert not result.passed
    assert "could not play" in result.message


def test_a_server_silent_past_the_clock_fails(server):
    server.brain = lambda request: Reply(rule_based(request).text, delay=5)

    result = probe(config(server.url), "tic_tac_toe", seconds=1)

    assert not result.passed
    assert "gave no answer within 1 s" in result.message


def test_a_game_of_more_players_is_set_up_for_the_environments_count(server):
    server.brain = rule_based

    result = probe(config(server.url), "lowest_unique", seconds=10, players=4)

    assert result.passed, result.message
    # The prompt describes the game of four it will play: three others.
    [request] = server.requests
    assert "3 other players" in str(request["messages"][0]["content"])
