"""Arena's own calls through the engine proxy, on the real engine: a duel in the docker
sandbox, a revision-like image with a dependency stage built, run and pruned, a build
cancelled at its deadline, the builder's probe, an attach stream, and the base image's
import and build where the operator allows them. None of them is refused."""

from __future__ import annotations

import io
import os
import socket
import tarfile
import time

import pytest

from referee.duel import run_duel
from sandboxes import docker_engine, docker_images
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import confinement
from sandboxes.docker_engine import LABEL_ROLE, EngineTimeout
from tests.support.docker import REMOVAL_BOUND, containers_left_after_removal
from tests.support.engine_proxy import engine_proxy_running, using_engine_proxy
from tests.support.sandboxes import cpus_seen, player, reports_cpus


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(content)
            archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


def token() -> str:
    return os.urandom(6).hex()


def test_it_plays_a_duel_in_the_docker_sandbox(
    through_engine_proxy, docker_base_image, sandbox_root
):
    label = {"arena.test": f"proxy-duel-{token()}"}
    backend = DockerSandbox(sandbox_root, image=docker_base_image, labels=label, pool_size=2)
    random_player = player("connect_four/random_player.py")
    try:
        first = run_duel("connect_four", (random_player, random_player), backend=backend, seed=3)
        # The second duel takes the containers the pool started through the proxy.
        assert backend.pool is not None and backend.pool.wait_until_ready(120)
        second = run_duel("connect_four", (random_player, random_player), backend=backend, seed=4)
    finally:
        backend.close()

    for result in (first, second):
        assert not result.infrastructure_error
        assert [fault for match in result.matches for fault in match.faults] == []
        assert all(len(match.actions) >= 7 for match in result.matches)
    assert backend.pool is not None and backend.pool.stats["taken"] >= 1
    assert backend.flush(REMOVAL_BOUND)
    assert containers_left_after_removal({LABEL_ROLE: "agent", **label}) == []
    assert through_engine_proxy.refusals() == []


@pytest.mark.usefixtures("cpus_of_their_own", "two_cpus")
def test_it_pins_a_turn_based_duels_containers_to_its_cpu(
    through_engine_proxy, docker_base_image, sandbox_root
):
    label = {"arena.test": f"proxy-pin-{token()}"}
    backend = DockerSandbox(sandbox_root, image=docker_base_image, labels=label)
    # Each agent waits at its first move until the engine has pinned it (a minute at most).
    waiter = reports_cpus(wait_for_one_cpu=True)
    try:
        result = run_duel(
            "connect_four", (waiter, waiter), backend=backend, seed=3, matches=2, move_time=120
        )
    finally:
        backend.close()

    assert not result.infrastructure_error
    seen = [cpus_seen(log) for log in result.logs]
    assert len(seen[0] | seen[1]) == 1 and "," not in next(iter(seen[0])), seen
    assert through_engine_proxy.refusals() == []


DEPENDENCY_STAGE = """\
FROM {base} AS deps
USER 0:0
LABEL arena.role="revision-deps" arena.instance="{instance}"
COPY wheels /tmp/wheels
RUN mkdir -p /opt/arena/deps && python3 -m zipfile -e /tmp/wheels/tiny.whl /opt/arena/deps

FROM {base}
COPY --from=deps /opt/arena/deps /opt/arena/deps
COPY agent /agent
LABEL arena.revision="1" arena.instance="{instance}"
"""


def tiny_wheel() -> bytes:
    buffer = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("tiny.py", "ANSWER = 42\n")
    return buffer.getvalue()


def test_it_builds_runs_and_prunes_an_image_with_a_dependency_stage(
    through_engine_proxy, docker_base_image
):
    instance = f"proxy-test-{token()}"
    tag = f"arena-revision:{int(time.time())}-{token()}"
    context = tar_of(
        {
            "Dockerfile": DEPENDENCY_STAGE.format(
                base=docker_base_image, instance=instance
            ).encode(),
            "wheels/tiny.whl": tiny_wheel(),
            "agent/main.py": b"import tiny\nprint('answer', tiny.ANSWER)\n",
        }
    )
    try:
        log = docker_images.image_build(
            context, tag=tag, role="revision", labels={}, network_mode="none",
            deadline=time.monotonic() + 120,
        )  # fmt: skip
        assert any("Successfully tagged" in line for line in log)
        code, output = docker_engine.container_run(
            image=tag,
            command=["python3", "/agent/main.py"],
            role="build",
            environment={"PYTHONPATH": "/opt/arena/deps"},
            **confinement(memory_mb=256, max_processes=32),
        )
        assert (code, output.strip()) == (0, b"answer 42")
        listed = docker_images.images_labelled({LABEL_ROLE: "revision", "arena.instance": instance})
        assert [image.tags for image in listed] == [(tag,)]
    finally:
        assert docker_images.image_remove(tag)
    assert not docker_images.image_exists(tag)
    deps_stage = {LABEL_ROLE: "revision-deps", "arena.instance": instance}
    assert len(docker_images.images_labelled(deps_stage)) == 1
    assert docker_images.images_prune_dangling(deps_stage) != []
    assert docker_images.images_labelled(deps_stage) == []
    assert through_engine_proxy.refusals() == []


