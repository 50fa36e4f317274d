"""The base image of the ``docker`` sandbox: Python 3, NumPy, the SDK, an unprivileged user.

No container registry is reachable where Arena's tests run, so by default the image
is built from the Debian mirror alone (``ARENA_BASE_IMAGE_SOURCE=debootstrap``):

1. ``debootstrap --variant=minbase --include=python3,python3-numpy bookworm`` makes a
   root file system, trimmed of package caches and documentation and kept as a
   tarball in the cache folder, so later builds never download Debian again;
2. ``docker import`` loads it as ``arena-rootfs:<hash>``;
3. ``sandboxes/Dockerfile`` adds the SDK and the user on top: ``arena-base:<hash>``.

Where a registry is reachable, ``ARENA_BASE_IMAGE_SOURCE=dockerfile`` builds the same
Dockerfile on ``python:3.11-slim`` with NumPy from PyPI instead.

Tags are hashes of the inputs (recipe version, Debian suite and packages or the
registry base, the Dockerfile, every SDK file), so an image is reused exactly as long
as nothing it was made from has changed; each step is skipped when its result exists.
Debian's package versions are not part of the hash: ``refresh_rootfs`` picks up
updates from the mirror.

The platform passes its settings (``ARENA_BASE_IMAGE_SOURCE``, ``ARENA_DEBIAN_MIRROR``,
``ARENA_BASE_IMAGE_CACHE``) as arguments; the defaults here are theirs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandboxes import docker_engine, docker_images
from sandboxes.base import SandboxError
from sandboxes.locks import folder_lock

#: Bump when the way the image is made changes in a way the other inputs do not show.
RECIPE_VERSION = 1
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = Path(__file__).resolve().parent / "Dockerfile"
SDK_DIR = REPOSITORY_ROOT / "sdk" / "arena_sdk"

SOURCES = ("debootstrap", "dockerfile")
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = ("python3", "python3-numpy")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_CACHE = REPOSITORY_ROOT / "var" / "cache" / "base-image"
REGISTRY_BASE = "python:3.11-slim"
NUMPY_VERSION = "1.26.4"

#: Trimmed from the root file system: nothing an agent runs needs them.
ROOTFS_TRIM = (
    "var/cache/apt",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)


class BaseImageError(SandboxError):
    """The base image cannot be built here; the message says what is missing."""


@dataclasses.dataclass(frozen=True)
class BaseImageRecipe:
    """Everything the base image is made from, and the tags that name the results."""

    source: str
    rootfs_tag: str | None
    tag: str
    #: The Dockerfile and the SDK, as the tar archive the engine builds from.
    context: bytes
    buildargs: dict[str, str]


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        # Length-prefixed, so no two different lists of parts hash alike.
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:16]


def _sdk_files(sdk_dir: Path) -> list[Path]:
    return sorted(path for path in sdk_dir.rglob("*.py") if "__pycache__" not in path.parts)


def _build_context(dockerfile: Path, sdk_dir: Path) -> bytes:
    """Dockerfile and SDK as a tar archive with fixed owners and times, built alike each time."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:

        def add(name: str, content: bytes, mode: int = 0o644) -> None:
            member = tarfile.TarInfo(name)
            member.size = len(content)
            member.mode = mode
            member.mtime = 0
            archive.addfile(member, io.BytesIO(content))

        add("Dockerfile", dockerfile.read_bytes())
        for path in _sdk_files(sdk_dir):
            add(f"arena_sdk/{path.relative_to(sdk_dir).as_posix()}", path.read_bytes())
    return buffer.getvalue()


def base_image_recipe(
    source: str = "debootstrap", *, dockerfile: Path = DOCKERFILE, sdk_dir: Path = SDK_DIR
) -> BaseImageRecipe:
    """The recipe for ``source``: ``debootstrap`` (the Debian mirror only) or ``dockerfile``."""
    if source not in SOURCES:
        raise BaseImageError(f"unknown base image source {source!r}: {', '.join(SOURCES)}")
    context = _build_context(dockerfile, sdk_dir)
    recipe = str(RECIPE_VERSION).encode()
    if source == "debootstrap":
        rootfs_key = _digest(
            recipe, DEBIAN_SUITE.encode(), b"minbase", ",".join(DEBIAN_PACKAGES).encode()
        )
        base = f"arena-rootfs:{rootfs_key}"
        rootfs_tag: str | None = base
    else:
        rootfs_tag = None
        base = REGISTRY_BASE
    buildargs = {"BASE": base, "NUMPY_VERSION": NUMPY_VERSION}
    key = _digest(recipe, source.encode(), base.encode(), NUMPY_VERSION.encode(), context)
    return BaseImageRecipe(
        source=source,
        rootfs_tag=rootfs_tag,
        tag=f"arena-base:{key}",
        context=context,
        buildargs=buildargs,
    )


def base_image_tag(source: str = "debootstrap") -> str:
    """The tag of the base image this checkout makes from ``source``."""
    return base_image_recipe(source).tag


