"""Launcher run between the referee and an agent: limit this process, then exec the agent.

Run as ``python -I -S jail.py <config>`` in a fresh session, by the referee's own
interpreter: ``<config>`` is the settings as ``marshal`` data in hexadecimal (``encode``).
Only built-in modules are imported at start (``json`` would cost every agent's start
about 8 ms; ``ctypes`` is imported only to leave the network), so it starts in a few
milliseconds.

It sets the resource limits, puts the referee's report descriptor on ``READY_FD``, then:

- **confined** (``confinement.bwrap_command`` is the command): moves the agent's stdin
  and stdout to ``AGENT_STDIN_FD`` and ``AGENT_STDOUT_FD`` and execs ``bwrap`` with
  ``/dev/null`` and the log instead. bubblewrap's own two processes, which live as long
  as the agent, close every descriptor but their standard ones, so the agent alone holds
  its streams (one that closes its output is seen to, at once); ``bwrap`` builds the
  agent's view of the machine, and the last step before the agent puts the streams back,
  reports on ``READY_FD`` and becomes the agent;
- **unconfined** (no ``bwrap``, accepted knowingly): as root, leaves the network and
  takes the agent's user id itself; reports and becomes the agent.

Exit status 125 with no report means the sandbox could not be set up (the platform's
fault); anything after the report is the agent's. The status alone would not do: an
agent can exit with any status, but it never holds the descriptor.
"""

import marshal
import os
import resource
import sys

SETUP_FAILED = 125
READY_FD = 3
#: Confined, where the agent's stdin and stdout wait while bubblewrap runs (``confined``).
AGENT_STDIN_FD = 4
AGENT_STDOUT_FD = 5
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


def _set_streams_aside():
    os.dup2(0, AGENT_STDIN_FD)
    os.dup2(1, AGENT_STDOUT_FD)
    nothing = os.open("/dev/null", os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)


def trial(command):
    """Run ``command`` (a ``bwrap`` command line, which reports itself) through the jail
    as an agent would be, with no limits and nothing on its streams; returns (reported on
    READY_FD, exit status or None, its stderr)."""
    import subprocess

    read_end, write_end = os.pipe()
    config = {
        "rlimits": {},
        "command": list(command),
        "env": {"PATH": "/usr/bin:/bin"},
        "workdir": "/",
        "ready_fd": write_end,
        "confined": True,
    }
    try:
        completed = subprocess.run(
            [sys.executable, "-I", "-S", __file__, encode(config)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            pass_fds=(write_end,),
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return False, None, str(error)
    finally:
        os.close(write_end)
    try:
        reported = os.read(read_end, 1) == b"."
    finally:
        os.close(read_end)
    stderr = completed.stderr.decode(errors="replace").strip()
    return reported, completed.returncode, stderr or f"exit status {completed.returncode}"


def main():
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
        if config.get("confined"):
            _set_streams_aside()
    except OSError as error:
        _fail(SETUP_FAILED, f"cannot confine the agent: {error}")
    command = config["command"]
    if not config.get("confined"):
        # Nothing more of ours runs before the agent: report and let go of the descriptor.
        try:
            os.write(READY_FD, b".")
            os.close(READY_FD)
        except OSError as error:
            _fail(SETUP_FAILED, f"cannot report to the referee: {error}")
    try:
        os.execve(command[0], command, config["env"])
    except OSError as error:
        if config.get("confined"):
            _fail(SETUP_FAILED, f"cannot start {command[0]}: {error.strerror}")
        _fail(127, f"cannot start {command[0]}: {error.strerror}")


if __name__ == "__main__":
    main()
