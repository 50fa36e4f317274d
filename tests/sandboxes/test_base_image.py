"""The docker sandbox's base image: named by its inputs, built offline once, then reused."""

from __future__ import annotations

import shutil
import tarfile
import time
from pathlib import Path

import arena_sdk
import pytest

from sandboxes import base_image, docker_engine, docker_images
from sandboxes.base_image import (
    DOCKERFILE,
    SDK_DIR,
    BaseImageError,
    base_image_build,
    base_image_recipe,
)
from tests.support.docker import docker_base_image

__all__ = ["docker_base_image"]


@pytest.fixture
def sdk_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "arena_sdk"
    shutil.copytree(SDK_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_it_names_the_image_by_its_inputs(sdk_copy):
    first = base_image_recipe("debootstrap", sdk_dir=sdk_copy)
    again = base_image_recipe("debootstrap", sdk_dir=sdk_copy)
    (sdk_copy / "agent.py").write_text((sdk_copy / "agent.py").read_text() + "\n# changed\n")
    after_sdk_change = base_image_recipe("debootstrap", sdk_dir=sdk_copy)

    assert first.tag == again.tag
    assert first.tag.startswith("arena-base:")
    assert after_sdk_change.tag != first.tag
    # The Debian root file system does not depend on the SDK: it is not made again.
    assert after_sdk_change.rootfs_tag == first.rootfs_tag


def test_it_names_the_image_by_its_dockerfile_and_source(tmp_path, sdk_copy):
    edited = tmp_path / "Dockerfile"
    edited.write_text(DOCKERFILE.read_text() + "\nLABEL edited=1\n")

    debootstrap = base_image_recipe("debootstrap", sdk_dir=sdk_copy)
    registry = base_image_recipe("dockerfile", sdk_dir=sdk_copy)
    with_edit = base_image_recipe("debootstrap", dockerfile=edited, sdk_dir=sdk_copy)

    assert len({debootstrap.tag, registry.tag, with_edit.tag}) == 3
    assert registry.rootfs_tag is None
    assert registry.buildargs["BASE"] == "python:3.11-slim"
    assert debootstrap.buildargs["BASE"] == debootstrap.rootfs_tag


def test_it_refuses_an_unknown_source():
    with pytest.raises(BaseImageError, match="debootstrap, dockerfile"):
        base_image_recipe("floppy")


def test_it_builds_the_base_image_offline_then_reuses_it(docker_base_image):
    again = base_image_build()

    assert again.tag == docker_base_image
    assert again.built is False
    labels = docker_images.image_labels(docker_base_image)
    assert labels["arena.role"] == "base"
    assert labels["arena.source"] == "debootstrap"


def test_it_holds_python_numpy_the_sdk_and_an_unprivileged_user(docker_base_image):
    script = (
        "import os, numpy, arena_sdk, arena_sdk.bridge; "
        "print(os.getuid(), os.getgid(), numpy.__name__, arena_sdk.__version__)"
    )
    labels = {"arena.test": f"base-image-{time.monotonic_ns()}"}
    with docker_engine.running_container(
        image=docker_base_image,
        command=["python3", "-c", script],
        role="test",
        labels=labels,
        network_mode="none",
    ) as container:
        deadline = time.monotonic() + 30
        while (state := docker_engine.container_state(container)).running:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        output = docker_engine.container_logs(container, stdout=True, stderr=True).decode()

    assert state.exit_code == 0, output
    assert output.split() == ["10001", "10001", "numpy", arena_sdk.__version__]
    assert docker_engine.containers_labelled(labels) == []


def test_its_root_file_system_keeps_its_modes_when_arena_makes_its_data_private_meanwhile(
    tmp_path, monkeypatch
):
    """The cache is one of Arena's data folders, which a Django process that starts while
    debootstrap runs makes owner-only (``core.private_data.make_owner_only``, the same as
    ``chmod -R go-rwx``). The root file system being made must not be in its reach: an
    image whose /usr only root may enter runs no agent (CI's run 29 once built one)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    fake = tmp_path / "debootstrap"
    # Called as debootstrap --variant=... --include=... SUITE ROOT MIRROR.
    fake.write_text(
        '#!/bin/sh\nset -e\nroot="$4"\n'
        'mkdir -p "$root/usr/bin" "$root/etc"\n'
        'chmod 755 "$root" "$root/usr" "$root/usr/bin" "$root/etc"\n'
        f"chmod -R go-rwx {cache}\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(base_image.shutil, "which", lambda name: str(fake))
    monkeypatch.setattr(base_image.os, "geteuid", lambda: 0)

    tarball = base_image._debootstrap_tarball(cache, "test", mirror="unused", report=print)

    with tarfile.open(tarball) as archive:
        modes = {member.name: member.mode for member in archive.getmembers()}
    assert modes["./usr"] == modes["./usr/bin"] == modes["./etc"] == 0o755, modes
