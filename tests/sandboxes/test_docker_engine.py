"""The Docker engine's module: a container's removal survives the engine's race with the
container's own end."""

from __future__ import annotations

import docker.errors
import pytest

from sandboxes import docker_engine


class EndingContainer:
    """A container that the engine fails to kill ``races`` times because it was ending by
    itself (the engine's error, word for word), then removes."""

    attrs = {"Name": "/arena-p1-ending"}

    def __init__(self, races: int) -> None:
        self.races = races
        self.removals = 0

    def remove(self, **options: bool) -> None:
        self.removals += 1
        if self.removals <= self.races:
            raise docker.errors.APIError(
                '500 Server Error: Internal Server Error ("Could not kill running container'
                ' 8baa, cannot remove - Container 8baa is not running")'
            )


def test_a_container_that_ended_while_it_was_being_killed_is_still_removed():
    container = EndingContainer(races=1)

    docker_engine.container_discard(container)  # type: ignore[arg-type]  # a stand-in

    assert container.removals == 2


def test_a_removal_that_keeps_failing_is_reported_not_retried_forever():
    container = EndingContainer(races=docker_engine.REMOVAL_ATTEMPTS)

    with pytest.raises(docker_engine.EngineError, match="cannot remove container arena-p1-ending"):
        docker_engine.container_discard(container)  # type: ignore[arg-type]  # a stand-in

    assert container.removals == docker_engine.REMOVAL_ATTEMPTS
