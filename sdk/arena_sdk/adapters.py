"""Running agents written for other platforms, unchanged, and finding the agent in a file.

Two existing styles are adapted:

* Kaggle simulations: a function ``agent(observation, configuration)`` returning an
  action. ``observation`` and ``configuration`` allow both ``obs.board`` and
  ``obs["board"]``; ``observation.step`` and ``observation.remainingOverageTime``
  are filled in, as are ``configuration.actTimeout`` and ``agentTimeout``.
* A ``Player`` class with ``start(state, valid_actions)`` returning the first action
  of a match, ``step(state, valid_actions, prev_reward)`` returning the next ones,
  and ``end(state, prev_reward)``; rewards are 0 during a match and +1, -1 or 0 at
  the end.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types

from arena_sdk.agent import Agent, Match, Result, Turn

TYPE_CHECKING = False  # typing.TYPE_CHECKING without its import (see agent.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Union

    PathLike = Union[str, "os.PathLike[str]"]


class AgentNotFound(Exception):
    pass


class Struct(dict):
    """A dict whose keys are also attributes, like kaggle-environments' observations."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class KaggleAgent(Agent):
    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.name = function.__name__
        self.configuration: Optional[Struct] = None
        # Kaggle passes only the observation to one-argument agents. Imported here: inspect
        # costs every other agent's start about 6 ms.
        import inspect

        try:
            parameters = inspect.signature(function).parameters
            self.arity = len(parameters)
        except (TypeError, ValueError):
            self.arity = 2

    def start(self, match: Match) -> None:
        limits = match.limits
        self.configuration = Struct(
            match.configuration,
            actTimeout=limits.get("move_time"),
            agentTimeout=limits.get("startup_time"),
            timeout=limits.get("move_time"),
        )

    def act(self, turn: Turn) -> Any:
        observation = Struct(
            turn.observation,
            step=turn.step,
            remainingOverageTime=turn.time_bank_left,
        )
        if self.arity == 1:
            return self.function(observation)
        return self.function(observation, self.configuration)


class PlayerAgent(Agent):
    def __init__(self, player: Any) -> None:
        self.player = player
        self.name = type(player).__name__
        self.started = False

    def start(self, match: Match) -> None:
        self.started = False

    def act(self, turn: Turn) -> Any:
        if not self.started:
            self.started = True
            return self.player.start(turn.observation, turn.legal_actions)
        return self.player.step(turn.observation, turn.legal_actions, 0)

    def end(self, result: Result) -> None:
        if hasattr(self.player, "end"):
            self.player.end(result.observation, result.reward)


def load_module(path: PathLike) -> types.ModuleType:
    """Import a user's file; its folder goes first on sys.path so it can import siblings."""
    # os.path rather than pathlib, which costs every agent's start about 3 ms.
    path = os.path.realpath(path)
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("arena_agent_main", path)
    if spec is None or spec.loader is None:
        raise AgentNotFound(f"cannot import {os.path.basename(path)}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def find_agent(module: types.ModuleType) -> Agent:
    """The agent a module defines, in this order of preference:

    1. an ``Agent`` instance (a function decorated with ``@agent``);
    2. a subclass of ``Agent`` defined in the module;
    3. a class named ``Player``;
    4. a function named ``agent``, else the last function the module defines
       (kaggle-environments' rule), called as ``agent(observation, configuration)``.
    """
    own = {
        key: value
        for key, value in vars(module).items()
        if getattr(value, "__module__", None) == module.__name__ or isinstance(value, Agent)
    }
    instances = [value for value in own.values() if isinstance(value, Agent)]
    if len(instances) > 1:
        names = ", ".join(sorted(agent.describe() for agent in instances))
        raise AgentNotFound(f"several agents defined ({names}); keep exactly one")
    if instances:
        return instances[0]
    classes = [
        value
        for value in own.values()
        if isinstance(value, type) and issubclass(value, Agent) and value is not Agent
    ]
    if len(classes) > 1:
        names = ", ".join(sorted(cls.__name__ for cls in classes))
        raise AgentNotFound(f"several Agent subclasses defined ({names}); keep exactly one")
    if classes:
        return classes[0]()
    player_class = own.get("Player")
    if isinstance(player_class, type):
        return PlayerAgent(player_class())
    functions = [value for value in own.values() if isinstance(value, types.FunctionType)]
    if "agent" in own and isinstance(own["agent"], types.FunctionType):
        return KaggleAgent(own["agent"])
    if functions:
        return KaggleAgent(max(functions, key=lambda f: f.__code__.co_firstlineno))
    raise AgentNotFound(
        "no agent found: define a subclass of arena_sdk.Agent, a function decorated "
        "with @arena_sdk.agent, a class Player, or a function agent(observation, "
        "configuration)"
    )


def load_agent(path: PathLike) -> Agent:
    return find_agent(load_module(path))
