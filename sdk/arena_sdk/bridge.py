"""``python3 -m arena_sdk.bridge SOCKET -- COMMAND...``: join an agent to the referee.

The container sandbox runs this as the agent's command. It connects three times to
the referee's listening Unix socket ``SOCKET`` (in a folder shared with the host):
the first connection becomes the agent's stdin, the second its stdout, the third its
stderr. Then it replaces itself with ``COMMAND``, so the agent reads and writes the
sockets itself and no process copies bytes in between: a move costs what it costs
between two processes on the host.

Three connections rather than one keep the semantics of pipes: an agent that closes
its stdout is seen to close its output (end of file) while its stdin is still open,
and its log never mixes with the protocol. The referee accepts them in the order
they were made (the kernel queues connections first in, first out), and nothing of
the agent runs before all three exist.

Exit status 125: the referee could not be reached (the platform's fault); 127:
``COMMAND`` could not be executed (the agent's fault, e.g. a bad shebang line).
"""

from __future__ import annotations

import os
import socket
import sys

REFEREE_UNREACHABLE = 125
EXEC_FAILED = 127

USAGE = "usage: python3 -m arena_sdk.bridge SOCKET -- COMMAND [ARGUMENT...]"


def _connect(path: str) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    return connection


def bridge(path: str, command: list[str]) -> None:
    """Connect the standard streams to the referee at ``path``, then exec ``command``."""
    try:
        streams = [_connect(path) for _ in range(3)]
    except OSError as error:
        sys.stderr.write("arena-bridge: cannot reach the referee at %s: %s\n" % (path, error))
        sys.stderr.flush()
        os._exit(REFEREE_UNREACHABLE)
    requests, replies, log = streams
    # One direction each, as with pipes: the agent cannot write into its requests
    # or read from its replies.
    requests.shutdown(socket.SHUT_WR)
    replies.shutdown(socket.SHUT_RD)
    log.shutdown(socket.SHUT_RD)
    for target, connection in enumerate(streams):
        os.dup2(connection.fileno(), target)
        connection.close()
    try:
        os.execvp(command[0], command)
    except OSError as error:
        # stderr is the log connection by now: the referee shows this in the agent's log.
        os.write(2, ("arena-bridge: cannot start %s: %s\n" % (command[0], error.strerror)).encode())
        os._exit(EXEC_FAILED)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write(USAGE + "\n")
        return 2
    bridge(argv[0], argv[2:])
    return 0  # not reached: bridge() execs or exits


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
