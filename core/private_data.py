"""Arena's own data is its owner's alone: the database, uploads, logs, the broker, caches.

Every Arena process creates files owner-only (umask 077: folders 0700, files 0600), and at
start its data folders (``ARENA_VAR_DIR`` and the folders the settings move out of it) are
made owner-only if they are not: an instance made before this rule, whose database and
uploads any local user (or an unconfined agent) could read, is put right when it next
starts. Only the folder's own mode is looked at each time, so a start costs one ``stat``
per folder; the walk happens once.

What others must read is given to them explicitly where it is made: the agents' copies of
their files (the sandboxes), a revision image's files (the builder), the SDK's copy.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def data_folders() -> list[Path]:
    """Every folder of Arena's own data the settings name: ``ARENA_VAR_DIR``, uploads,
    builds, the publisher's clone, caches, the pages' cache when it is files. What
    ``keep_private`` guards and what the process sandbox covers in an agent's view. A
    SQLite database named outside them is a file in a folder that may hold anything (the
    folder is not Arena's to change): ``data_files``."""
    from django.conf import settings

    folders = [
        settings.VAR_DIR,
        settings.MEDIA_ROOT,
        settings.ARENA_BUILD_ROOT,
        settings.ARENA_PUBLISH_WORKDIR,
        settings.ARENA_WHEEL_CACHE,
        settings.ARENA_BASE_IMAGE_CACHE,
    ]
    if settings.ARENA_CACHE_URL.startswith("file://"):
        folders.append(Path(settings.ARENA_CACHE_URL.removeprefix("file://")))
    return [Path(folder) for folder in dict.fromkeys(str(folder) for folder in folders)]


def data_files() -> list[Path]:
    """A SQLite database's files (with its journal's), wherever the settings put it."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if not str(database["ENGINE"]).endswith("sqlite3") or database["NAME"] == ":memory:":
        return []
    name = str(database["NAME"])
    return [Path(name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def keep_private(
    folders: Iterable[Path], *, files: Iterable[Path] = (), create: Path | None = None
) -> int:
    """Sets this process's umask to owner-only, creates ``create`` owner-only if it is
    missing, and puts right each of ``folders`` that exists and others may enter, and each
    of ``files`` that exists. Returns how many files and folders were changed."""
    os.umask(PRIVATE_UMASK)
    if create is not None:
        try:
            create.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:  # a read-only file system: whatever uses it will say
            logger.warning("cannot create %s: %s", create, error.strerror)
    changed = 0
    for folder in dict.fromkeys(Path(folder) for folder in folders):
        try:
            mode = folder.stat().st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & 0o077:
            count = make_owner_only(folder)
            changed += count
            logger.warning(
                "%s was open to other users: made owner-only (%d files and folders)",
                folder,
                count,
            )
    for path in files:
        if _owner_only(path):
            changed += 1
            logger.warning("%s was open to other users: made owner-only", path)
    return changed


def _owner_only(path: Path) -> bool:
    """Takes every right of group and others off the file ``path`` (never through a link);
    whether it changed anything."""
    try:
        entry = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # absent, a link, or not ours to open
        return False
    try:
        mode = os.fstat(entry).st_mode
        if not stat.S_ISREG(mode) or not stat.S_IMODE(mode) & 0o077:
            return False
        os.fchmod(entry, stat.S_IMODE(mode) & 0o700)
        return True
    except OSError:
        return False
    finally:
        os.close(entry)


def make_owner_only(folder: Path) -> int:
    """Takes every right of group and others off ``folder`` and everything in it; returns
    how many were changed. Symbolic links are neither followed nor changed: the walk holds
    each folder open and changes each entry through a descriptor opened without following
    links, so a link put in place meanwhile never makes it change a file elsewhere. What
    cannot be changed (another user's file, a read-only file system) is counted and said
    once."""
    changed = failed = 0
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        walk = os.fwalk(folder, follow_symlinks=False)
        for _parent, folders, files, parent_fd in walk:
            names = files + folders if _parent != str(folder) else [".", *files, *folders]
            for name in names:
                try:
                    mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                        continue  # links, sockets, pipes: nothing to read through them
                    if not stat.S_IMODE(mode) & 0o077:
                        continue
                    entry = os.open(name, flags, dir_fd=parent_fd)
                    try:
                        os.fchmod(entry, stat.S_IMODE(os.fstat(entry).st_mode) & 0o700)
                    finally:
                        os.close(entry)
                    changed += 1
                except OSError:
                    failed += 1
    except OSError:
        failed += 1
    if failed:
        logger.warning("%s: %d files or folders could not be made owner-only", folder, failed)
    return changed
