"""Seconds from an upload to a validated revision, in the docker and the process sandbox.

    python -m bench.bench_upload                  # 3 rounds, and the requirements rows
    python -m bench.bench_upload --quick          # 1 round, no requirements rows
    python -m bench.bench_upload --json figures.json

The whole pipeline as the website runs it, less the broker's hops: ``revision_create``
saves the upload, and when its transaction commits the build and then the validation by
self-play run in this process (eagerly, ``ARENA_BROKER_URL=eager``). Timed from the call
to the commit's return, so the time an owner waits for "validated". Rows:

process sandbox
    unpack and compile, then the validation duel between two host processes.
docker sandbox
    the same checks, then the revision's own image (``builder.revision_image``) on the
    warm base image, then the validation duel between two containers of it.
docker, requirements (cold / warm)
    an agent with a ``requirements.txt`` (``--requirements``, default ``six==1.16.0``):
    cold downloads the wheels from PyPI into an empty cache and builds the dependencies'
    stage from nothing; warm is the next upload with the same requirements, which reuses
    both.

Each upload's source differs (a comment), so the layer of the agent's files is never
reused from the engine's cache: each build does what a new upload's does. Everything
runs against a throwaway SQLite database, media, build, sandbox and wheel folders;
the images made are removed at the end. Needs a Docker engine and the base image
(``manage.py build_base_image``), and PyPI for the requirements rows.

Target: upload to validated under 10 s in the docker sandbox, on these 2-core machines.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import run_bench
from bench.local_site import django_setup, site_environment
from bench.support import RANDOM_PLAYER, REPOSITORY, games_import, machine, machine_summary

ENVIRONMENT = "connect_four"
TARGET_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class Plan:
    #: Uploads per sandbox.
    rounds: int
    #: The requirements rows' requirements.txt; None (or empty) skips those rows.
    requirements: str | None


FULL = Plan(rounds=3, requirements="six==1.16.0\n")
QUICK = Plan(rounds=1, requirements=None)
REQUIREMENTS_AGENT = """\
import six
from arena_sdk import Agent


class UsesItsRequirements(Agent):
    def act(self, turn):
        return turn.random.choice(turn.legal_actions)
"""


def _configure(folder: Path, sandboxes: Path) -> None:
    """Django on throwaway folders and database, tasks in this process."""
    django_setup(
        {
            **site_environment(folder),
            "ARENA_WHEEL_CACHE": str(folder / "wheels"),
            "ARENA_SANDBOX_ROOT": str(sandboxes),
            # Its images are its own: nothing else on the engine is touched by the clean-up.
            "ARENA_INSTANCE": f"bench-upload-{os.getpid()}",
        }
    )


def _zip(files: dict[str, str]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _upload(owner: Any, name: str, filename: str, content: bytes) -> dict[str, float]:
    """Upload as ``owner``; returns the seconds to validated, and of its build and validation."""
    from django.db import transaction

    from core.models import Environment
    from core.services.revisions import competitor_get_or_create, revision_create

    environment = Environment.objects.get(name=ENVIRONMENT)
    competitor = competitor_get_or_create(owner=owner, environment=environment, name=name)
    started = time.perf_counter()
    with transaction.atomic():
        revision = revision_create(
            competitor=competitor, uploaded_by=owner, filename=filename, content=content
        )
    # The build and the validation ran when the transaction committed.
    seconds = time.perf_counter() - started
    revision.refresh_from_db()
    if not revision.is_valid:
        problem = next((job.error for job in revision.jobs.all() if job.error), "")
        raise SystemExit(f"bench_upload: {revision} did not validate: {problem}")
    return {
        "seconds": seconds,
        "build": _took(revision, "build"),
        "validation": _took(revision, "validation"),
    }


def _took(revision: Any, step: str) -> float:
    job = revision.job(step)
    return (job.duration if job else None) or 0.0


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    """The rounds on throwaway folders, database and images, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    # Agents' folders: not under a private folder, the sandbox users must traverse it.
    sandboxes = Path(tempfile.mkdtemp(prefix="bench-upload-sandboxes-"))
    try:
        _configure(folder, sandboxes)
        try:
            return _measure(plan.rounds, plan.requirements or None, report)
        finally:
            _remove_images()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(sandboxes, ignore_errors=True)


