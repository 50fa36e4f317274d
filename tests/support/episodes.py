"""Episodes of the one-player games played through the real environments, stored as an
evaluation stores them, for the pages that replay them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.models import Evaluation
from environments.base import JSON
from environments.registry import make_environment
from tests.factories import EvaluationFactory, ScoreCompetitionFactory


def balancing(observation: JSON) -> int:
    """CartPole: push towards where the pole is falling (with a little of where the cart
    drifts); it keeps the pole up for the whole 500 steps."""
    assert isinstance(observation, list)
    position, velocity, angle, spin = (float(value) for value in observation)
    return 1 if angle + 0.5 * spin + 0.01 * position + 0.1 * velocity > 0 else 0


def first_action(_observation: JSON) -> int:
    return 0


def played_episode(
    game: str, seed: int, policy: Callable[[JSON], int] = first_action, index: int = 0
) -> dict[str, Any]:
    """An episode of ``game`` from ``seed`` with ``policy``'s actions, as
    ``Evaluation.episodes`` keeps it."""
    environment = make_environment(game)
    environment.reset(seed)
    actions = []
    while not environment.is_terminal():
        action = policy(environment.observation(0)["observation"])
        environment.step({0: action})
        actions.append([action])
    [total] = environment.scores()
    return {
        "index": index,
        "seed": seed,
        "return": total,
        "steps": len(actions),
        "terminated": bool(getattr(environment, "terminated", True)),
        "truncated": bool(getattr(environment, "truncated", False)),
        "error_msg": "",
        "faults": [],
        "actions": actions,
        "timings": [[0.001] for _action in actions],
        "duration": 0.1,
    }


def evaluation_of(game: str, *episodes: dict[str, Any]) -> Evaluation:
    """A played evaluation of a public score competition of ``game`` with ``episodes``."""
    return EvaluationFactory(
        finished=True,
        competition=ScoreCompetitionFactory(
            environment__name=game, episodes=len(episodes), is_public=True
        ),
        seeds=[episode["seed"] for episode in episodes],
        returns=[episode["return"] for episode in episodes],
        episodes=list(episodes),
    )
