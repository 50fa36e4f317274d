"""CartPole: push the cart under the pole (decorator style); holds it for all 500 steps."""

from __future__ import annotations

from arena_sdk import Turn, agent, run


@agent
def balance(turn: Turn) -> int:
    _position, _velocity, angle, angular_velocity = turn.observation["observation"]
    # Push towards the side the pole is falling to, counting where it is heading.
    return 1 if angle + 0.5 * angular_velocity > 0 else 0


if __name__ == "__main__":
    run(balance)
