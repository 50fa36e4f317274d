"""Launcher run between the referee and an agent: confine this process, then exec the agent.

Run as ``python -I -S jail.py <config>`` in a fresh session, by the referee's own
interpreter: ``<config>`` is the settings as ``marshal`` data in hexadecimal (``encode``).
Only built-in modules are imported at start (``json`` would cost every agent's start
about 8 ms; ``ctypes`` is imported only to leave the network), so it starts in a few
milliseconds. Order matters: resource limits and the network namespace need
privileges, so they come before the switch to the agent's unprivileged user.

Exit status 125 means the sandbox could not be set up (the platform's fault);
127 means the agent's entry point could not be executed (the agent's fault).
"""

import marshal
import os
import resource
import sys

SETUP_FAILED = 125
EXEC_FAILED = 127
CLONE_NEWNET = 0x40000000


def _fail(status, message):
    os.write(2, ("arena-sandbox: " + message + "\n").encode())
    os._exit(status)


def encode(config):
    """``config`` (dicts, lists, strings, numbers, None) as the jail's argument."""
    return marshal.dumps(config).hex()


def _unshare_network():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "unshare(CLONE_NEWNET): " + os.strerror(errno))


def main():
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    try:
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
    try:
        os.execve(command[0], command, config["env"])
    except OSError as error:
        _fail(EXEC_FAILED, f"cannot start {command[0]}: {error.strerror}")


if __name__ == "__main__":
    main()
