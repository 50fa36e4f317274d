"""A revision's own image for the docker sandbox: the base image, its dependencies, its files.

The Dockerfile the builder writes (the first stage only when there are wheels)::

    FROM arena-base:<hash> AS deps
    USER 0:0
    COPY wheels /tmp/wheels
    RUN python3 /tmp/wheels/pip-<version>-py3-none-any.whl/pip install --no-index \\
        --no-deps --target /opt/arena/deps /tmp/wheels/<each wheel>...

    FROM arena-base:<hash>
    COPY --from=deps /opt/arena/deps /opt/arena/deps
    COPY agent /agent
    CMD ["python3", "-s", "-B", "-m", "arena_sdk.bridge", ..., "--", <the agent>]

The base image has no pip, so pip runs from its own wheel (a wheel is a zip, and
Python runs pip from it). Two stages keep the wheels themselves out of the image;
the engine keeps the first stage (untagged, labelled ``arena.role=revision-deps``) as
its build cache, so the next revision with the same wheels installs nothing, until
the clean-up removes it a day later. The agent's files are owned by root and
read-only to the agent's user (10001, from the base image), and the command is the
one ``DockerSandbox`` gives its containers (``container_command``), so the image runs
the agent the same way when started by hand.

Builds have no network (``network_mode="none"``), never pull, and stop at the build's
deadline. Images are labelled ``arena.role=revision``, ``arena.revision``,
``arena.environment`` and ``arena.instance``, and tagged
``arena-revision:<revision id>-<first 12 hex digits of the upload's SHA-256>``.
"""

from __future__ import annotations

import functools
import io
import json
import shlex
import tarfile
import tempfile
from pathlib import Path
from typing import IO

from builder.requirements import WheelSet
from sandboxes import docker_engine, docker_images
from sandboxes.base import EntryKind
from sandboxes.docker_container import (
    AGENT_DIR,
    DEPS_PATH,
    SDK_PATH,
    confinement,
    container_command,
)

REPOSITORY = "arena-revision"
ROLE = "revision"
#: The first stage of a build with dependencies, kept by the engine as its cache.
DEPS_ROLE = "revision-deps"
LABEL_ENVIRONMENT = "arena.environment"
LABEL_INSTANCE = "arena.instance"
WHEELS_DIR = "/tmp/wheels"


def revision_image_tag(*, revision_id: int, sha256: str) -> str:
    return f"{REPOSITORY}:{revision_id}-{sha256[:12]}"


@functools.lru_cache(maxsize=8)
def base_numpy_version(base: str) -> str | None:
    """The NumPy version in the image ``base`` (None without NumPy); asked once per image."""
    code, output = docker_engine.container_run(
        image=base,
        command=["python3", "-c", "import numpy; print(numpy.__version__)"],
        role="build",
        timeout=60,
        **confinement(memory_mb=512, max_processes=64),
    )
    text = output.decode("utf-8", errors="replace").strip()
    return text.splitlines()[-1] if code == 0 and text else None


def _label_line(labels: dict[str, str]) -> str:
    return "LABEL " + " ".join(f"{name}={json.dumps(value)}" for name, value in labels.items())


def revision_step_labels(labels: dict[str, str]) -> dict[str, str]:
    """What the image and the containers of the steps of its last stage carry: the
    revision's ``labels`` and its role (a duel's agents of the image are ``agent``'s)."""
    return {"arena.role": ROLE, **labels}


def revision_dockerfile(
    *, base: str, wheels: WheelSet | None, command: list[str], labels: dict[str, str]
) -> str:
    """The Dockerfile of a revision's image; ``labels`` go on the image (one step for all)."""
    lines = []
    if wheels is not None and wheels.wheels and wheels.pip_wheel is not None:
        pip = f"{WHEELS_DIR}/{wheels.pip_wheel.name}/pip"
        install = [
            "python3",
            pip,
            "install",
            "--no-index",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            "--no-warn-script-location",
            "--target",
            DEPS_PATH,
            *[f"{WHEELS_DIR}/{name}" for name in wheels.wheels],
        ]
        # Labelled first, so the containers of its steps carry the instance too.
        stage_labels = {"arena.role": DEPS_ROLE, LABEL_INSTANCE: labels.get(LABEL_INSTANCE, "")}
        lines += [
            f"FROM {base} AS deps",
            "USER 0:0",
            _label_line(stage_labels),
            f"COPY wheels {WHEELS_DIR}",
            # Compiled by pip as it installs: agents run on a read-only root.
            f"RUN {shlex.join(install)} && chmod -R a+rX,go-w {DEPS_PATH}",
            "",
            f"FROM {base}",
            f"COPY --from=deps {DEPS_PATH} {DEPS_PATH}",
            f"ENV PYTHONPATH={SDK_PATH}:{DEPS_PATH}",
        ]
    else:
        lines.append(f"FROM {base}")
    # After the dependencies: a new revision with the same ones reuses their layer. Before
    # the agent's steps: the containers of those steps carry the revision's labels and
    # role, so those a cancelled build leaves are found and removed (revision_step_labels).
    lines += [
        _label_line(revision_step_labels(labels)),
        f"COPY agent {AGENT_DIR}",
        f"CMD {json.dumps(command)}",
    ]
    return "\n".join(lines) + "\n"


