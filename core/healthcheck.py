"""The containers' healthchecks (``HEALTHCHECK`` in the Dockerfile, ``healthcheck:`` in
docker-compose.yml). Exit 0 when healthy, 1 with one line on stderr saying why not.

    python -m core.healthcheck http URL          # answers 2xx (Host: the first allowed host)
    python -m core.healthcheck file PATH SECONDS # PATH touched within SECONDS (a heartbeat)
    python -m core.healthcheck tcp HOST PORT     # accepts a connection
    python -m core.healthcheck unix PATH         # a Unix socket accepts a connection

Only the standard library, no Django: a check runs every few seconds in every container.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable

TIMEOUT = 5.0


def check_http(url: str) -> str | None:
    # Imported here: urllib.request (with http, email and ssl) is most of a check's start,
    # and only this check uses it.
    import urllib.error
    import urllib.request

    allowed = os.environ.get("ARENA_ALLOWED_HOSTS", "").split(",")
    hosts = [host.strip() for host in allowed if host.strip()]  # as core/settings.py reads it
    request = urllib.request.Request(url)
    # Django answers 400 to a Host it does not serve; a wildcard is no host name.
    if hosts and "*" not in hosts[0] and not hosts[0].startswith("."):
        request.add_header("Host", hosts[0])
    try:
        # Straight to the container's own address, whatever proxy the environment names.
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(request, timeout=TIMEOUT) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except (OSError, ValueError) as error:
        return f"{url}: {error}"
    return None if 200 <= status < 300 else f"{url}: HTTP {status}"


def check_file(path: str, seconds: str) -> str | None:
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError as error:
        return f"{path}: {error.strerror}"
    return None if age <= float(seconds) else f"{path}: last touched {age:.0f} s ago"


def check_tcp(host: str, port: str) -> str | None:
    try:
        socket.create_connection((host, int(port)), timeout=TIMEOUT).close()
    except OSError as error:
        return f"{host}:{port}: {error}"
    return None


def check_unix(path: str) -> str | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(TIMEOUT)
        try:
            connection.connect(path)
        except OSError as error:
            return f"{path}: {error}"
    return None


CHECKS: dict[str, tuple[Callable[..., str | None], int]] = {
    "http": (check_http, 1),
    "file": (check_file, 2),
    "tcp": (check_tcp, 2),
    "unix": (check_unix, 1),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CHECKS or len(argv) - 1 != CHECKS[argv[0]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    check, _ = CHECKS[argv[0]]
    problem = check(*argv[1:])
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
