"""Which agent ``arena_sdk`` finds in a user's file, and the ``Struct`` it hands Kaggle agents."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from arena_sdk import (
    Agent,
    AgentNotFound,
    FunctionAgent,
    KaggleAgent,
    PlayerAgent,
    Struct,
    load_agent,
)


@pytest.fixture
def load_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Agent]:
    """Write ``main.py`` (and optional sibling files) and load its agent."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "arena_agent_main", None)

    def load(source: str, **siblings: str) -> Agent:
        for name, sibling_source in siblings.items():
            monkeypatch.delitem(sys.modules, name, raising=False)
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(sibling_source))
        path = tmp_path / "main.py"
        path.write_text(textwrap.dedent(source))
        return load_agent(path)

    return load


def test_it_prefers_a_decorated_function(load_source: Callable[..., Agent]) -> None:
    agent = load_source(
        """
        from arena_sdk import agent

        class Player:
            def start(self, state, valid_actions):
                return valid_actions[0]

        def helper(turn):
            return 0

        @agent
        def chosen(turn):
            return turn.legal_actions[-1]
        """
    )
    assert isinstance(agent, FunctionAgent)
    assert agent.describe() == "chosen"


def test_it_instantiates_the_agent_subclass(load_source: Callable[..., Agent]) -> None:
    agent = load_source(
        """
        from arena_sdk import Agent

        def helper():
            return 1

        class Mine(Agent):
            def act(self, turn):
                return helper()

        def agent(observation, configuration):
            return 0
        """
    )
    assert type(agent).__name__ == "Mine"
    assert agent.describe() == "Mine"


def test_it_ignores_an_agent_base_class_imported_from_a_sibling(
    load_source: Callable[..., Agent],
) -> None:
    agent = load_source(
        """
        from shared_base import Base

        class Mine(Base):
            pass
        """,
        shared_base="""
        from arena_sdk import Agent

        class Base(Agent):
            def act(self, turn):
                return turn.legal_actions[0]
        """,
    )
    assert type(agent).__name__ == "Mine"


def test_it_wraps_a_player_class(load_source: Callable[..., Agent]) -> None:
    agent = load_source(
        """
        class Player:
            def start(self, state, valid_actions):
                return valid_actions[0]

            def step(self, state, valid_actions, prev_reward):
                return valid_actions[0]

        def agent(observation, configuration):
            return 0
        """
    )
    assert isinstance(agent, PlayerAgent)
    assert type(agent.player).__name__ == "Player"


def test_it_takes_the_function_named_agent_even_before_helpers(
    load_source: Callable[..., Agent],
) -> None:
    agent = load_source(
        """
        def agent(observation, configuration):
            return best_column(observation)

        def best_column(observation):
            return 3
        """
    )
    assert isinstance(agent, KaggleAgent)
    assert agent.function.__name__ == "agent"


def test_it_takes_the_last_function_when_none_is_named_agent(
    load_source: Callable[..., Agent],
) -> None:
    agent = load_source(
        """
        import random
        from os.path import join

        def helper(observation):
            return 0

        def my_bot(observation, configuration):
            return helper(observation)
        """
    )
    assert isinstance(agent, KaggleAgent)
    assert agent.function.__name__ == "my_bot"


def test_it_explains_what_to_define_when_nothing_is_found(
    load_source: Callable[..., Agent],
) -> None:
    with pytest.raises(
        AgentNotFound, match=r"no agent found: define a subclass of arena_sdk\.Agent"
    ):
        load_source(
            """
            from os.path import join
            from arena_sdk import Agent, agent

            LIMIT = 3
            """
        )


def test_it_refuses_several_decorated_functions(load_source: Callable[..., Agent]) -> None:
    with pytest.raises(AgentNotFound, match=r"several agents defined \(first, second\)"):
        load_source(
            """
            from arena_sdk import agent

            @agent
            def first(turn):
                return 0

            @agent
            def second(turn):
                return 1
            """
        )


def test_it_refuses_several_agent_subclasses(load_source: Callable[..., Agent]) -> None:
    with pytest.raises(AgentNotFound, match=r"several Agent subclasses defined \(One, Two\)"):
        load_source(
            """
            from arena_sdk import Agent

            class One(Agent):
                pass

            class Two(Agent):
                pass
            """
        )


def test_it_refuses_a_file_that_is_not_python(tmp_path: Path) -> None:
    path = tmp_path / "agent.txt"
    path.write_text("not python")
    with pytest.raises(AgentNotFound, match="not a Python file"):
        load_agent(path)


def test_a_struct_reads_keys_as_attributes() -> None:
    observation = Struct({"board": [0, 1], "mark": 2})
    assert observation.board == [0, 1]
    assert observation["mark"] == observation.mark == 2


def test_a_struct_writes_attributes_as_keys() -> None:
    configuration = Struct()
    configuration.columns = 7
    assert configuration == {"columns": 7}
    assert json.loads(json.dumps(configuration)) == {"columns": 7}


def test_a_struct_raises_attribute_error_for_a_missing_key() -> None:
    observation = Struct(board=[])
    with pytest.raises(AttributeError, match="remainingOverageTime"):
        _ = observation.remainingOverageTime
    assert not hasattr(observation, "step")
    assert getattr(observation, "step", 0) == 0