def _add_file(archive: tarfile.TarFile, name: str, source: Path | bytes, mode: int) -> None:
    member = tarfile.TarInfo(name)
    member.mode = mode
    member.uid = member.gid = 0  # COPY keeps these: the files are root's
    member.mtime = 0  # the same files make the same layer
    if isinstance(source, bytes):
        member.size = len(source)
        archive.addfile(member, io.BytesIO(source))
    else:
        member.size = source.stat().st_size
        with open(source, "rb") as content:
            archive.addfile(member, content)


def _add_folder(archive: tarfile.TarFile, name: str) -> None:
    member = tarfile.TarInfo(name)
    member.type = tarfile.DIRTYPE
    member.mode = 0o755
    archive.addfile(member)


def revision_build_context(
    context: IO[bytes], *, dockerfile: str, agent_dir: Path, wheels: WheelSet | None
) -> None:
    """Write the tar archive the engine builds from into ``context`` (a file: wheels can
    be large), and rewind it."""
    with tarfile.open(fileobj=context, mode="w") as archive:
        _add_file(archive, "Dockerfile", dockerfile.encode(), 0o644)
        _add_folder(archive, "agent")
        for path in sorted(agent_dir.rglob("*")):
            name = f"agent/{path.relative_to(agent_dir).as_posix()}"
            if path.is_symlink():
                continue  # unpacking never makes one; never follow one into the host
            if path.is_dir():
                _add_folder(archive, name)
            else:
                executable = path.stat().st_mode & 0o111
                # Read-only to everyone but root: the agent cannot change its own files.
                _add_file(archive, name, path, 0o755 if executable else 0o644)
        if wheels is not None and wheels.wheels and wheels.pip_wheel is not None:
            _add_folder(archive, "wheels")
            _add_file(archive, f"wheels/{wheels.pip_wheel.name}", wheels.pip_wheel, 0o644)
            for wheel in wheels.wheels:
                _add_file(archive, f"wheels/{wheel}", wheels.folder / wheel, 0o644)
    context.seek(0)


def revision_image_build(
    *,
    tag: str,
    base: str,
    agent_dir: Path,
    entry: str,
    kind: EntryKind,
    wheels: WheelSet | None,
    labels: dict[str, str],
    deadline: float,
) -> list[str]:
    """Build (or rebuild) the image ``tag``; returns the engine's build log.

    Raises ``EngineTimeout`` past ``deadline``, ``EngineError`` when the build fails.
    """
    dockerfile = revision_dockerfile(
        base=base,
        wheels=wheels,
        command=container_command(entry, kind),
        labels=labels,
    )
    replaced = docker_images.image_id(tag)
    with tempfile.TemporaryFile() as context:
        revision_build_context(context, dockerfile=dockerfile, agent_dir=agent_dir, wheels=wheels)
        log = docker_images.image_build(
            context,
            tag=tag,
            role=ROLE,
            labels={},  # in the Dockerfile: one step for them all
            pull=False,
            network_mode="none",
            deadline=deadline,
            step_labels={"arena.role": DEPS_ROLE, LABEL_INSTANCE: labels.get(LABEL_INSTANCE, "")},
            build_labels=revision_step_labels(labels),
        )
    if replaced is not None and replaced != docker_images.image_id(tag):
        # A rebuild took the tag; the old image goes now unless a duel still runs it
        # (then the clean-up removes it later: it carries the revision's label).
        docker_images.image_remove(replaced)
    return log
