"""The process sandbox's user ids: a pool of them shared by every referee on the host
(``UserPool``), and the kill of every process of one (``kill_user_processes``)."""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import tempfile
import time
from pathlib import Path

from sandboxes.base import SandboxError

UID_BASE = 1_900_000
UID_COUNT = 1000
#: The user ids' locks: one folder for the whole host, whatever each referee's sandbox
#: root, so that no two referees ever give one user id to two agents.
UID_LOCKS = Path(tempfile.gettempdir()) / "arena-sandbox-uids"


def status_field(status: bytes, name: bytes) -> bytes:
    """The value of field ``name`` in a /proc/PID/status text ("" if absent). The kernel
    escapes newlines in a process's name, so no process can forge a line."""
    start = status.find(b"\n" + name + b":\t")
    if start < 0:
        return b""
    start += len(name) + 3
    return status[start : status.find(b"\n", start)]


def processes_of_user(uid: int, *, count_threads: bool = False) -> list[int]:
    """Live (non-zombie) processes whose real user id is ``uid``.

    With ``count_threads`` each process appears once per thread, which is what
    RLIMIT_NPROC counts. Every close of an agent scans all of /proc (see
    ``kill_user_processes``), so the files are read as bytes with plain system calls.
    """
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/status", os.O_RDONLY)
        except OSError:
            continue
        try:
            status = os.read(fd, 1 << 16)
        except OSError:
            continue
        finally:
            os.close(fd)
        real_uid = status_field(status, b"Uid").split(b"\t", 1)[0]
        if real_uid != str(uid).encode() or status_field(status, b"State").startswith(b"Z"):
            continue
        threads = int(status_field(status, b"Threads") or 1) if count_threads else 1
        found.extend([int(name)] * threads)
    return found


#: The exit status of ``kill_user_processes``'s child when no other process has its uid.
_ALONE = 4


def _alone_under_own_uid() -> bool:  # pragma: no cover - runs in a child
    """True if no other process (zombies included) has this process's real user id.

    The kernel refuses a fork past RLIMIT_NPROC, which counts the user's processes: with a
    limit of 2, this process and its new child, a fork succeeds only when nothing else of
    the user exists. (kill(-1) cannot tell: it reports success whenever the machine has any
    other process, even one it may not signal.) Needs no privilege: a non-root user cannot
    exceed the limit.
    """
    resource.setrlimit(resource.RLIMIT_NPROC, (2, 2))
    try:
        child = os.fork()
    except BlockingIOError:
        return False
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return True


def kill_user_processes(uid: int) -> None:
    """Kill every process of ``uid``: a child takes that uid and calls kill(-1, SIGKILL).

    kill(-1) signals all of the caller's processes under the kernel's task list lock, and a
    process with SIGKILL pending cannot fork, so once it has been called nothing of ``uid``
    can appear any more: a scan of /proc afterwards is reliable. A scan before it is not
    (it can miss a process forked while it reads, such as a daemon that double-forks as
    its agent exits), so there is always at least one kill(-1).

    The scan reads every process's status, a cost that grows with the host; the child
    first asks the kernel instead (``_ALONE``), which answers for the usual case of a user
    id with nothing left to kill.
    """
    for _attempt in range(20):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 3
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
                code = _ALONE if _alone_under_own_uid() else 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        # Otherwise wait for the killed to die (zombies waiting for a parent to reap them
        # do not count).
        if os.waitstatus_to_exitcode(status) == _ALONE or not processes_of_user(uid):
            return
        time.sleep(0.005)
    raise SandboxError(f"processes of sandbox user {uid} survive SIGKILL")


#: What a user id's lock file holds while no process runs under the id (``UserPool``).
_LEFT_CLEAN = b"nothing left\n"


class UserPool:
    """Unprivileged user ids, one per running agent, shared by every referee on the host.

    Taking one kills whatever runs under it, unless its lock file says its last holder
    let it go with nothing left (``release``): the kill forks this process, a few
    milliseconds of CPU per agent that a referee which swept the id need not spend again.
    A holder that dies never says it (the file is emptied when the id is taken), so what
    it left is killed by the next one."""

    def __init__(
        self, directory: Path = UID_LOCKS, base: int = UID_BASE, count: int = UID_COUNT
    ) -> None:
        self.directory = directory
        self.base = base
        self.count = count

    def acquire(self) -> tuple[int, int]:
        """Returns (uid, lock fd); the lock is held until ``release``."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        start = (os.getpid() * 7) % self.count
        for offset in range(self.count):
            uid = self.base + (start + offset) % self.count
            fd = os.open(self.directory / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            # A referee that died holding it may have left processes behind under this
            # uid; one that let it go with nothing left said so in the lock file.
            if os.pread(fd, len(_LEFT_CLEAN), 0) != _LEFT_CLEAN:
                kill_user_processes(uid)
            # Said before any process of the new holder exists: if it dies holding the
            # uid, the next one kills what it left.
            os.ftruncate(fd, 0)
            return uid, fd
        raise SandboxError(f"all {self.count} sandbox user ids are in use")

    @staticmethod
    def release(fd: int, *, nothing_left: bool = False) -> None:
        """Let the user id go; ``nothing_left``: every process that ran under it is known
        to be dead (killed and waited for), so its next holder need not kill again."""
        if nothing_left:
            os.pwrite(fd, _LEFT_CLEAN, 0)
        os.close(fd)
