"""The Docker engine's module: a container's removal survives the engine's race with the
container's own end, and a container is stopped, its log whole, before that log is read."""

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


class StoppingContainer:
    """A container as ``container_stop`` finds it: running, stopped already, or removed
    (the engine's errors word for word)."""

    attrs = {"Name": "/arena-server-p1"}

    def __init__(self, state: str) -> None:
        self.state = state
        self.calls: list[str] = []

    def kill(self) -> None:
        self.calls.append("kill")
        if self.state == "removed":
            raise docker.errors.NotFound("404 Client Error: Not Found (No such container: 8baa)")
        if self.state == "stopped":
            raise docker.errors.APIError(
                '409 Client Error: Conflict ("Cannot kill container: 8baa: Container 8baa is'
                ' not running")'
            )

    def wait(self, timeout: float) -> dict[str, int]:
        self.calls.append("wait")
        return {"StatusCode": 137}


@pytest.mark.parametrize("state", ["running", "stopped"])
def test_a_container_is_stopped_and_waited_for_before_its_log_is_read(state):
    # The engine completes a container's log before it calls it stopped: a server that
    # said why it ended and exited is in its log once this returns.
    container = StoppingContainer(state)

    docker_engine.container_stop(container)  # type: ignore[arg-type]  # a stand-in

    assert container.calls == ["kill", "wait"]


def test_stopping_a_removed_container_is_fine():
    container = StoppingContainer("removed")

    docker_engine.container_stop(container)  # type: ignore[arg-type]  # a stand-in

    assert container.calls == ["kill"]