def _measure(
    rounds: int, requirements: str | None, report: Callable[[str], None]
) -> dict[str, Any]:
    from django.conf import settings

    from builder.requirements import pip_wheel
    from core.models import User
    from sandboxes import docker_engine
    from sandboxes.base_image import base_image_build

    problem = docker_engine.engine_problem()
    if problem:
        raise SystemExit(f"bench_upload: {problem}")
    image = base_image_build().tag  # warm: reused, or built once before anything is timed
    games_import()
    owner = User.objects.create_user("bench@example.org", "a long enough password")
    player = RANDOM_PLAYER.read_text()
    uploads = 0

    def unique(source: str) -> str:
        nonlocal uploads
        uploads += 1
        return f"{source}\n# upload {uploads} at {time.time()}\n"

    rows: dict[str, list[dict[str, float]]] = {"process": [], "docker": []}
    for mode in rows:
        settings.ARENA_SANDBOX = mode
        _upload(owner, f"warm-{mode}", "main.py", unique(player).encode())  # not timed
    for round_index in range(rounds):
        for mode in rows:
            settings.ARENA_SANDBOX = mode
            rows[mode].append(_upload(owner, f"plain-{mode}", "main.py", unique(player).encode()))
        report(
            f"round {round_index + 1}/{rounds}: "
            + ", ".join(f"{mode} {values[-1]['seconds']:.2f} s" for mode, values in rows.items())
        )
    if requirements:
        settings.ARENA_SANDBOX = "docker"
        # pip's own wheel is fetched once per machine, not per set of requirements.
        pip_wheel(deadline=time.monotonic() + 120)
        for row in ("docker_requirements_cold", "docker_requirements_warm"):
            files = {"main.py": unique(REQUIREMENTS_AGENT), "requirements.txt": requirements}
            rows[row] = [_upload(owner, "with-requirements", "bot.zip", _zip(files))]
            report(f"{row}: {rows[row][0]['seconds']:.2f} s")
    medians = {
        row: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for row, runs in rows.items()
    }
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "image": image,
        "rounds": rounds,
        "agent": str(RANDOM_PLAYER.relative_to(REPOSITORY)),
        "requirements": requirements,
        "medians": medians,
        "target_seconds": TARGET_SECONDS,
        "target_met": medians["docker"]["seconds"] < TARGET_SECONDS,
        "samples": rows,
    }


def _remove_images() -> list[str]:
    from builder.revision_image import DEPS_ROLE, LABEL_INSTANCE, ROLE
    from sandboxes import docker_images
    from sandboxes.docker_engine import LABEL_ROLE

    instance = {LABEL_INSTANCE: os.environ["ARENA_INSTANCE"]}
    removed = []
    for image in docker_images.images_labelled({LABEL_ROLE: ROLE, **instance}):
        name = image.tags[0] if image.tags else image.id
        docker_images.image_remove(name)
        removed.append(name)
    removed += docker_images.images_prune_dangling({LABEL_ROLE: DEPS_ROLE, **instance})
    return removed


ROW_NAMES = {
    "process": "process sandbox",
    "docker": "docker sandbox",
    "docker_requirements_cold": "docker, requirements (cold)",
    "docker_requirements_warm": "docker, requirements (warm)",
}


def table(figures: dict[str, Any]) -> str:
    lines = [
        f"upload to validated, {figures['agent']} ({ENVIRONMENT}) — {figures['date']}, "
        f"median of {figures['rounds']} round(s)",
        f"machine: {machine_summary(figures['machine'])}; base image {figures['image']}",
    ]
    if figures["requirements"]:
        listed = ", ".join(figures["requirements"].split())
        lines.append(f"requirements rows: {listed}, one upload each")
    lines += ["", f"{'pipeline':<30} {'to validated':>13} {'build':>8} {'validation':>11}"]
    for key, name in ROW_NAMES.items():
        if key not in figures["medians"]:
            continue
        row = figures["medians"][key]
        lines.append(
            f"{name:<30} {row['seconds']:>11.2f} s {row['build']:>6.2f} s "
            f"{row['validation']:>9.2f} s"
        )
    verdict = "met" if figures["target_met"] else "NOT met"
    lines += [
        "",
        f"docker sandbox, upload to validated: target < {figures['target_seconds']:g} s: {verdict}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="one round, no requirements rows",
        plan_options={
            "rounds": "uploads per sandbox (3)",
            "requirements": "requirements.txt of the requirements rows (six==1.16.0); ''"
            " skips them",
        },
    )


if __name__ == "__main__":
    sys.exit(main())
