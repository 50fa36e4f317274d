"""Checks shared by the games' tests (Django-free, like the games)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from environments.base import JSON, Environment, IllegalAction


def refuse(
    environment: Environment, player: int, action: JSON, *, alongside: Mapping[int, JSON] = {}
) -> str:
    """Check that ``action`` is refused for ``player`` without changing anything, both by
    ``check_action`` and by ``step`` (where ``alongside`` are the other players' actions of
    the same step, in a game of simultaneous moves); the reason it gives."""
    before = environment.state()
    with pytest.raises(IllegalAction) as refused:
        environment.check_action(player, action)
    assert refused.value.player == player
    with pytest.raises(IllegalAction) as refused_step:
        environment.step({**alongside, player: action})
    assert refused_step.value.player == player
    assert environment.state() == before
    return refused.value.reason
