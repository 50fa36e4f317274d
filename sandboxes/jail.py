"""Launcher run between the referee and an unconfined agent: limit this process, then exec
the agent.

Run as ``python -I -S jail.py <config>`` in a fresh session, by the referee's own
interpreter: ``<config>`` is the settings as ``marshal`` data in hexadecimal (``encode``).
Only built-in modules are imported at start (``json`` would cost every agent's start
about 8 ms; ``ctypes`` is imported only to leave the network), so it starts in a few
milliseconds.

It sets the resource limits, puts the referee's report descriptor on ``READY_FD``,
takes the agent's user id when asked (``uid``), as root also leaves the network, then
reports and becomes the agent. (A confined agent starts through bubblewrap instead, with
a bash step before it: ``confinement.launcher``.)

An exit with no report means the sandbox could not be set up (the platform's fault);
anything after the report is the agent's. The exit status alone would not do: an agent
can exit with any status, but it never holds the descriptor.
"""

import marshal
import os
import resource
import sys

SETUP_FAILED = 125
#: Where the agent's report descriptor is when its own code is about to start (confined
#: too: ``confinement.READY_SCRIPT``).
READY_FD = 3
CLONE_NEWNET = 0x40000000


def _fail(status: int, message: str) -> None:
    os.write(2, ("arena-sandbox: " + message + "\n").encode())
    os._exit(status)


def encode(config: dict[str, object]) -> str:
    """``config`` (dicts, lists, strings, numbers, None) as the jail's argument."""
    return marshal.dumps(config).hex()


def _unshare_network() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "unshare(CLONE_NEWNET): " + os.strerror(errno))


def main() -> None:
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    try:
        ready = config["ready_fd"]
        if ready != READY_FD:
            os.dup2(ready, READY_FD)
            os.close(ready)
        for name, (soft, hard) in config["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        if config.get("unshare_network"):
            _unshare_network()
        uid = config.get("uid")
        if uid is not None:
            os.setgroups([])
            os.setgid(config["gid"])
            os.setuid(uid)
        os.chdir(config["workdir"])
        os.umask(0o077)
    except OSError as error:
        _fail(SETUP_FAILED, f"cannot confine the agent: {error}")
    command = config["command"]
    # Nothing more of ours runs before the agent: report and let go of the descriptor.
    try:
        os.write(READY_FD, b".")
        os.close(READY_FD)
    except OSError as error:
        _fail(SETUP_FAILED, f"cannot report to the referee: {error}")
    try:
        os.execve(command[0], command, config["env"])
    except OSError as error:
        _fail(127, f"cannot start {command[0]}: {error.strerror}")


if __name__ == "__main__":
    main()
