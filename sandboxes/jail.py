"""Launcher run between the referee and an agent: limit this process, then exec the agent.

Run as ``python -I -S jail.py <config>`` in a fresh session, by the referee's own
interpreter: ``<config>`` is the settings as ``marshal`` data in hexadecimal (``encode``).
Only built-in modules are imported at start (``json`` would cost every agent's start
about 8 ms; ``ctypes`` is imported only to leave the network), so it starts in a few
milliseconds.

It sets the resource limits, puts the referee's report descriptor on ``READY_FD``,
takes the agent's user id when asked (``uid``), then:

- **confined** (``confinement.launch_config``): moves the agent's stdin and stdout to
  ``AGENT_STDIN_FD`` and ``AGENT_STDOUT_FD``, and execs ``bwrap`` with ``/dev/null`` and
  the log instead, its options in a file (``--args``). bubblewrap's own two processes,
  which live as long as the agent, close every descriptor but their standard ones, so
  the agent alone holds its streams (one that closes its output is seen to, at once);
  ``bwrap`` builds the agent's view of the machine, and the last step before the agent
  puts the streams back, reports on ``READY_FD`` and becomes the agent;
- **unconfined** (no ``bwrap``, accepted knowingly): as root, also leaves the network;
  reports and becomes the agent.

An exit with no report means the sandbox could not be set up (the platform's fault);
anything after the report is the agent's. The exit status alone would not do: an agent
can exit with any status, but it never holds the descriptor.
"""

import marshal
import os
import resource
import sys

SETUP_FAILED = 125
READY_FD = 3
#: Confined, where the agent's stdin and stdout wait while bubblewrap runs.
AGENT_STDIN_FD = 4
AGENT_STDOUT_FD = 5
#: Confined, the file bubblewrap reads its options from (it closes it).
OPTIONS_FD = 6
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


def _set_streams_aside() -> None:
    os.dup2(0, AGENT_STDIN_FD)
    os.dup2(1, AGENT_STDOUT_FD)
    nothing = os.open("/dev/null", os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)


def _options_file(options: list[str]) -> None:
    """bubblewrap's options, NUL-separated, in a file on ``OPTIONS_FD``."""
    options_file = os.memfd_create("bwrap-options", 0)
    os.write(options_file, ("\0".join(options) + "\0").encode())
    os.lseek(options_file, 0, os.SEEK_SET)
    if options_file != OPTIONS_FD:
        os.dup2(options_file, OPTIONS_FD)
        os.close(options_file)


def main() -> None:
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    confined = config.get("confined", False)
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
        if confined:
            _set_streams_aside()
            _options_file(config["bwrap_options"])
    except OSError as error:
        _fail(SETUP_FAILED, f"cannot confine the agent: {error}")
    if confined:
        command = [config["bwrap"], "--args", str(OPTIONS_FD), "--", *config["command"]]
    else:
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
        _fail(SETUP_FAILED if confined else 127, f"cannot start {command[0]}: {error.strerror}")


if __name__ == "__main__":
    main()
