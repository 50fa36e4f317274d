"""``python3 -s -B SDK/arena_sdk/fork_server.py ENTRY CONTROL_FD [--oom-kills]``: a sandbox's
fork server.

Started confined exactly as an agent is (its own user id, file system, PID and network
namespaces), but as PID 1 of its namespace, with the SDK loaded and none of the agent's
code: for each duel the referee sends it the ends of the agent's three streams and a
report socket (one packet ``F`` on ``CONTROL_FD``, a ``SOCK_SEQPACKET`` socket), and it
forks a child that takes them, reports, then loads ``ENTRY`` and serves it, as
``python -m arena_sdk ENTRY`` would in a fresh sandbox. A child starts in about a
millisecond where a fresh sandbox costs some 35 ms of the machine's CPU (bubblewrap's
namespaces and mounts, then an interpreter).

The process sandbox starts it under bubblewrap, the docker sandbox as the command of a
container kept for the agent (through ``arena_sdk.bridge --control``) with
``--oom-kills``: the server then reads the container's memory cgroup, and tells a child
killed for the container's memory from one killed otherwise.

One child at a time. When it has ended the server says so with its exit status
(``X`` and the status, 128 + N for signal N, as bubblewrap reports it; then ``M`` if the
kernel killed a process of the container for its memory meanwhile), then kills every
other process of its namespace (what the child left running: as PID 1 it is everybody's
parent and nobody may signal it from inside), removes its System V IPC objects, empties
``/tmp``, ``/dev/shm`` and a container's ``/dev/mqueue``, and says ``R`` (if anything is
left there, it exits instead, and the referee discards it): the next child finds the
sandbox as a fresh one would be. While a child runs, the referee may ask the server to move
it to other CPUs (``P`` and a list such as ``0`` or ``0,1``: its duel's CPU, then every
CPU), where the referee cannot move it itself (a worker in a container of its own, or
without the right to); a server that can do it says ``p`` once, first (a server of an
older SDK, in an image built before, does not, and the referee asks the engine instead).
Past half of its own CPU-time limit (its forks and clean-ups add up over its life) it
exits instead of saying ``R`` too, between two children, before the kernel would kill it
in the middle of one. The server cannot be
traced or read by its children (it is not dumpable; they are again), so what it says can
be trusted as far as the referee needs: a silent or dead server is discarded, with its
namespace, by the referee.

It is started from its file, not with ``-m``, and with the SDK alone on ``PYTHONPATH``:
``-m`` puts the working folder (the agent's) first on ``sys.path``, and a revision's
dependencies come before the standard library, so a ``socket.py`` of the agent's would be
the server's own and run beside every later child. The server's interpreter sees neither;
each child is given the ``sys.path`` and ``PYTHONPATH`` a fresh ``python -m arena_sdk
ENTRY`` would have (``_as_a_fresh_agent``; the agent's ``PYTHONPATH`` in
``ARENA_AGENT_PYTHONPATH`` where it differs from the server's).

Only the standard library, as the rest of the SDK.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import sys

from arena_sdk.__main__ import _leave
from arena_sdk.__main__ import main as serve_entry
from arena_sdk.cpus import pin_threads

TYPE_CHECKING = False  # typing.TYPE_CHECKING without its import (see agent.py)
if TYPE_CHECKING:
    from typing import Any

#: ``prctl`` options (linux/prctl.h).
PR_SET_DUMPABLE = 4
#: Emptied between two children: the agent's writable places, and where a container shows
#: its POSIX message queues (bubblewrap has none there: those stay, docs/sandboxes.md).
SCRATCH = ("/tmp", "/dev/shm")
MESSAGE_QUEUES = "/dev/mqueue"
#: The server's exit status when it could not empty them: the referee discards it.
NOT_CLEAN = 3
#: Its exit status, instead of saying ready, once it has used half of its CPU-time limit
#: (its own: forks and clean-ups): the referee discards it and starts another. At the
#: limit the kernel would kill it, and with it a child it was forking.
RETIRED = 4
#: The request, and the two answers.
FORK = b"F"
EXITED = b"X"
OUT_OF_MEMORY = b"M"
READY = b"R"
#: The referee's second request, while a child runs: move it to the CPUs that follow.
PIN = b"P"
#: What a server that takes ``PIN`` says once, first.
PINS = b"p"
#: How often a server that takes ``PIN`` reaps the orphans of its namespace while it waits
#: for its child (as PID 1 it is their parent): a zombie stays that long at most.
REAP_SECONDS = 0.1
#: The agent's ``PYTHONPATH``, where it is not the server's (its dependencies).
AGENT_PYTHONPATH = "ARENA_AGENT_PYTHONPATH"
#: The descriptors a fork request carries: the agent's stdin, stdout and log, then the report.
STREAMS = 4


def _libc() -> Any:
    """The C library (``prctl``, System V IPC), without leaving ``ctypes`` imported: an
    agent's exit takes a slower path when ``ctypes`` is loaded
    (``arena_sdk.__main__._only_python_loaded``)."""
    before = set(sys.modules)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for name in set(sys.modules) - before:
        del sys.modules[name]
    return libc


def _cpu_budget() -> float | None:
    """Seconds of CPU time this process may use before it retires: half of its soft
    ``RLIMIT_CPU`` (None: unlimited). ``resource`` is not left imported, as ``_libc``."""
    before = set(sys.modules)
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_CPU)
    unlimited = resource.RLIM_INFINITY
    for name in set(sys.modules) - before:
        del sys.modules[name]
    return None if soft == unlimited else soft / 2


def _cpu_used() -> float:
    """This process's own CPU time so far (its children's apart)."""
    times = os.times()
    return times.user + times.system


def _exit_status(status: int) -> int:
    """A ``waitpid`` status as bubblewrap reports one: the exit code, or 128 + signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _empty(folder: str) -> None:
    """Remove everything in ``folder`` (the child may have taken its own rights away)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, stat.S_IRWXU)
                _empty(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def _emptied(folder: str, *, must_exist: bool) -> bool:
    """Whether ``folder`` is empty now (what ``_empty`` could not remove stays: a path
    too long for the kernel, a tree too deep)."""
    try:
        return not os.listdir(folder)
    except FileNotFoundError:
        return not must_exist
    except OSError:
        return False


#: System V IPC objects a child may leave in the namespace (the server's IPC namespace
#: outlives its children): each table in ``/proc/sysvipc``, and how to remove one.
IPC_RMID = 0
SYSV_IPC = (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl"))


def _remove_sysv_ipc(libc: Any) -> None:
    """Remove every System V shared memory segment, semaphore set and message queue of the
    namespace (memory the kernel holds outside any process, counted by no limit)."""
    for table, call in SYSV_IPC:
        try:
            with open(f"/proc/sysvipc/{table}") as listing:
                rows = listing.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].isdigit():
                # shmctl(id, cmd, buf), semctl(id, num, cmd), msgctl(id, cmd, buf)
                arguments = (0, IPC_RMID) if table == "sem" else (IPC_RMID, None)
                getattr(libc, call)(int(fields[1]), *arguments)


def _kill_the_rest() -> None:
    """Kill every process of the namespace but this one, and reap them all (as PID 1, every
    orphan is this process's child)."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        reaped = False
        while True:
            try:
                os.waitpid(-1, 0)
                reaped = True
            except ChildProcessError:
                break
        if not reaped:
            return


#: Where a container sees the count of its processes killed for its memory (cgroup v2,
#: then v1), each on a line ``oom_kill N``.
OOM_KILL_COUNTS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def _oom_kills() -> int:
    """How many processes the kernel has killed for the container's memory (0: unknown)."""
    for path in OOM_KILL_COUNTS:
        try:
            with open(path) as counts:
                for line in counts:
                    name, _, count = line.partition(" ")
                    if name == "oom_kill":
                        return int(count)
        except (OSError, ValueError):
            continue
    return 0


def _wait_for(child: int) -> int:
    """Reap processes until ``child`` has ended; its status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # never: the child is ours until we reap it
            return 128 + signal.SIGKILL
        if pid == child:
            return _exit_status(status)


def _reaped(child: int) -> int | None:
    """Reap what has ended without waiting; ``child``'s status if it is among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # never: the child is ours until we reap it
            return 128 + signal.SIGKILL
        if pid == 0:
            return None
        if pid == child:
            return _exit_status(status)


def _takes_pins() -> bool:
    """Whether this kernel gives a process a descriptor (``pidfd_open``, Linux 5.3), which
    the wait for a child that also reads the referee's requests needs."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def _pin(child: int, cpus: bytes) -> None:
    """Every thread of ``child`` on ``cpus`` (``0,1``); nothing where the list is not one
    of CPUs this server may use, or the child has ended."""
    try:
        wanted = {int(cpu) for cpu in cpus.decode("ascii").split(",")}
    except ValueError:
        return
    pin_threads(child, wanted)


def _wait_answering(child: int, control: socket.socket) -> tuple[int, bool]:
    """Reap processes until ``child`` has ended, moving it meanwhile as the referee asks
    (``PIN``); its status, and whether the referee said anything else (it then goes once
    the child is over, as it would at that message between two children)."""
    import select

    ended = os.pidfd_open(child)
    try:
        waiting = select.poll()
        waiting.register(ended, select.POLLIN)
        waiting.register(control, select.POLLIN)
        unexpected = False
        while True:
            events = waiting.poll(REAP_SECONDS * 1000)
            status = _reaped(child)
            if status is not None:
                return status, unexpected
            if any(descriptor == control.fileno() for descriptor, _ in events):
                try:
                    request = control.recv(64)
                except OSError:
                    request = b""
                if request.startswith(PIN):
                    _pin(child, request[len(PIN) :])
                else:
                    # Closed (the referee is gone), or not a request for now: the child's
                    # end is still awaited, and reaped, as without this socket.
                    unexpected = True
                    waiting.unregister(control)
    finally:
        os.close(ended)


def _as_a_fresh_agent() -> None:
    """``sys.path`` and ``PYTHONPATH`` as ``python -s -B -m arena_sdk ENTRY`` has them in the
    agent's folder: that folder first, then the agent's ``PYTHONPATH``, then the
    interpreter's own places (without this file's folder, where the server started)."""
    server_path = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    agent_path = os.environ.pop(AGENT_PYTHONPATH, None)
    if agent_path is None:
        agent_path = os.environ.get("PYTHONPATH", "")
    else:
        os.environ["PYTHONPATH"] = agent_path
    here = os.path.dirname(os.path.abspath(__file__))
    own = [entry for entry in sys.path if entry != here and entry not in server_path]
    agent = [entry for entry in agent_path.split(os.pathsep) if entry]
    sys.path[:] = [os.getcwd(), *agent, *own]


def _become_agent(entry: str, streams: list[int], control: socket.socket, libc: Any) -> None:
    """In the child: take the streams, report, and serve the agent; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        stdin, stdout, log, report = streams
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(log, 2)
        control.close()
        for descriptor in (stdin, stdout, log):
            os.close(descriptor)
        # The byte that says the agent's own code is about to run; the kernel adds this
        # process's id as the referee sees it (the referee's end has SO_PASSCRED).
        os.write(report, b".")
        os.close(report)
        # As ``python -m arena_sdk ENTRY`` has them.
        sys.argv = [serve_entry.__code__.co_filename, entry]
        _as_a_fresh_agent()
        code = serve_entry([entry])
        _leave()
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code & 0xFF)