def _debootstrap_tarball(
    folder: Path, key: str, *, mirror: str, report: Callable[[str], None]
) -> Path:
    """The trimmed Debian root file system as a tarball, made once and kept."""
    tarball = folder / f"rootfs-{key}.tar"
    if tarball.exists():
        report(f"using the cached root file system {tarball}")
        return tarball
    if os.geteuid() != 0:
        raise BaseImageError(
            "debootstrap needs root to make the base image's root file system; "
            "run `manage.py build_base_image` as root (or scripts/setup.sh), or set "
            "ARENA_BASE_IMAGE_SOURCE=dockerfile where a registry is reachable"
        )
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if debootstrap is None:
        raise BaseImageError("debootstrap is not installed (apt-get install debootstrap)")
    report(f"debootstrap {DEBIAN_SUITE} with {', '.join(DEBIAN_PACKAGES)} from {mirror}")
    # Staged in the system's temporary folder, not in ``folder``: the cache is among
    # Arena's data folders, which a Django process that starts meanwhile makes owner-only
    # if they are open to others (core.private_data), and in a half-made root file system
    # that would leave /usr and /etc unreadable to the agents' user.
    staging = Path(tempfile.mkdtemp(prefix="arena-rootfs-"))
    partial = folder / f".rootfs-{key}.tar.partial"
    try:
        root = staging / "root"
        completed = subprocess.run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(DEBIAN_PACKAGES)}",
                DEBIAN_SUITE,
                str(root),
                mirror,
            ],
            capture_output=True,
            text=True,
        )
        if completed.returncode != 0:
            tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-15:])
            raise BaseImageError(f"debootstrap failed (exit {completed.returncode}):\n{tail}")
        for relative in ROOTFS_TRIM:
            shutil.rmtree(root / relative, ignore_errors=True)
        # Device nodes and kernel file systems come from the engine at run time.
        excluded = ["--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*"]
        completed = subprocess.run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), *excluded, "."],
            capture_output=True,
            text=True,
        )
        if completed.returncode != 0:
            raise BaseImageError(f"cannot pack the root file system: {completed.stderr.strip()}")
        partial.rename(tarball)
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    return tarball


@dataclasses.dataclass(frozen=True)
class BaseImageBuild:
    tag: str
    #: False when an image with this tag already existed and was reused.
    built: bool
    seconds: float


def base_image_build(
    *,
    source: str = "debootstrap",
    mirror: str = DEFAULT_MIRROR,
    cache: Path = DEFAULT_CACHE,
    force: bool = False,
    refresh_rootfs: bool = False,
    report: Callable[[str], None] = lambda line: None,
) -> BaseImageBuild:
    """Make sure the base image exists; returns its tag.

    ``source`` says how (``SOURCES``), ``mirror`` where debootstrap downloads from,
    ``cache`` where the root file system is kept between builds.
    ``force`` rebuilds it even if it exists (from the cached root file system);
    ``refresh_rootfs`` also runs debootstrap again, for Debian's latest packages.
    Raises ``BaseImageError`` when it cannot be built here, ``EngineError`` when the
    Docker engine fails.
    """
    started = time.monotonic()
    recipe = base_image_recipe(source)
    problem = docker_engine.engine_problem()
    if problem:
        raise BaseImageError(f"cannot build the base image: {problem}")
    if not (force or refresh_rootfs) and docker_images.image_exists(recipe.tag):
        report(f"{recipe.tag} exists: reused")
        return BaseImageBuild(recipe.tag, built=False, seconds=time.monotonic() - started)
    folder = cache
    # One build at a time per cache folder: two workers must not debootstrap twice.
    with folder_lock(folder):
        # Another build may have finished while this one waited for the lock.
        if not (force or refresh_rootfs) and docker_images.image_exists(recipe.tag):
            report(f"{recipe.tag} exists: reused")
            return BaseImageBuild(recipe.tag, built=False, seconds=time.monotonic() - started)
        if recipe.rootfs_tag is not None:
            _ensure_rootfs_image(
                recipe.rootfs_tag, folder, mirror=mirror, refresh=refresh_rootfs, report=report
            )
        replaced = docker_images.image_id(recipe.tag)
        report(f"building {recipe.tag} ({recipe.source}, base {recipe.buildargs['BASE']})")
        docker_images.image_build(
            recipe.context,
            tag=recipe.tag,
            role="base",
            labels={"arena.recipe": str(RECIPE_VERSION), "arena.source": recipe.source},
            buildargs=recipe.buildargs,
            pull=recipe.rootfs_tag is None,
            nocache=force or refresh_rootfs,
            # The Debian root file system has all it needs; from a registry's base, pip
            # downloads NumPy.
            network_mode="none" if recipe.rootfs_tag is not None else None,
        )
        if replaced is not None and replaced != docker_images.image_id(recipe.tag):
            # The rebuilt image took the tag: the old one would linger untagged.
            docker_images.image_remove(replaced)
    report(f"built {recipe.tag}")
    return BaseImageBuild(recipe.tag, built=True, seconds=time.monotonic() - started)


def _ensure_rootfs_image(
    tag: str, folder: Path, *, mirror: str, refresh: bool, report: Callable[[str], None]
) -> None:
    key = tag.partition(":")[2]
    if refresh:
        (folder / f"rootfs-{key}.tar").unlink(missing_ok=True)
    elif docker_images.image_exists(tag):
        report(f"{tag} exists: reused")
        return
    tarball = _debootstrap_tarball(folder, key, mirror=mirror, report=report)
    report(f"importing {tarball.name} as {tag}")
    docker_images.image_import(
        tarball,
        tag=tag,
        role="rootfs",
        labels={"arena.recipe": str(RECIPE_VERSION)},
        # An imported file system has no configuration: the Dockerfile's RUN steps need a PATH.
        environment={"PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
