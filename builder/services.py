"""Building a revision: for the ``process`` sandbox, unpacking it into its own folder and
checking that it can start (entry point present, Python files compile)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from builder.archives import UploadLimits, UploadRejected, extract_upload
from core import dispatch
from core.models import Revision, StepStatus
from core.services import revision_step_begin, revision_step_finish
from duel_runner.sandbox.base import AgentSource, InvalidAgent


def upload_limits() -> UploadLimits:
    """The size and count caps on uploads, from the ``ARENA_UPLOAD_*`` settings."""
    return UploadLimits(
        max_upload_bytes=settings.ARENA_UPLOAD_MAX_BYTES,
        max_files=settings.ARENA_UPLOAD_MAX_FILES,
        max_unpacked_bytes=settings.ARENA_UPLOAD_MAX_UNPACKED_BYTES,
    )


def revision_build_dir(revision: Revision) -> Path:
    return Path(settings.ARENA_BUILD_ROOT) / f"revision-{revision.pk}"


def _compile_errors(folder: Path) -> list[str]:
    errors = []
    for path in sorted(folder.rglob("*.py")):
        try:
            compile(path.read_bytes(), str(path.relative_to(folder)), "exec")
        except SyntaxError as error:
            where = f"{error.filename}, line {error.lineno}"
            errors.append(f"{where}: {error.msg}\n    {(error.text or '').rstrip()}")
        except ValueError as error:  # null bytes
            errors.append(f"{path.relative_to(folder)}: {error}")
    return errors


def revision_build(*, revision_id: int) -> None:
    revision = revision_step_begin(revision_id=revision_id, step="build")
    if revision is None:
        return
    log: list[str] = [f"building {revision} from {revision.filename} ({revision.size:,} bytes)"]
    target = revision_build_dir(revision)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        with revision.source.open("rb") as upload:
            content = upload.read()
        summary = extract_upload(revision.filename, content, staging, upload_limits())
        log.append(f"unpacked {len(summary.files)} file(s), {summary.unpacked_bytes:,} bytes")
        errors = _compile_errors(staging)
        if errors:
            raise UploadRejected("syntax error:\n" + "\n".join(errors))
        AgentSource.from_path(staging)
        if summary.has_requirements:
            log.append(
                "requirements.txt found: the process sandbox does not install dependencies; "
                "the Docker builder does"
            )
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        log.append(f"entry point: {summary.entry_point}")
    except (UploadRejected, InvalidAgent, OSError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        message = getattr(error, "message", None) or str(error)
        log.append(f"build failed: {message}")
        revision_step_finish(
            revision=revision, step="build", succeeded=False, error=message, log="\n".join(log)
        )
        Revision.objects.filter(pk=revision.pk).update(validation_status=StepStatus.NONE)
        return
    revision_step_finish(revision=revision, step="build", succeeded=True, log="\n".join(log))
    dispatch.start("duel_runner.tasks.validate_revision", revision_id=revision.pk)
