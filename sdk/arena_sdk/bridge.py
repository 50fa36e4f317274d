"""``python3 -m arena_sdk.bridge SOCKET [--control FD] -- COMMAND...``: join an agent to the
referee.

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

With ``--control FD`` the bridge asks instead for one control socket (one byte, ``S``),
places it at descriptor ``FD`` and execs ``COMMAND`` on the container's own streams: this
is how the container sandbox starts a fork server (``arena_sdk.fork_server``), which
receives each duel's streams on that socket.

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

USAGE = "usage: python3 -m arena_sdk.bridge SOCKET [--control FD] -- COMMAND [ARGUMENT...]"


#: What the bridge asks for, and what the referee's answer carries with the descriptors.
PIPES = b"P"
STREAMS = 3  # stdin, stdout, stderr
#: What a fork server's bridge asks for: one control socket.
CONTROL = b"S"


def _receive(path: str, ask: bytes, count: int) -> list[int]:
    """``count`` descriptors, asked for with ``ask`` of the referee at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(ask)
        message, descriptors, _, _ = socket.recv_fds(connection, 1, count)
        if message != ask or len(descriptors) != count:
            for descriptor in descriptors:
                os.close(descriptor)
            raise OSError("the referee answered without the agent's streams")
        return descriptors


def bridge(path: str, command: list[str], control: int | None = None) -> None:
    """Connect the standard streams (or, with ``control``, a control socket placed at that
    descriptor) to the referee at ``path``, then exec ``command``."""
    ask, count = (PIPES, STREAMS) if control is None else (CONTROL, 1)
    try:
        received = _receive(path, ask, count)
    except OSError as error:
        sys.stderr.write("arena-bridge: cannot reach the referee at %s: %s\n" % (path, error))
        sys.stderr.flush()
        os._exit(REFEREE_UNREACHABLE)
    targets = list(range(STREAMS)) if control is None else [control]
    # Above the targets first, so that placing one never covers another not yet placed.
    high = [fcntl.fcntl(descriptor, fcntl.F_DUPFD, max(targets) + 1) for descriptor in received]
    for descriptor in received:
        os.close(descriptor)
    for target, descriptor in zip(targets, high, strict=True):
        os.dup2(descriptor, target)  # inheritable, unlike what recv_fds gives
        os.close(descriptor)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        # stderr is the log pipe by now (the referee shows this in the agent's log), or the
        # container's own for a fork server (the engine's log).
        os.write(2, ("arena-bridge: cannot start %s: %s\n" % (command[0], error.strerror)).encode())
        os._exit(EXEC_FAILED)


def main(argv: list[str]) -> int:
    control = None
    if len(argv) > 2 and argv[1] == "--control" and argv[2].isdigit():
        control = int(argv[2])
        argv = [argv[0], *argv[3:]]
    if len(argv) < 3 or argv[1] != "--" or control in (0, 1, 2):
        sys.stderr.write(USAGE + "\n")
        return 2
    bridge(argv[0], argv[2:], control)
    return 0  # not reached: bridge() execs or exits


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