def serve_forks(entry: str, control: socket.socket, count_oom_kills: bool = False) -> int:
    """Fork a child for each request on ``control`` until the referee closes it."""
    libc = _libc()
    budget = _cpu_budget()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # The one signal Python handles by default: a handler would let a child signal process
    # 1 of its namespace (the kernel drops only the signals an init does not handle).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pins = _takes_pins()
    if pins:
        try:
            control.send(PINS)
        except OSError:
            return 0
    while True:
        try:
            message, streams, _flags, _address = socket.recv_fds(control, 16, STREAMS)
        except OSError:
            return 0
        if message.startswith(PIN) and not streams:
            continue  # for a child that has ended meanwhile: nothing to move
        if message != FORK or len(streams) != STREAMS:
            for descriptor in streams:
                os.close(descriptor)
            return 0 if not message else 2
        killed_before = _oom_kills() if count_oom_kills else 0
        child = os.fork()
        if child == 0:
            _become_agent(entry, streams, control, libc)
        for descriptor in streams:
            os.close(descriptor)
        status, unexpected = _wait_answering(child, control) if pins else (_wait_for(child), False)
        exited = EXITED + str(status).encode()
        if count_oom_kills and _oom_kills() > killed_before:
            exited += OUT_OF_MEMORY
        try:
            control.send(exited)
            _kill_the_rest()
            _remove_sysv_ipc(libc)
            for folder in (*SCRATCH, MESSAGE_QUEUES):
                _empty(folder)
            if not all(_emptied(folder, must_exist=True) for folder in SCRATCH) or not _emptied(
                MESSAGE_QUEUES, must_exist=False
            ):
                return NOT_CLEAN  # the next child would find something: not ready, ever
            if unexpected:
                return 0
            used = _cpu_used()
            if budget is not None and used >= budget:
                print(
                    f"fork server: retired, {used:.2f} s of its {2 * budget:g} s of CPU time used",
                    file=sys.stderr,
                    flush=True,
                )
                return RETIRED
            control.send(READY)
        except OSError:
            return 0


def main(argv: list[str]) -> int:
    count_oom_kills = argv[2:] == ["--oom-kills"]
    if len(argv) != 2 + count_oom_kills or not argv[1].isdigit():
        print(
            "usage: python3 -s -B SDK/arena_sdk/fork_server.py ENTRY CONTROL_FD [--oom-kills]",
            file=sys.stderr,
        )
        return 2
    control = socket.socket(fileno=int(argv[1]))
    return serve_forks(argv[0], control, count_oom_kills)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
