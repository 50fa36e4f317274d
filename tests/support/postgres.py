"""A throwaway PostgreSQL cluster: one per test run, in a temporary folder.

The server is a child of the test process, listening on 127.0.0.1 on a free port
with a random password (no Unix socket), tuned for speed rather than durability,
and deleted with its folder when the run ends.

``initdb`` and ``postgres`` refuse to run as root, so under root (CI) the cluster
belongs to the ``postgres`` user that Debian's server package creates; the test
process stays root and starts the server with that user id. A developer without
root owns the cluster themselves. Either way no system cluster, service or
password is touched.

Three things make sure no server outlives its run: ``Cluster.stop`` (fast shutdown,
then wait for the server to exit), a parent-death signal (the kernel stops the
server if the test process dies without cleaning up) and, at the next start, the
removal of folders whose test process is gone.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

PREFIX = "arena-test-postgres-"
SUPERUSER = "arena"
#: The database the settings name; pytest-django creates ``test_arena`` next to it.
DATABASE = "arena"
STARTUP_TIMEOUT = 30.0
SHUTDOWN_TIMEOUT = 30.0
PORT_ATTEMPTS = 3

# Durability is pointless for a cluster deleted at the end of the run.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


class ClusterError(RuntimeError):
    pass


def find_bindir() -> Path | None:
    """The newest PostgreSQL server binaries: Debian's ``/usr/lib/postgresql/<n>/bin``,
    else ``initdb`` on the PATH; None when there are none."""

    def version(bindir: Path) -> int:
        return int(bindir.parent.name) if bindir.parent.name.isdigit() else 0

    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    return None


@dataclass
class Cluster:
    root: Path
    port: int
    password: str
    process: subprocess.Popen[bytes]

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        """Fast shutdown (clients are disconnected), wait until every server process
        has exited, then delete the folder."""
        try:
            _stop_server(self.process)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(bindir: Path) -> Cluster:
    """Create a cluster in a new temporary folder and start its server."""
    server_user = _server_user()
    # /tmp rather than $TMPDIR: as root, the postgres user must reach the folder.
    parent = Path("/tmp") if server_user else Path(tempfile.gettempdir())
    remove_abandoned_clusters(parent)
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    try:
        (root / "owner").write_text(str(os.getpid()))
        password = secrets.token_urlsafe(18)
        _init(bindir, root, password, server_user)
        return _start(bindir, root, password, server_user)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def remove_abandoned_clusters(parent: Path) -> None:
    """Delete clusters left by test runs that died, stopping a server still running."""
    for root in parent.glob(PREFIX + "*"):
        try:
            owner = int((root / "owner").read_text())
        except (OSError, ValueError):
            continue  # someone else's, or still being created
        if _is_alive(owner):
            continue
        try:
            server = int((root / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            server = None
        if server and _is_postgres(server):
            os.kill(server, signal.SIGQUIT)
        shutil.rmtree(root, ignore_errors=True)


def _init(bindir: Path, root: Path, password: str, server_user: pwd.struct_passwd | None) -> None:
    password_file = root / "password"
    password_file.write_text(password)
    if server_user:
        for path in (root, root / "owner", password_file):
            os.chown(path, server_user.pw_uid, server_user.pw_gid)
    command = [
        str(bindir / "initdb"),
        *("--pgdata", str(root / "data")),
        *("--username", SUPERUSER),
        f"--pwfile={password_file}",
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--no-locale",
        "--no-sync",
        "--no-instructions",
    ]
    result = subprocess.run(
        command,
        cwd=root,
        env=_server_env(),
        capture_output=True,
        text=True,
        **_as_user(server_user),
    )
    password_file.unlink()
    if result.returncode != 0:
        raise ClusterError(f"initdb failed ({result.returncode}):\n{result.stdout}{result.stderr}")


def _start(
    bindir: Path, root: Path, password: str, server_user: pwd.struct_passwd | None
) -> Cluster:
    for _attempt in range(PORT_ATTEMPTS):
        port = _free_port()
        settings = {**SERVER_SETTINGS, "port": str(port)}
        command = [str(bindir / "postgres"), "-D", str(root / "data")]
        for name, value in settings.items():
            command += ["-c", f"{name}={value}"]
        with open(root / "postgres.log", "ab") as log:
            process = subprocess.Popen(
                command,
                cwd=root,
                env=_server_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C in the terminal reaches the tests, whose
                # teardown still needs the server; the tests then stop it themselves.
                start_new_session=True,
                preexec_fn=_die_with_parent,
                **_as_user(server_user),
            )
        cluster = Cluster(root=root, port=port, password=password, process=process)
        if _wait_until_ready(cluster):
            return cluster
        _stop_server(process)
        if "could not bind" not in cluster.log_path.read_text(errors="replace"):
            break  # not a port taken between our check and the server's bind
    log_tail = (root / "postgres.log").read_text(errors="replace")[-3000:]
    raise ClusterError(f"the PostgreSQL server did not start; its log ends with:\n{log_tail}")


def _wait_until_ready(cluster: Cluster) -> bool:
    import psycopg

    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if cluster.process.poll() is not None:
            return False
        try:
            psycopg.connect(cluster.url("postgres"), connect_timeout=2).close()
        except psycopg.OperationalError:
            time.sleep(0.05)
        else:
            return True
    return False


def _stop_server(process: subprocess.Popen[bytes]) -> None:
    # SIGINT is PostgreSQL's fast shutdown, SIGQUIT its immediate one. The server
    # exits only after its own child processes, so waiting for it is enough.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
        if process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(SHUTDOWN_TIMEOUT)
        except subprocess.TimeoutExpired:
            continue


def _die_with_parent() -> None:
    # Runs in the child between fork and exec, after the switch of user id (which
    # would clear it): the kernel sends SIGQUIT when the test process dies.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)


def _server_user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterError(
            "as root the test cluster runs as the 'postgres' user, which does not exist "
            "(apt-get install postgresql creates it)"
        ) from None


class _UserArguments(TypedDict, total=False):
    """subprocess's arguments that run the server as ``server_user``."""

    user: int
    group: int
    extra_groups: list[int]


def _as_user(server_user: pwd.struct_passwd | None) -> _UserArguments:
    if server_user is None:
        return {}
    return {"user": server_user.pw_uid, "group": server_user.pw_gid, "extra_groups": []}


def _server_env() -> dict[str, str]:
    # No PG* variables from the caller's environment, a locale that always exists.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_postgres(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() in {"postgres", "postmaster"}
    except OSError:
        return False
