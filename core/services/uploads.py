"""Checking and unpacking uploaded agents: a single ``.py`` file or a zip archive.

``inspect_upload`` rejects a bad upload before anything is stored, with a message
that says what to fix; ``extract_upload`` unpacks an upload that passed, enforcing
the same limits again on the bytes actually written (a zip's headers can lie).

An upload's bytes are stored once in the database (``UploadContent``), however many
revisions refer to them, and read back from there by every host that builds it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import posixpath
import stat
import zipfile
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from core.errors import ArenaError
from core.models import (
    Revision,
    UploadContent,
)
from sandboxes.base import ENTRY_POINTS as PYTHON_ENTRY_POINTS
from sandboxes.base import EXECUTABLE_ENTRY_POINT

REQUIREMENTS = "requirements.txt"


class UploadRejected(ArenaError):
    """The upload is unusable; nothing was stored."""


@dataclasses.dataclass(frozen=True)
class UploadLimits:
    max_upload_bytes: int = 10 * 1024 * 1024
    max_files: int = 500
    max_unpacked_bytes: int = 50 * 1024 * 1024


def upload_limits() -> UploadLimits:
    """The size and count caps on uploads, from the ``ARENA_UPLOAD_*`` settings."""
    return UploadLimits(
        max_upload_bytes=settings.ARENA_UPLOAD_MAX_BYTES,
        max_files=settings.ARENA_UPLOAD_MAX_FILES,
        max_unpacked_bytes=settings.ARENA_UPLOAD_MAX_UNPACKED_BYTES,
    )


@dataclasses.dataclass(frozen=True)
class UploadSummary:
    #: Path of the entry point once unpacked (``main.py``, ``agent.py`` or ``agent``).
    entry_point: str
    has_requirements: bool
    files: tuple[str, ...]
    unpacked_bytes: int


def _is_zip(filename: str) -> bool:
    return filename.lower().endswith(".zip")


def _clean_member_name(name: str) -> str:
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UploadRejected(f"the archive holds an absolute path ({name!r}); zip relative paths")
    normalised = posixpath.normpath(name)
    if normalised.startswith("..") or "/../" in f"/{name}/":
        raise UploadRejected(f"the archive holds a path that leaves its folder ({name!r})")
    return normalised


def _members(archive: zipfile.ZipFile, limits: UploadLimits) -> list[zipfile.ZipInfo]:
    infos = archive.infolist()
    files = [info for info in infos if not info.is_dir()]
    if len(files) > limits.max_files:
        raise UploadRejected(
            f"the archive holds {len(files)} files; at most {limits.max_files} are allowed"
        )
    declared = sum(info.file_size for info in files)
    if declared > limits.max_unpacked_bytes:
        raise UploadRejected(
            f"the archive unpacks to {declared:,} bytes; at most "
            f"{limits.max_unpacked_bytes:,} are allowed"
        )
    for info in infos:
        _clean_member_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UploadRejected(
                f"the archive holds a symbolic link ({info.filename!r}); links are not allowed"
            )
        if info.flag_bits & 0x1:
            raise UploadRejected("the archive is encrypted; upload it without a password")
    return files


def _strip_common_folder(names: list[str]) -> str:
    """The single top-level folder every file sits in (zipping a folder makes one), or ''."""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        return tops.pop() + "/"
    return ""


def _entry_point(names: set[str], executables: set[str]) -> str:
    for candidate in PYTHON_ENTRY_POINTS:
        if candidate in names:
            return candidate
    if EXECUTABLE_ENTRY_POINT in names:
        if EXECUTABLE_ENTRY_POINT not in executables:
            raise UploadRejected(
                "the entry point 'agent' is not executable; set its executable bit "
                "(chmod +x agent) before zipping"
            )
        return EXECUTABLE_ENTRY_POINT
    raise UploadRejected(
        "no entry point: put main.py or agent.py (or an executable named 'agent') at the "
        "top of the archive"
    )


def inspect_upload(
    filename: str, content: bytes, limits: UploadLimits | None = None
) -> UploadSummary:
    """Check an upload without unpacking it; raises UploadRejected with the reason."""
    limits = limits or UploadLimits()
    if not content:
        raise UploadRejected("the file is empty")
    if len(content) > limits.max_upload_bytes:
        raise UploadRejected(
            f"the file is {len(content):,} bytes; at most {limits.max_upload_bytes:,} are allowed"
        )
    if filename.lower().endswith(".py"):
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            raise UploadRejected("a .py file must be UTF-8 text") from None
        return UploadSummary("main.py", False, ("main.py",), len(content))
    if not _is_zip(filename):
        raise UploadRejected("upload a single .py file or a .zip archive")
    if not zipfile.is_zipfile(io.BytesIO(content)):
        raise UploadRejected("the file is not a valid zip archive")
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            files = _members(archive, limits)
            prefix = _strip_common_folder([info.filename for info in files])
            names = {info.filename[len(prefix) :] for info in files}
            executables = {
                info.filename[len(prefix) :] for info in files if (info.external_attr >> 16) & 0o111
            }
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as error:
        raise UploadRejected(f"the zip archive cannot be read: {error}") from None
    entry = _entry_point(names, executables)
    return UploadSummary(
        entry_point=entry,
        has_requirements=REQUIREMENTS in names,
        files=tuple(sorted(names)),
        unpacked_bytes=sum(info.file_size for info in files),
    )


def extract_upload(
    filename: str, content: bytes, destination: Path, limits: UploadLimits | None = None
) -> UploadSummary:
    """Unpack a checked upload into ``destination`` (an empty folder)."""
    limits = limits or UploadLimits()
    summary = inspect_upload(filename, content, limits)
    if not _is_zip(filename):
        (destination / "main.py").write_bytes(content)
        return summary
    try:
        _extract_zip(content, destination, limits)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise UploadRejected(f"the zip archive cannot be read: {error}") from None
    return summary


def _extract_zip(content: bytes, destination: Path, limits: UploadLimits) -> None:
    written = 0
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        files = _members(archive, limits)
        prefix = _strip_common_folder([info.filename for info in files])
        for info in files:
            relative = _clean_member_name(info.filename[len(prefix) :])
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as sink:
                while chunk := source.read(1 << 16):
                    written += len(chunk)
                    if written > limits.max_unpacked_bytes:
                        raise UploadRejected(
                            f"the archive unpacks to more than {limits.max_unpacked_bytes:,} bytes"
                        )
                    sink.write(chunk)
            executable = (info.external_attr >> 16) & 0o111
            # Private: a sandbox gives its agent a copy it may read (core.private_data).
            target.chmod(0o700 if executable else 0o600)


class UploadUnavailable(ArenaError):
    """A revision's upload cannot be read from the database: not stored, or not its bytes."""