def test_it_cancels_a_build_at_its_deadline_and_removes_its_step_container(
    through_engine_proxy, docker_base_image
):
    instance = f"proxy-test-{token()}"
    step_labels = {LABEL_ROLE: "revision-deps", "arena.instance": instance}
    dockerfile = (
        f"FROM {docker_base_image}\nUSER 0:0\n"
        f'LABEL arena.role="revision-deps" arena.instance="{instance}"\n'
        "RUN echo started && sleep 600\n"
    )
    began = time.monotonic()

    with pytest.raises(EngineTimeout):
        docker_images.image_build(
            tar_of({"Dockerfile": dockerfile.encode()}),
            tag=f"arena-revision:{int(time.time())}-{token()}",
            role="revision", labels={}, network_mode="none", nocache=True,
            deadline=time.monotonic() + 4, step_labels=step_labels,
        )  # fmt: skip

    # The proxy dropped the engine's connection with the client's: the build stopped (a
    # build left running would keep its step container for the step's ten minutes).
    assert time.monotonic() - began < REMOVAL_BOUND
    assert containers_left_after_removal(step_labels) == []
    docker_images.images_prune_dangling(step_labels)


def test_it_lets_a_cancelled_revision_build_remove_the_steps_of_its_last_stage(
    engine_proxy, docker_base_image
):
    """The engine leaves a cancelled build's steps that run no process (created, never
    started); those of a revision's last stage carry ``arena.role=revision`` and the
    revision's labels, and a worker behind the proxy may list and remove them."""
    labels = {LABEL_ROLE: "revision", "arena.revision": f"proxy-test-{token()}"}
    began = time.time()
    # Made on the engine itself, as the engine's builder makes them: a worker could not.
    step = docker_engine.client().containers.create(
        docker_base_image, command=["/bin/sh", "-c", "#(nop) ", "CMD []"], labels=labels
    )
    try:
        with using_engine_proxy(engine_proxy):
            docker_images._discard_step_containers([], None, labels, began=began)
            assert engine_proxy.refusals() == []

        assert containers_left_after_removal(labels) == []
    finally:
        docker_engine.container_discard(step)


def test_it_runs_the_builders_probe_of_an_image(through_engine_proxy, docker_base_image):
    code, output = docker_engine.container_run(
        image=docker_base_image,
        command=["python3", "-c", "import numpy; print(numpy.__version__)"],
        role="build",
        **confinement(memory_mb=512, max_processes=64),
    )

    assert code == 0
    assert output.decode().strip()[:1].isdigit()


def test_it_relays_an_attach_stream_both_ways(through_engine_proxy, docker_base_image):
    with docker_engine.running_container(
        image=docker_base_image,
        command=["cat"],
        role="agent",
        stdin_open=True,
        **confinement(memory_mb=64, max_processes=16),
    ) as container:
        stream = docker_engine.container_attach_socket(container)
        try:
            stream.settimeout(20)
            stream.sendall(b"ping through the proxy\n")
            received = b""
            while b"proxy\n" not in received:
                received += stream.recv(4096)
            # Half a close is passed on: the engine ends the attach stream.
            stream.shutdown(socket.SHUT_WR)
            while stream.recv(4096):
                pass
        finally:
            stream.close()
        # stdout arrives framed: an 8-byte header (stream 1, length) before the payload.
        assert received[:1] == b"\x01"
        assert received[8:] == b"ping through the proxy\n"


def test_it_imports_and_builds_a_base_image_only_where_the_operator_allows_it(
    docker_base_image, sandbox_root
):
    key = token() + "0000"
    rootfs, base = f"arena-rootfs:{key}", f"arena-base:{key}"
    tarball = sandbox_root / "rootfs.tar"
    tarball.write_bytes(tar_of({"etc/arena-test": b"an imported root file system\n"}))
    context = tar_of({"Dockerfile": f"FROM {rootfs}\nCOPY Dockerfile /Dockerfile\n".encode()})
    with (
        engine_proxy_running([sandbox_root]) as proxy,
        using_engine_proxy(proxy),
        pytest.raises(docker_engine.EngineError, match="the base image is the operator's"),
    ):
        docker_images.image_import(tarball, tag=rootfs, role="rootfs", labels={})
    with (
        engine_proxy_running([sandbox_root], "--allow-base-images") as proxy,
        using_engine_proxy(proxy),
    ):
        try:
            docker_images.image_import(tarball, tag=rootfs, role="rootfs", labels={})
            docker_images.image_build(
                context, tag=base, role="base", labels={}, network_mode="none"
            )
            assert docker_images.image_labels(base)[LABEL_ROLE] == "base"
            assert docker_images.image_labels(rootfs)[LABEL_ROLE] == "rootfs"
        finally:
            docker_images.image_remove(base)
            docker_images.image_remove(rootfs)
        assert not docker_images.image_exists(rootfs)
        assert proxy.refusals() == []
