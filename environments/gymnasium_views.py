"""The pictures of Gymnasium's control tasks and grid worlds (``Environment.view``), drawn
by each game's drawer (``environments/<game>/static/<game>.js``).

An episode's page carries one picture a step (500 for a whole CartPole episode), so a
picture holds only the numbers its drawing needs, rounded to what a drawing shows: a
position to the millimetre, an angle to a tenth of a degree. The last action is given as
the direction it pushes (-1, 0, 1), which is what the drawing's arrow shows.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium
from gymnasium.envs.classic_control import AcrobotEnv, CartPoleEnv, MountainCarEnv
from gymnasium.envs.toy_text import FrozenLakeEnv

from environments.base import JSON

#: Each task's actions as the direction they push: CartPole pushes left or right;
#: MountainCar accelerates left, not at all, or right; Acrobot's torque is -1, 0 or +1.
PUSH_OF_ACTION = {
    CartPoleEnv: {0: -1, 1: 1},
    MountainCarEnv: {0: -1, 1: 0, 2: 1},
    AcrobotEnv: {0: -1, 1: 0, 2: 1},
}


def _with_push(view: dict[str, JSON], task: type, action: int | None) -> dict[str, JSON]:
    """``view`` with the direction the last action pushed (no key before the first)."""
    if action is not None:
        view["push"] = PUSH_OF_ACTION[task].get(action, 0)
    return view


def _letter(cell: bytes | str) -> str:
    """A map cell's letter: Gymnasium keeps the map as an array of bytes."""
    return cell.decode() if isinstance(cell, bytes) else cell


def gymnasium_view(
    gym: gymnasium.Env[Any, Any], observation: JSON, action: int | None
) -> dict[str, JSON] | None:
    """The picture of a state of ``gym`` whose observation is ``observation``, after
    ``action`` (None at the start); None for a task without a drawer."""
    task = gym.unwrapped
    if isinstance(task, CartPoleEnv) and isinstance(observation, list):
        # [cart position (m), cart velocity, pole angle (rad, positive leans right),
        # pole angular velocity]
        position, _velocity, angle, _spin = observation
        view: dict[str, JSON] = {
            "kind": "cartpole",
            "x": round(float(position), 3),
            "angle": round(math.degrees(float(angle)), 1),
        }
        return _with_push(view, CartPoleEnv, action)
    if isinstance(task, MountainCarEnv) and isinstance(observation, list):
        # [car position along the valley, velocity]; the goal is at 0.5.
        view = {"kind": "mountain_car", "x": round(float(observation[0]), 3)}
        return _with_push(view, MountainCarEnv, action)
    if isinstance(task, AcrobotEnv) and isinstance(observation, list):
        # [cos θ1, sin θ1, cos θ2, sin θ2, ω1, ω2]: θ1 the upper link's angle from hanging
        # straight down, θ2 the lower link's relative to the upper one.
        cos1, sin1, cos2, sin2 = (float(value) for value in observation[:4])
        view = {
            "kind": "acrobot",
            "angles": [
                round(math.degrees(math.atan2(sin1, cos1)), 1),
                round(math.degrees(math.atan2(sin2, cos2)), 1),
            ],
        }
        return _with_push(view, AcrobotEnv, action)
    if isinstance(task, FrozenLakeEnv) and isinstance(observation, int):
        # The map's rows (S start, F frozen, H hole, G goal) and the agent's cell.
        view = {
            "kind": "frozen_lake",
            "map": ["".join(_letter(cell) for cell in row) for row in task.desc],
            "cell": observation,
        }
        if action is not None:
            # The direction chosen (0 left, 1 down, 2 right, 3 up): on slippery ice the
            # agent may have slid elsewhere.
            view["move"] = action
        return view
    return None
