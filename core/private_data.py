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


def keep_private(folders: Iterable[Path], *, create: Path | None = None) -> int:
    """Sets this process's umask to owner-only, creates ``create`` owner-only if it is
    missing, and puts right each of ``folders`` that exists and others may enter. Returns
    how many files and folders were changed."""
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
    return changed


def make_owner_only(folder: Path) -> int:
    """Takes every right of group and others off ``folder`` and everything in it (symbolic
    links are not followed); returns how many were changed. What cannot be changed (another
    user's file) is logged and left."""
    changed = 0
    paths = [folder]
    for parent, folders, files in os.walk(folder):
        paths += [Path(parent, name) for name in folders + files]
    for path in paths:
        try:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not stat.S_IMODE(mode) & 0o077:
                continue
            os.chmod(path, stat.S_IMODE(mode) & 0o700)
            changed += 1
        except OSError as error:
            logger.warning("cannot make %s owner-only: %s", path, error.strerror)
    return changed
