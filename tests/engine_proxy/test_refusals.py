"""Hostile calls to the engine proxy, on the real engine: each is refused with 403 and the
rule that refused it, logged, and nothing is created, started, killed or removed.

A container the sandbox would create (``sandbox_container``) passes; each case changes
one thing in it, or makes a call Arena never makes.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.support.engine_proxy import REAL_ENGINE, RunningProxy, engine_proxy_running, raw_call

V = "/v1.41"


@pytest.fixture
def engine() -> Iterator[docker.DockerClient]:
    """The real engine, for what the tests set up and check behind the proxy's back."""
    client = docker.DockerClient(base_url=f"unix://{REAL_ENGINE}")
    yield client
    client.close()


@pytest.fixture
def agent_folder(sandbox_root: Path) -> Path:
    folder = sandbox_root / "docker" / f"agent-{os.urandom(4).hex()}"
    (folder / "run").mkdir(parents=True)
    (folder / "agent").mkdir()
    return folder


def sandbox_container(image: str, folder: Path) -> dict[str, Any]:
    """What ``DockerSandbox`` sends to create an agent's container (Docker SDK 7.1)."""
    return {
        "Hostname": "agent",
        "User": "10001:10001",
        "Tty": False,
        "OpenStdin": False,
        "StdinOnce": False,
        "AttachStdin": False,
        "AttachStdout": False,
        "AttachStderr": False,
        "Env": ["ARENA_SANDBOX=docker", "HOME=/tmp"],
        "Cmd": ["python3", "-c", "import time; time.sleep(60)"],
        "Image": image,
        "Volumes": {"/run/arena": {}, "/agent": {}},
        "NetworkDisabled": False,
        "WorkingDir": "/agent",
        "Labels": {"arena.role": "agent", "arena.owner": "test:1:1", "arena.test": "refusals"},
        "HostConfig": {
            "Memory": 256 * 1024 * 1024,
            "MemorySwap": 256 * 1024 * 1024,
            "ReadonlyRootfs": True,
            "IpcMode": "private",
            "ShmSize": 64 * 1024 * 1024,
            "NetworkMode": "none",
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "Binds": [f"{folder}/run:/run/arena:ro", f"{folder}/agent:/agent:ro"],
            "Ulimits": [{"Name": "nofile", "Soft": 256, "Hard": 256}],
            "LogConfig": {"Type": "json-file", "Config": {"max-size": "262144", "max-file": "1"}},
            "Tmpfs": {"/tmp": "size=64m,mode=1777"},
            "PidsLimit": 64,
            "Init": True,
            "NanoCpus": 1_000_000_000,
        },
    }


def changed(path: str, value: Any) -> Callable[[dict[str, Any], Path], None]:
    """Set ``HostConfig.X`` or a top-level field (``{folder}`` in strings is the agent's)."""

    def change(config: dict[str, Any], folder: Path) -> None:
        *parents, key = path.split(".")
        target = config
        for parent in parents:
            target = target[parent]
        target[key] = json.loads(json.dumps(value).replace("{folder}", str(folder)))

    return change


def removed(path: str) -> Callable[[dict[str, Any], Path], None]:
    def change(config: dict[str, Any], folder: Path) -> None:
        *parents, key = path.split(".")
        target = config
        for parent in parents:
            target = target[parent]
        del target[key]

    return change


def create(proxy: RunningProxy, config: dict[str, Any] | bytes, name: str) -> tuple[int, Any]:
    return raw_call(proxy.socket, "POST", f"{V}/containers/create?name={name}", config)


def named(engine: docker.DockerClient, name: str) -> list[str | None]:
    return [c.name for c in engine.containers.list(all=True, filters={"name": f"^/{name}$"})]


