"""``python3 -m arena_sdk.bridge SOCKET -- COMMAND...``: join an agent to the referee.

The container sandbox runs this as the agent's command. It connects to the referee's
listening Unix socket ``SOCKET`` (in a folder shared with the host), asks for pipes (one
byte, ``P``) and receives three file descriptors on that connection (``SCM_RIGHTS``): the
read end of the referee's requests and the write ends of its replies and of the agent's
log. They become the agent's stdin, stdout and stderr, and the bridge replaces itself with
``COMMAND``, so the agent reads and writes pipes to the referee's process itself, as an
agent of the process sandbox does, and no process copies bytes in between: a move costs
what it costs between two processes on the host (a pipe's round trip costs about half of
a Unix socket's).

Three pipes rather than one connection keep the semantics of a process's streams: an
agent that closes its stdout is seen to close its output (end of file) while its stdin is
still open, and its log never mixes with the protocol. Nothing of the agent runs before
all three are in place. (A referee older than this bridge took three connections as the
streams; it never answers ``P``, and a bridge of that time, in an image built then,
connects three times without asking: the referee tells them apart.)

Exit status 125: the referee could not be reached (the platform's fault); 127:
``COMMAND`` could not be executed (the agent's fault, e.g. a bad shebang line).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys

REFEREE_UNREACHABLE = 125
EXEC_FAILED = 127

USAGE = "usage: python3 -m arena_sdk.bridge SOCKET -- COMMAND [ARGUMENT...]"


#: What the bridge asks for, and what the referee's answer carries with the descriptors.
PIPES = b"P"
STREAMS = 3  # stdin, stdout, stderr


def _pipes(path: str) -> list[int]:
    """The agent's three streams, received from the referee at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(PIPES)
        message, descriptors, _, _ = socket.recv_fds(connection, 1, STREAMS)
        if message != PIPES or len(descriptors) != STREAMS:
            for descriptor in descriptors:
                os.close(descriptor)
            raise OSError("the referee answered without the agent's streams")
        return descriptors


def bridge(path: str, command: list[str]) -> None:
    """Connect the standard streams to the referee at ``path``, then exec ``command``."""
    try:
        streams = _pipes(path)
    except OSError as error:
        sys.stderr.write("arena-bridge: cannot reach the referee at %s: %s\n" % (path, error))
        sys.stderr.flush()
        os._exit(REFEREE_UNREACHABLE)
    # Above 2 first, so that placing one stream never covers another not yet placed.
    high = [fcntl.fcntl(descriptor, fcntl.F_DUPFD, 3) for descriptor in streams]
    for descriptor in streams:
        os.close(descriptor)
    for target, descriptor in enumerate(high):
        os.dup2(descriptor, target)  # inheritable, unlike what recv_fds gives
        os.close(descriptor)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        # stderr is the log pipe by now: the referee shows this in the agent's log.
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
