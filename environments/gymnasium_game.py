"""Gymnasium environments as one-player Arena games.

A game folder whose ``info.yml`` names a Gymnasium id (``gymnasium: CartPole-v1``) needs no
``environment.py``: the registry builds its class here. The episode is the match: the
agent is seat 0, ``reset(seed)`` seeds Gymnasium's own generator, so the seed and the
list of actions replay the episode exactly, and the episode ends when the environment
terminates it or its time limit truncates it. The match's score is the episode's return.

Only discrete action spaces are offered (the legal actions are listed in every request).
Observations are JSON: a ``Box`` as a flat list of floats, a ``Discrete`` as an int, a
``Tuple`` as a list.
"""

from __future__ import annotations

import html
from typing import Any, ClassVar

import gymnasium
import numpy
from gymnasium import spaces

from environments.base import JSON, Environment, IllegalAction, require_int
from environments.gymnasium_views import gymnasium_view

#: What each action of a Gymnasium game does, by Gymnasium id, as its documentation says
#: (action 0 first): the names move lists and the play page show. A game not listed here
#: shows the action's number.
ACTION_NAMES: dict[str, tuple[str, ...]] = {
    "CartPole-v1": ("push left", "push right"),
    "Acrobot-v1": ("torque -1", "no torque", "torque +1"),
    "MountainCar-v0": ("accelerate left", "no acceleration", "accelerate right"),
    "FrozenLake-v1": ("left", "down", "right", "up"),
}


def jsonable(value: Any) -> JSON:
    """A Gymnasium observation as plain JSON values (NumPy arrays and scalars unwrapped)."""
    if isinstance(value, numpy.ndarray):
        return value.ravel().tolist()
    if isinstance(value, numpy.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [jsonable(item) for item in value]
    return value


class GymnasiumEnvironment(Environment):
    """One Gymnasium environment; subclasses set ``name``, ``gymnasium_id`` and ``options``."""

    num_players = 1
    gymnasium_id: ClassVar[str] = ""
    #: Keyword arguments of ``gymnasium.make`` (a FrozenLake map), sent to agents as the
    #: game's configuration.
    options: ClassVar[dict[str, JSON]] = {}

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        # The checker only warns about environments Gymnasium itself ships.
        self.gym = gymnasium.make(self.gymnasium_id, disable_env_checker=True, **self.configuration)
        action_space = self.gym.action_space
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"{self.gymnasium_id}: only discrete action spaces can be played, "
                f"not {action_space}"
            )
        self.first_action = int(action_space.start)
        self.action_count = int(action_space.n)
        spec = self.gym.spec
        self.max_steps: int | None = spec.max_episode_steps if spec is not None else None
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return dict(cls.options)

    def _reset(self) -> None:
        observation, _ = self.gym.reset(seed=self.seed)
        self.current: JSON = jsonable(observation)
        self.last_action: int | None = None
        self.last_reward = 0.0
        self.total = 0.0
        self.terminated = False
        self.truncated = False

    def to_move(self) -> list[int]:
        return [] if self.is_terminal() else [0]

    def legal_actions(self, player: int) -> list[JSON]:
        if self.is_terminal() or player != 0:
            return []
        return list(range(self.first_action, self.first_action + self.action_count))

    def check_action(self, player: int, action: JSON) -> None:
        if self.is_terminal():
            raise IllegalAction(player, "the episode is already over")
        if player != 0:
            raise IllegalAction(player, "this game has one player")
        last = self.first_action + self.action_count - 1
        require_int(player, action, self.first_action, last, "action")

    def _apply(self, actions: dict[int, JSON]) -> None:
        action = actions[0]
        observation, reward, terminated, truncated, _ = self.gym.step(action)
        self.current = jsonable(observation)
        self.last_action = action
        self.last_reward = float(reward)
        self.total += self.last_reward
        self.terminated = bool(terminated)
        self.truncated = bool(truncated)

    def describe_action(self, action: JSON) -> str:
        names = ACTION_NAMES.get(self.gymnasium_id, ())
        if isinstance(action, int) and not isinstance(action, bool):
            index = action - self.first_action
            if 0 <= index < len(names):
                return names[index]
        return super().describe_action(action)

    def observation(self, player: int) -> dict[str, JSON]:
        return {"observation": self.current, "step": self.step_count, "return": self.total}

    def is_terminal(self) -> bool:
        return self.terminated or self.truncated

    def winner(self) -> int | None:
        return None

    def scores(self) -> list[float]:
        """The episode's return so far (its final return once terminal)."""
        return [self.total]

    def state(self) -> dict[str, JSON]:
        return {
            "step": self.step_count,
            "observation": self.current,
            "action": self.last_action,
            "reward": self.last_reward,
            "return": self.total,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }

    def _ending(self) -> str:
        if self.terminated:
            return "terminated"
        if self.truncated:
            return f"truncated at the time limit of {self.max_steps} steps"
        return "running"

    def _grid(self) -> str:
        """A grid world's map (FrozenLake) with the agent's cell as ``@``; else nothing."""
        desc = getattr(self.gym.unwrapped, "desc", None)
        if desc is None or not isinstance(self.current, int):
            return ""
        rows = [[cell.decode() for cell in row] for row in desc]
        width = len(rows[0])
        row, column = divmod(self.current, width)
        rows[row][column] = "@"
        return "\n".join("".join(cells) for cells in rows)

    def render_text(self) -> str:
        action = "-" if self.last_action is None else str(self.last_action)
        lines = [
            f"step {self.step_count} · action {action} · reward {self.last_reward:g} · "
            f"return {self.total:g} · {self._ending()}",
            f"observation {self.current}",
        ]
        grid = self._grid()
        return "\n".join([*lines, grid] if grid else lines)

    def view(self) -> dict[str, JSON]:
        """The drawing of the task's state (``gymnasium_views``); the text of the state for
        a task without a drawer."""
        drawn = gymnasium_view(self.gym, self.current, self.last_action)
        return drawn if drawn is not None else super().view()

    def render_html(self) -> str:
        prefix = self.name.replace("_", "-")
        return (
            f'<div class="{prefix}">'
            f'<pre class="{prefix}-trace">{html.escape(self.render_text())}</pre></div>'
        )


def gymnasium_environment_class(
    name: str, gymnasium_id: str, options: dict[str, JSON]
) -> type[GymnasiumEnvironment]:
    """The game class of a folder whose ``info.yml`` names ``gymnasium_id``."""
    return type(
        f"Gymnasium_{name}",
        (GymnasiumEnvironment,),
        {"name": name, "gymnasium_id": gymnasium_id, "options": dict(options)},
    )