HOSTILE_CONTAINERS = {
    "privileged": (changed("HostConfig.Privileged", True), "HostConfig.Privileged is not allowed"),
    "privileged spelled in lower case": (
        changed("HostConfig.privileged", True),
        "HostConfig.privileged is not allowed",
    ),
    "a bind of /": (changed("HostConfig.Binds", ["/:/agent:ro"]), "is not below an allowed"),
    "a bind of the docker socket": (
        changed("HostConfig.Binds", [f"{REAL_ENGINE}:/run/arena:ro"]),
        "bind source",
    ),
    "a bind with ..": (
        changed("HostConfig.Binds", ["{folder}/agent/../../../../etc:/agent:ro"]),
        "is not a plain absolute path",
    ),
    "a bind through a symbolic link": (
        changed("HostConfig.Binds", ["{folder}/to-root:/agent:ro"]),
        "goes through a symbolic link",
    ),
    "a writable bind": (
        changed("HostConfig.Binds", ["{folder}/agent:/agent:rw"]),
        "must be source:target:ro",
    ),
    "a bind elsewhere in the container": (
        changed("HostConfig.Binds", ["{folder}/agent:/etc:ro"]),
        "bind target '/etc'",
    ),
    "a bind mount": (
        changed("HostConfig.Mounts", [{"Type": "bind", "Source": "/", "Target": "/host"}]),
        "HostConfig.Mounts is not allowed",
    ),
    "volumes from another container": (
        changed("HostConfig.VolumesFrom", ["arena-web"]),
        "HostConfig.VolumesFrom is not allowed",
    ),
    "the host's network": (changed("HostConfig.NetworkMode", "host"), "NetworkMode must be none"),
    "the default network": (removed("HostConfig.NetworkMode"), "NetworkMode must be none"),
    "CAP_SYS_ADMIN": (changed("HostConfig.CapAdd", ["SYS_ADMIN"]), "HostConfig.CapAdd"),
    "capabilities kept": (removed("HostConfig.CapDrop"), "CapDrop must be [ALL]"),
    "a device": (
        changed("HostConfig.Devices", [{"PathOnHost": "/dev/sda", "PathInContainer": "/dev/sda"}]),
        "HostConfig.Devices is not allowed",
    ),
    "the host's pid namespace": (changed("HostConfig.PidMode", "host"), "HostConfig.PidMode"),
    "the host's ipc namespace": (changed("HostConfig.IpcMode", "host"), "HostConfig.IpcMode"),
    "the host's uts namespace": (changed("HostConfig.UTSMode", "host"), "HostConfig.UTSMode"),
    "the host's user namespace": (
        changed("HostConfig.UsernsMode", "host"),
        "HostConfig.UsernsMode",
    ),
    "seccomp unconfined": (
        changed("HostConfig.SecurityOpt", ["no-new-privileges", "seccomp=unconfined"]),
        "SecurityOpt must be no-new-privileges",
    ),
    "unmasked /proc": (changed("HostConfig.MaskedPaths", []), "HostConfig.MaskedPaths"),
    "a writable root": (changed("HostConfig.ReadonlyRootfs", False), "ReadonlyRootfs must be"),
    "a shareable IPC": (changed("HostConfig.IpcMode", "shareable"), "IpcMode must be private"),
    "no IPC mode": (removed("HostConfig.IpcMode"), "IpcMode must be private"),
    "a /dev/shm over the memory": (
        changed("HostConfig.ShmSize", 512 * 1024 * 1024),
        "HostConfig.ShmSize must be set, above 0 and at most",
    ),
    "root": (changed("User", "0:0"), "User must be a numeric uid"),
    "root's group": (changed("User", "10001:0"), "User must be a numeric uid"),
    "a user by name": (changed("User", "root"), "User must be a numeric uid"),
    "no memory limit": (removed("HostConfig.Memory"), "HostConfig.Memory must be set"),
    "too much memory": (changed("HostConfig.Memory", 64 * 1024**3), "HostConfig.Memory"),
    "swap": (changed("HostConfig.MemorySwap", -1), "MemorySwap must equal"),
    "no process limit": (removed("HostConfig.PidsLimit"), "HostConfig.PidsLimit must be set"),
    "no CPU limit": (removed("HostConfig.NanoCpus"), "HostConfig.NanoCpus must be set"),
    "a log sent to syslog": (
        changed("HostConfig.LogConfig", {"Type": "syslog", "Config": {}}),
        "json-file driver",
    ),
    "an unbounded log": (
        changed("HostConfig.LogConfig", {"Type": "json-file", "Config": {}}),
        "max-size (required)",
    ),
    "an executable tmpfs": (
        changed("HostConfig.Tmpfs", {"/tmp": "size=64m,exec"}),
        "tmpfs option 'exec'",
    ),
    "another runtime": (changed("Runtime", "runc"), "container field Runtime"),
    "no Arena label": (changed("Labels", {"purpose": "mine"}), "arena.role must be one of"),
    "another Arena role": (
        lambda config, folder: config["Labels"].update({"arena.role": "base"}),
        "arena.role must be one of",
    ),
    "no owner": (
        lambda config, folder: config["Labels"].pop("arena.owner"),
        "arena.owner must be set",
    ),
    "another container's network": (
        changed("HostConfig.NetworkMode", "container:arena-web"),
        "NetworkMode must be none",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_CONTAINERS, ids=list(HOSTILE_CONTAINERS))
def test_it_refuses_to_create_a_container_with(
    case, engine_proxy, engine, docker_base_image, agent_folder
):
    change, rule = HOSTILE_CONTAINERS[case]
    (agent_folder / "to-root").symlink_to("/")
    config = sandbox_container(docker_base_image, agent_folder)
    change(config, agent_folder)
    name = f"arena-proxy-test-{os.urandom(4).hex()}"

    status, answer = create(engine_proxy, config, name)

    assert status == 403, answer
    assert rule in answer["message"]
    assert answer["message"].startswith("engine proxy: ")
    assert named(engine, name) == []
    assert any(rule in line for line in engine_proxy.refusals())
    assert engine_proxy.forwarded() == []


def test_it_creates_the_sandboxes_container_it_refuses_the_changes_of(
    engine_proxy, engine, docker_base_image, agent_folder
):
    name = f"arena-proxy-test-{os.urandom(4).hex()}"
    status, answer = create(engine_proxy, sandbox_container(docker_base_image, agent_folder), name)
    try:
        assert status == 201, answer
        assert named(engine, name) == [name]
    finally:
        engine.api.remove_container(name, force=True)


def test_it_refuses_a_key_given_twice(engine_proxy, engine, docker_base_image, agent_folder):
    # Python would read the last one, as the engine does; the proxy reads neither.
    document = json.dumps(sandbox_container(docker_base_image, agent_folder))
    twice = document.replace(
        '"ReadonlyRootfs": true', '"ReadonlyRootfs": true, "ReadonlyRootfs": false'
    )
    name = f"arena-proxy-test-{os.urandom(4).hex()}"

    status, answer = create(engine_proxy, twice.encode(), name)

    assert (status, answer["message"]) == (403, "engine proxy: a JSON object repeats a key")
    assert named(engine, name) == []


def test_it_refuses_a_container_from_an_image_that_is_not_arenas(
    engine_proxy, engine, foreign_image, agent_folder
):
    name = f"arena-proxy-test-{os.urandom(4).hex()}"
    status, answer = create(engine_proxy, sandbox_container(foreign_image, agent_folder), name)

    assert status == 403
    assert f"image {foreign_image} is not Arena's" in answer["message"]
    assert named(engine, name) == []


def test_it_refuses_an_oversized_json_body(engine_proxy, engine, docker_base_image, agent_folder):
    config = sandbox_container(docker_base_image, agent_folder)
    config["Env"] = [f"PADDING={'x' * 1024 * 1024}"]
    name = f"arena-proxy-test-{os.urandom(4).hex()}"

    status, answer = create(engine_proxy, config, name)

    assert status == 413
    assert answer["message"] == "engine proxy: the body may be at most 1048576 bytes"
    assert named(engine, name) == []


# -- calls on containers that are not Arena's --------------------------------------------


@pytest.fixture
def foreign_image(engine: docker.DockerClient) -> Iterator[str]:
    """An image without Arena's labels, imported on the real engine (no registry)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo("hello")
        member.size = 6
        archive.addfile(member, io.BytesIO(b"hello\n"))
    tag = f"arena-proxy-test-foreign:{os.urandom(4).hex()}"
    repository, _, version = tag.partition(":")
    engine.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=version)
    yield tag
    engine.images.remove(tag, force=True)


@pytest.fixture
def foreign_container(engine: docker.DockerClient, docker_base_image: str) -> Iterator[str]:
    """A running container without Arena's labels, started on the real engine."""
    container = engine.containers.create(
        docker_base_image, ["sleep", "300"], network_mode="none", labels={"purpose": "not arena"}
    )
    container.start()
    yield str(container.id)
    container.remove(force=True)


@pytest.mark.parametrize(
    "method, action",
    [
        ("GET", "/json"),
        ("POST", "/start"),
        ("POST", "/wait"),
        ("POST", "/kill"),
        ("GET", "/logs?stdout=1&stderr=1"),
        ("DELETE", "?force=1"),
    ],
)
def test_it_refuses_calls_on_a_container_that_is_not_arenas(
    method, action, engine_proxy, engine, foreign_container
):
    status, answer = raw_call(
        engine_proxy.socket, method, f"{V}/containers/{foreign_container}{action}"
    )

    assert status == 403
    assert "is not Arena's" in answer["message"]
    assert engine.containers.get(foreign_container).status == "running"
    assert engine_proxy.forwarded() == []


def test_it_refuses_to_attach_to_a_container_that_is_not_arenas(
    engine_proxy, engine, foreign_container
):
    status, answer = raw_call(
        engine_proxy.socket,
        "POST",
        f"{V}/containers/{foreign_container}/attach?stdin=1&stdout=1&stream=1",
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
    )

    assert status == 403
    assert "is not Arena's" in answer["message"]


@pytest.mark.parametrize(
    "method, action",
    [
        ("POST", "/exec"),
        ("POST", "/stop"),
        ("POST", "/pause"),
        ("PUT", "/archive?path=/"),
        ("GET", "/archive?path=/"),
        ("POST", "/commit"),
    ],
)
def test_it_refuses_calls_arena_never_makes_even_on_its_own_containers(
    method, action, engine_proxy, engine, foreign_container
):
    status, answer = raw_call(
        engine_proxy.socket, method, f"{V}/containers/{foreign_container}{action}", b"{}"
    )

    assert status == 403
    assert "is not a call Arena makes" in answer["message"]
    assert engine_proxy.forwarded() == []
    assert engine.containers.get(foreign_container).status == "running"
    assert engine.containers.get(foreign_container).attrs["ExecIDs"] is None


@pytest.fixture
def started_container(
    engine_proxy, engine, docker_base_image, agent_folder
) -> Iterator[Callable[[str], str]]:
    """Starts a container the sandbox would create (with the given role), made through
    the proxy; returns its name."""
    names: list[str] = []

    def start(role: str) -> str:
        config = sandbox_container(docker_base_image, agent_folder)
        config["Labels"]["arena.role"] = role
        name = f"arena-proxy-test-{os.urandom(4).hex()}"
        names.append(name)
        status, answer = create(engine_proxy, config, name)
        assert status == 201, answer
        engine.api.start(name)
        return name

    yield start
    for name in names:
        engine.api.remove_container(name, force=True)


def pin(proxy: RunningProxy, container: str, body: Any) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    return raw_call(proxy.socket, "POST", f"{V}/containers/{container}/update", data)


def test_it_pins_an_agents_container_to_a_cpu(engine_proxy, engine, started_container):
    name = started_container("agent")

    status, answer = pin(engine_proxy, name, {"CpusetCpus": "0"})

    assert status == 200, answer
    assert engine.api.inspect_container(name)["HostConfig"]["CpusetCpus"] == "0"


@pytest.mark.parametrize("signal", ["STOP", "SIGTERM", "HUP"])
def test_it_kills_an_arena_container_with_sigkill_alone(
    signal, engine_proxy, engine, started_container
):
    # A stopped (SIGSTOP) container would hold its duel's resources without ending; what
    # container_stop sends is SIGKILL, no more than a forced removal does.
    name = started_container("agent")

    status, answer = raw_call(
        engine_proxy.socket, "POST", f"{V}/containers/{name}/kill?signal={signal}"
    )
    assert status == 403, answer
    assert "is not one of KILL" in answer["message"]
    assert engine.containers.get(name).status == "running"

    status, answer = raw_call(engine_proxy.socket, "POST", f"{V}/containers/{name}/kill")
    assert status == 204, answer
    assert engine.containers.get(name).wait(timeout=60)["StatusCode"] == 128 + 9


#: Updates the proxy refuses on an agent's container: (body, the reason it gives).
HOSTILE_UPDATES: dict[str, tuple[Any, str]] = {
    "a memory limit lifted beside the pin": (
        {"CpusetCpus": "0", "Memory": 1 << 40},
        "may set CpusetCpus only",
    ),
    "a process limit lifted": ({"PidsLimit": -1}, "may set CpusetCpus only"),
    "a CPU quota lifted": ({"NanoCpus": 0, "CpuQuota": -1}, "may set CpusetCpus only"),
    "a restart policy": ({"RestartPolicy": {"Name": "always"}}, "may set CpusetCpus only"),
    "a list for a body": (["CpusetCpus", "0"], "may set CpusetCpus only"),
    "a range of CPUs": ({"CpusetCpus": "0-1"}, "must list CPU numbers"),
    "a number for a list": ({"CpusetCpus": 0}, "must list CPU numbers"),
    "an empty list (every CPU)": ({"CpusetCpus": ""}, "must list CPU numbers"),
}


@pytest.mark.parametrize("case", HOSTILE_UPDATES, ids=list(HOSTILE_UPDATES))
def test_it_refuses_to_update_an_agents_container_with(
    case, engine_proxy, engine, started_container
):
    body, rule = HOSTILE_UPDATES[case]
    name = started_container("agent")

    status, answer = pin(engine_proxy, name, body)

    assert status == 403, answer
    assert rule in answer["message"]
    assert [line for line in engine_proxy.forwarded() if "/update" in line] == []
    host = engine.api.inspect_container(name)["HostConfig"]
    assert (host["CpusetCpus"], host["Memory"], host["PidsLimit"]) == ("", 256 * 1024**2, 64)


def test_it_pins_no_container_but_an_agents(
    engine_proxy, engine, started_container, foreign_container
):
    builders = started_container("build")

    for container, rule in (
        (builders, "is not an agent's"),
        (foreign_container, "is not Arena's"),
    ):
        status, answer = pin(engine_proxy, container, {"CpusetCpus": "0"})

        assert status == 403, answer
        assert rule in answer["message"]
        assert engine.api.inspect_container(container)["HostConfig"]["CpusetCpus"] == ""
    assert [line for line in engine_proxy.forwarded() if "/update" in line] == []


# -- images, and everything else -----------------------------------------------------------


def build_query(**changes: str) -> str:
    query = {
        "t": "arena-revision:1-0123456789ab",
        "labels": json.dumps({"arena.role": "revision"}),
        "networkmode": "none",
        "memory": str(1024**3),
        "memswap": str(1024**3),
        "pull": "False",
        **changes,
    }
    return urllib.parse.urlencode({name: value for name, value in query.items() if value})


BASE_LABELS = json.dumps({"arena.role": "base"})
TINY_CONTEXT = b"FROM scratch\nLABEL x=1\n"


def tiny_context() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo("Dockerfile")
        member.size = len(TINY_CONTEXT)
        archive.addfile(member, io.BytesIO(TINY_CONTEXT))
    return buffer.getvalue()


#: What the proxy refuses: (method, path, body: bytes or JSON, the reason it gives).
HOSTILE_CALLS: dict[str, tuple[str, str, Any, str]] = {
    "an image pull": ("POST", "/images/create?fromImage=alpine&tag=latest", None, "'fromImage'"),
    "an import from a URL": (
        "POST",
        "/images/create?fromSrc=http://198.51.100.7/rootfs.tar&repo=arena-rootfs&tag=0123456789abcdef",
        b"",
        "is not one of -",
    ),
    "an import of the base image": (
        "POST",
        "/images/create?fromSrc=-&repo=arena-rootfs&tag=0123456789abcdef&changes=LABEL+arena.role%3Drootfs",
        b"",
        "the base image is the operator's",
    ),
    "a build on the host's network": (
        "POST",
        f"/build?{build_query(networkmode='host')}",
        tiny_context(),
        "is not one of none",
    ),
    "a build with the default network": (
        "POST",
        f"/build?{build_query(networkmode='')}",
        tiny_context(),
        "'networkmode' is required",
    ),
    "a build that pulls": (
        "POST",
        f"/build?{build_query(pull='1')}",
        tiny_context(),
        "pull must be false",
    ),
    "a build from a remote context": (
        "POST",
        f"/build?{build_query(remote='https://198.51.100.7/x.git')}",
        b"",
        "'remote'",
    ),
    "a build with extra hosts": (
        "POST",
        f"/build?{build_query(extrahosts='db:10.0.0.5')}",
        tiny_context(),
        "'extrahosts'",
    ),
    "a build with BuildKit": (
        "POST",
        f"/build?{build_query(version='2')}",
        tiny_context(),
        "'version'",
    ),
    "a build without a memory limit": (
        "POST",
        f"/build?{build_query(memory='', memswap='')}",
        tiny_context(),
        "'memory' is required",
    ),
    "a build in another cgroup": (
        "POST",
        f"/build?{build_query(cgroupparent='/')}",
        tiny_context(),
        "'cgroupparent'",
    ),
    "a build tagged as another image": (
        "POST",
        f"/build?{build_query(t='arena-proxy-test-other:deployed')}",
        tiny_context(),
        "workers may only write",
    ),
    "a build of the base image": (
        "POST",
        "/build?" + build_query(t="arena-base:0123456789abcdef", labels=BASE_LABELS),
        tiny_context(),
        "the base image is the operator's",
    ),
    "a build with a compressed context": (
        "POST",
        f"/build?{build_query()}",
        tiny_context(),
        "plain tar archive",
    ),
    "a listing of every container": (
        "GET",
        "/containers/json?all=1",
        None,
        "'filters' is required",
    ),
    "a listing of other containers": (
        "GET",
        "/containers/json?filters="
        + urllib.parse.quote(json.dumps({"label": ["arena.role=rootfs"]})),
        None,
        "filters must select arena.role=",
    ),
    "a prune of every image": ("POST", "/images/prune", None, "'filters' is required"),
    "a prune of the base images": (
        "POST",
        "/images/prune?filters="
        + urllib.parse.quote(json.dumps({"dangling": ["true"], "label": ["arena.role=base"]})),
        None,
        "filters must select arena.role=<one of revision-deps>",
    ),
    "a forced image removal": (
        "DELETE",
        "/images/arena-revision:1-0123456789ab?force=1",
        None,
        "force must be false",
    ),
    "a volume": ("POST", "/volumes/create", {"Name": "arena-proxy-test"}, "not a call Arena makes"),
    "a network": ("POST", "/networks/create", {"Name": "arena-proxy-test"}, "not a call Arena"),
    "the swarm": ("POST", "/swarm/init", {}, "is not a call Arena makes"),
    "the swarm's secrets": ("GET", "/secrets", None, "is not a call Arena makes"),
    "a plugin": ("POST", "/plugins/pull?remote=evil/plugin", [], "is not a call Arena makes"),
    "the engine's events": ("GET", "/events", None, "is not a call Arena makes"),
    "the engine's information": ("GET", "/info", None, "is not a call Arena makes"),
    "a build session": ("POST", "/session", None, "is not a call Arena makes"),
    "an unknown path": ("GET", "/nothing/here", None, "is not a call Arena makes"),
    "a path that climbs": ("GET", "/containers/../info", None, "is not a path the proxy forwards"),
}


@pytest.mark.parametrize("case", HOSTILE_CALLS, ids=list(HOSTILE_CALLS))
def test_it_refuses(case, engine_proxy, engine):
    method, path, body, rule = HOSTILE_CALLS[case]
    headers = {"Content-Type": "application/tar"}
    if case == "a build with a compressed context":
        headers["Content-Encoding"] = "gzip"
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body

    status, answer = raw_call(engine_proxy.socket, method, f"{V}{path}", data, headers)

    assert status == 403, answer
    assert rule in answer["message"]
    # Nothing but inspections reached the engine (other tests may share it: no census).
    assert engine_proxy.forwarded() == []
    for image in images_named(path):
        with pytest.raises(docker.errors.ImageNotFound):
            engine.images.get(image)


def images_named(path: str) -> list[str]:
    """The images a build, an import or a pull at ``path`` would have made."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    names = query.get("t", [])
    for repository in query.get("repo", []) + query.get("fromImage", []):
        names.append(f"{repository}:{query.get('tag', ['latest'])[0]}")
    return names


def test_it_refuses_to_remove_or_show_an_image_that_is_not_arenas(
    engine_proxy, engine, foreign_image
):
    for method, path in [
        ("DELETE", f"/images/{foreign_image}"),
        ("GET", f"/images/{foreign_image}/json"),
    ]:
        status, answer = raw_call(engine_proxy.socket, method, f"{V}{path}")

        assert status == 403
        assert f"image {foreign_image} is not Arena's" in answer["message"]
    assert engine.images.get(foreign_image)


def test_it_refuses_to_remove_the_base_image(engine_proxy, engine, docker_base_image):
    status, answer = raw_call(engine_proxy.socket, "DELETE", f"{V}/images/{docker_base_image}")

    assert status == 403
    assert (
        answer["message"]
        == f"engine proxy: image {docker_base_image} is not one workers may remove"
    )
    assert engine.images.get(docker_base_image)


def test_it_passes_on_the_engines_404_for_what_does_not_exist(engine_proxy):
    for path in [
        "/containers/arena-no-such-container/json",
        "/images/arena-revision:1-000000000000/json",
    ]:
        status, answer = raw_call(engine_proxy.socket, "GET", f"{V}{path}")

        assert status == 404
        assert "No such" in answer["message"]


def test_it_answers_502_when_the_engine_does_not_answer_a_lookup(tmp_path):
    # Calls the proxy checks against the engine first: the answer is 502, never a
    # connection closed without a word.
    with engine_proxy_running([tmp_path], engine=str(tmp_path / "no-engine.sock")) as proxy:
        for method, path in [
            ("GET", "/containers/arena-some-container/json"),
            ("DELETE", "/images/arena-revision:1-000000000000"),
            ("POST", "/containers/arena-some-container/start"),
        ]:
            status, answer = raw_call(proxy.socket, method, f"{V}{path}")

            assert status == 502, (method, path, answer)
            assert "the Docker engine does not answer" in answer["message"]


# -- HTTP itself ---------------------------------------------------------------------------


def exchange(proxy: RunningProxy, raw: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(proxy.socket)
        client.sendall(raw)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def test_it_serves_one_request_per_connection_so_none_can_be_smuggled_after_another(
    engine_proxy, engine, docker_base_image, agent_folder
):
    name = f"arena-proxy-test-{os.urandom(4).hex()}"
    config = sandbox_container(docker_base_image, agent_folder)
    config["HostConfig"]["Privileged"] = True
    body = json.dumps(config).encode()
    second = (
        f"POST {V}/containers/create?name={name} HTTP/1.1\r\nHost: docker\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    answer = exchange(
        engine_proxy, f"GET {V}/_ping HTTP/1.1\r\nHost: docker\r\n\r\n".encode() + second
    )

    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert answer.count(b"HTTP/1.1") == 1
    assert named(engine, name) == []


def test_it_refuses_a_body_with_two_framings(engine_proxy):
    raw = (
        f"POST {V}/containers/create HTTP/1.1\r\nHost: docker\r\nContent-Length: 4\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ).encode()

    answer = exchange(engine_proxy, raw)

    assert answer.startswith(b"HTTP/1.1 400 Bad Request")
    assert b"only a chunked body without Content-Length is accepted" in answer


def test_it_refuses_a_declared_oversized_body_without_reading_it(engine_proxy):
    raw = (
        f"POST {V}/containers/create HTTP/1.1\r\nHost: docker\r\n"
        f"Content-Type: application/json\r\nContent-Length: {10 * 1024**3}\r\n\r\n{{"
    ).encode()

    answer = exchange(engine_proxy, raw)

    assert answer.startswith(b"HTTP/1.1 413 Payload Too Large")
