"""An agent that tries to get out of its sandbox while it starts, as an attacker would, then
plays the first legal action of every turn.

It writes ``FOUND <what>`` on its log for everything it gets that a confined agent must
not, and ``searched <what>`` for each attempt, so a test can tell that it did try:

- every file of the machine it can list whose name looks like a platform's data (``*.sqlite3``,
  a database folder, settings, uploads, a canary), and the content of each it can read;
- the folders ``HUNT_PATHS`` names (``:``-separated: where an attacker would guess the
  platform's database, uploads and checkout), and ``/home``, ``/root``, ``/srv``;
- every process it can see other than its own, with its command line and environment;
- a file written anywhere but its ``/tmp`` and ``/dev/shm`` (its own, bounded);
- the loopback ports in ``HUNT_PORTS``, an abstract socket ``HUNT_ABSTRACT``, and the
  usual Unix sockets of Docker, PostgreSQL and Redis.

``HUNT_SECRET`` is a string that appears only where it must not look (a canary's content,
the referee's environment): finding it anywhere is ``FOUND``.
"""

import fnmatch
import os
import socket
import sys

from arena_sdk import Agent

SECRET = os.environ.get("HUNT_SECRET", "")
GUESSES = [path for path in os.environ.get("HUNT_PATHS", "").split(":") if path]
INTERESTING = ("*.sqlite3", "*.sqlite", "*.db", "*canary*", "settings.py", ".env", "*.sock")
#: What a runtime holds by the thousand and no platform keeps its data in.
SKIPPED = ("/proc", "/sys", "/dev", "/usr/share", "/usr/include", "/usr/lib/python3")
UNIX_SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/postgresql/.s.PGSQL.5432",
    "/var/run/postgresql/.s.PGSQL.5432",
    "/tmp/.s.PGSQL.5432",
    "/run/redis/redis-server.sock",
)


def say(line):
    sys.stderr.write(line + "\n")


def found(what):
    say("FOUND " + what)


def read_and_judge(path):
    try:
        with open(path, "rb") as handle:
            content = handle.read(1 << 20)
    except OSError:
        return
    if (SECRET and SECRET.encode() in content) or content.startswith(b"SQLite format 3"):
        found(f"read {path}: {content[:60]!r}")


def walk(top):
    for folder, folders, files in os.walk(top, onerror=lambda error: None):
        folders[:] = [name for name in folders if os.path.join(folder, name) not in SKIPPED]
        for name in files + folders:
            path = os.path.join(folder, name)
            if any(fnmatch.fnmatch(name, pattern) for pattern in INTERESTING):
                say("searched " + path)
                if os.path.isfile(path):
                    read_and_judge(path)
            if SECRET and SECRET in path:
                found("a path " + path)


def search_files():
    walk("/")
    for guess in [*GUESSES, "/home", "/root", "/srv"]:
        say("searched " + guess)
        if os.path.isfile(guess):
            read_and_judge(guess)
        elif os.path.isdir(guess):
            try:
                names = os.listdir(guess)
            except OSError:
                continue
            if guess in GUESSES and names:
                found(f"listed {guess}: {sorted(names)[:10]}")
            walk(guess)


def search_processes():
    own = {os.getpid(), os.getppid()}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in own:
            continue
        say("searched process " + name)
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as handle:
                    content = handle.read()
            except OSError:
                continue
            if SECRET and SECRET.encode() in content:
                found(f"process {name} {part}: {content[:80]!r}")
            if part == "cmdline" and content and b"arena-agent" not in content:
                # A process that is not part of this agent's own sandbox.
                found(f"process {name}: {content[:80]!r}")


def try_writing():
    for folder in [
        "/",
        "/agent",
        "/opt/arena/sdk",
        "/usr",
        "/etc",
        "/var/tmp",
        "/dev",
        "/run",
        os.getcwd(),
        *GUESSES,
    ]:
        if not os.path.isdir(folder):
            continue
        path = os.path.join(folder, "planted-by-an-agent")
        say("searched writing " + path)
        try:
            with open(path, "w") as handle:
                handle.write("planted")
        except OSError:
            continue
        found("wrote " + path)


def try_connecting():
    for port in [int(port) for port in os.environ.get("HUNT_PORTS", "").split(":") if port]:
        say(f"searched port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            found(f"connected to 127.0.0.1:{port}")
        except OSError:
            pass
    addresses = list(UNIX_SOCKETS)
    if os.environ.get("HUNT_ABSTRACT"):
        addresses.append("\0" + os.environ["HUNT_ABSTRACT"])
    for address in addresses:
        say(f"searched socket {address!r}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(1)
                client.connect(address)
            found(f"connected to {address!r}")
        except OSError:
            pass


def search_environment():
    for name, value in os.environ.items():
        if SECRET and SECRET in value and name != "HUNT_SECRET":
            found(f"environment {name}")


for attempt in (search_files, search_processes, try_writing, try_connecting, search_environment):
    try:
        attempt()
    except Exception as error:  # an attempt that breaks must not stop the others
        say(f"searched {attempt.__name__}: {error!r}")
say("search done")


class SearchesTheHost(Agent):
    def act(self, turn):
        return turn.legal_actions[0]