def upload_content_store(*, content: bytes, sha256: str) -> UploadContent:
    """The stored bytes of an upload, saved unless the same bytes already are. Call in the
    transaction that creates the revision referring to them."""
    stored, _ = UploadContent.objects.get_or_create(
        sha256=sha256, defaults={"content": content, "size": len(content)}
    )
    return stored


def revision_upload_read(*, revision: Revision) -> bytes:
    """The bytes of the revision's upload, from the database (so on any host), checked
    against the SHA-256 recorded when it was uploaded. Raises UploadUnavailable."""
    stored = None
    if revision.upload_id:
        rows = UploadContent.objects.filter(pk=revision.upload_id)
        stored = rows.values_list("content", flat=True).first()
    if stored is None:
        raise UploadUnavailable(
            f"the upload of {revision} is not stored in the database (it was missing or "
            "damaged when uploads moved there); its owner must upload it again"
        )
    content = bytes(stored)
    digest = hashlib.sha256(content).hexdigest()
    if digest != revision.sha256:
        raise UploadUnavailable(
            f"the stored upload of {revision} is damaged: its SHA-256 is {digest[:12]}..., "
            f"not {revision.sha256[:12]}... as uploaded; its owner must upload it again"
        )
    return content


def upload_content_release(*, sha256: str) -> bool:
    """Delete the stored bytes of an upload once no revision refers to them (the last one
    was deleted); returns whether they went. Call after the deletion commits: an upload
    of the same bytes committed meanwhile keeps them (the foreign key refuses the delete)."""
    try:
        with transaction.atomic():
            deleted, _ = UploadContent.objects.filter(pk=sha256, revisions__isnull=True).delete()
    except (IntegrityError, ProtectedError):
        return False
    return bool(deleted)
