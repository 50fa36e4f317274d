"""The policy alone, without an engine: what the Docker SDK makes of the docker sandbox's
options is exactly what the create rules accept, and the rules read JSON as the engine does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

# The SDK's own (private) translation of ``containers.create``'s options into the body it
# sends: the policy must accept exactly what the SDK sends.
from docker.models.containers import _create_container_args  # type: ignore[attr-defined]

from engine_proxy.container_config import check_container_config
from engine_proxy.policy import Policy, Refused
from engine_proxy.routes import route
from engine_proxy.server import _strict_json
from sandboxes.base import SandboxLimits
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import confinement
from sandboxes.docker_engine import LABEL_OWNER, LABEL_ROLE


def as_the_sdk_sends_it(image: str, options: dict[str, Any], labels: dict[str, str]) -> Any:
    """The body of ``containers.create(image, ..., **options)`` (Docker SDK 7.1, API 1.41)."""
    api = docker.APIClient(base_url="unix:///nonexistent", version="1.41")
    arguments = _create_container_args(
        {"image": image, "command": ["true"], "labels": labels, "version": "1.41", **options}
    )
    arguments.pop("name", None)
    host_config = arguments.pop("host_config")
    config = api.create_container_config(**arguments)
    config["HostConfig"] = host_config
    # What _post_json sends: no null at the top.
    return json.loads(
        json.dumps({key: value for key, value in config.items() if value is not None})
    )


@pytest.fixture
def rules(tmp_path: Path) -> Policy:
    return Policy(
        bind_roots=(str(tmp_path.resolve()),),
        max_memory_bytes=4 * 1024**3,
        max_nano_cpus=2_000_000_000,
        max_pids=1024,
    )


def sdk_options(options: dict[str, Any]) -> dict[str, Any]:
    """``docker_engine.container_start``'s translation of ulimits and the log cap."""
    options = dict(options)
    options["ulimits"] = [
        docker.types.Ulimit(name=name, soft=soft, hard=hard)
        for name, (soft, hard) in options.get("ulimits", {}).items()
    ]
    options["log_config"] = docker.types.LogConfig(
        type="json-file", config={"max-size": str(options.pop("log_max_bytes")), "max-file": "1"}
    )
    return options


@pytest.mark.parametrize("server", [False, True], ids=["agent", "fork-server"])
def test_it_accepts_the_docker_sandboxs_container_as_the_sdk_sends_it(rules, tmp_path, server):
    folder = tmp_path / "docker" / "agent-1"
    (folder / "agent").mkdir(parents=True)
    (folder / "run").mkdir()
    options = DockerSandbox(tmp_path)._container_options(
        SandboxLimits(), folder / "agent", folder / "run", files_in_image=False, server=server
    )
    labels = {LABEL_ROLE: "agent", LABEL_OWNER: "host:1:2", "arena.sandbox": "token"}
    config = as_the_sdk_sends_it("arena-base:x", sdk_options(options), labels)

    check_container_config(rules, config)

    assert sorted(config["HostConfig"]["Binds"]) == [
        f"{folder}/agent:/agent:ro",
        f"{folder}/run:/run/arena:ro",
    ]


def test_it_accepts_the_builders_probe_as_the_sdk_sends_it(rules):
    options = sdk_options({**confinement(memory_mb=512, max_processes=64), "network_mode": "none"})
    labels = {LABEL_ROLE: "build", LABEL_OWNER: "host:1:2"}

    check_container_config(rules, as_the_sdk_sends_it("arena-base:x", options, labels))


def test_it_refuses_a_bind_outside_its_roots_even_when_the_sandbox_makes_it(rules):
    elsewhere = Path("/var")
    options = DockerSandbox(elsewhere)._container_options(
        SandboxLimits(), elsewhere, elsewhere, files_in_image=True, server=False
    )
    labels = {LABEL_ROLE: "agent", LABEL_OWNER: "host:1:2"}

    with pytest.raises(Refused, match="is not below an allowed bind root"):
        check_container_config(
            rules, as_the_sdk_sends_it("arena-base:x", sdk_options(options), labels)
        )


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("GET", "/v1.41/containers/abc/json", True),
        ("GET", "/containers/abc/json", True),
        ("POST", "/v1.41/containers/abc/exec", False),
        ("POST", "/v1.41/containers/abc/kill", True),
        ("POST", "/v1.41/containers/abc/stop", False),
        ("GET", "/v1.41/containers/abc/../json", False),
        ("GET", "/v1.41//containers/json", False),
        ("POST", "/v1.41/build", True),
        ("POST", "/v1.41/build/prune", False),
        ("DELETE", "/v1.41/images/arena-revision:1-0123456789ab", True),
        ("POST", "/v1.41/images/arena-revision:1-0123456789ab/tag", False),
        ("POST", "/v1.41/images/load", False),
        ("GET", "/v1.41/images/arena-base:1/get", False),
    ],
)
def test_it_routes_only_the_calls_arena_makes(method, path, allowed):
    if allowed:
        route(method, path)
    else:
        with pytest.raises(Refused):
            route(method, path)


@pytest.mark.parametrize(
    "body, problem",
    [
        (b'{"User": "1", "User": "0"}', "repeats a key"),
        (b'{"Memory": NaN}', "NaN is not JSON the engine reads"),
        (b"{'User': 1}", "not valid JSON"),
    ],
)
def test_it_reads_no_json_the_engine_would_read_otherwise(body, problem):
    with pytest.raises(Refused, match=problem):
        _strict_json(body)
