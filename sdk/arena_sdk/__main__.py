"""``python -m arena_sdk path/to/main.py``: find the agent in a file and serve it (what a
sandbox runs).

``python -m arena_sdk connect --server URL --token-file FILE path/to/main.py``: play it
online instead, from this machine, with a model token (see ``arena_sdk.online``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

from arena_sdk.adapters import AgentNotFound, load_agent
from arena_sdk.serve import protocol_streams, run


def _connect(argv: list[str]) -> int:
    # Imported here, not at the top: every sandboxed agent starts through this module.
    import argparse
    from pathlib import Path

    from arena_sdk.online import connect

    parser = argparse.ArgumentParser(
        prog="python -m arena_sdk connect",
        description="Play an agent online on an Arena server, with a model token.",
    )
    parser.add_argument("--server", required=True, help="the site, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--token-file",
        help="a file holding the model token (or set ARENA_TOKEN); never pass it on the "
        "command line",
    )
    parser.add_argument("--duels", type=int, help="stop after this many duels (default: never)")
    parser.add_argument(
        "--no-join", action="store_true", help="do not join the queue (already in it)"
    )
    parser.add_argument("agent", help="the agent's file (.py) or folder")
    options = parser.parse_args(argv)
    if options.token_file:
        token = Path(options.token_file).read_text().strip()
    else:
        token = os.environ.get("ARENA_TOKEN", "").strip()
    if not token:
        parser.error("give --token-file FILE or set ARENA_TOKEN")
    try:
        agent = load_agent(options.agent)
    except AgentNotFound as error:
        print(f"arena: {options.agent}: {error}", file=sys.stderr)
        return 3
    try:
        return connect(
            agent,
            server=options.server,
            token=token,
            join=not options.no_join,
            duels=options.duels,
        )
    except KeyboardInterrupt:
        return 130


def main(argv: list[str]) -> int:
    if argv and argv[0] == "connect":
        return _connect(argv[1:])
    if len(argv) != 1:
        print(
            "usage: python -m arena_sdk path/to/agent.py\n"
            "       python -m arena_sdk connect --server URL --token-file FILE path/to/agent.py",
            file=sys.stderr,
        )
        return 2
    # Take the protocol streams first: the agent's module may print while it loads.
    streams = protocol_streams()
    try:
        agent = load_agent(argv[0])
    except AgentNotFound as error:
        print(f"arena: {argv[0]}: {error}", file=sys.stderr)
        return 3
    run(agent, streams)
    _leave()
    return 0


def _leave() -> None:
    """End the process once the duel is over, doing what an agent can notice of a normal
    exit (its threads are waited for, its ``atexit`` functions run, its output is
    flushed) but not the interpreter's teardown, object by object: that took 5 to 8 ms of
    a sandboxed agent's exit, 1 ms is left. It exits as usual where this Python lacks the
    hooks, and where compiled code other than the standard library's is loaded: a C or
    C++ extension may hold output in the C library's buffers, which only the usual exit
    writes out."""
    threading = sys.modules.get("threading")  # never imported: no thread to wait for
    shutdown = getattr(threading, "_shutdown", None)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None or (threading is not None and shutdown is None):
        return  # this Python lacks the hooks
    if not _only_python_loaded():
        return
    if shutdown is not None:
        shutdown()
    # As at a usual exit, a failing function is reported (by the call) and changes nothing
    # else (Python 3.9 raises the last failure again).
    with contextlib.suppress(Exception):
        run_exit_functions()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        # Closed or replaced by the agent, or its reader is gone: nothing more to say.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # type: ignore[union-attr]
    os._exit(0)


def _only_python_loaded() -> bool:
    """Whether every module loaded is Python code or the standard library's own compiled
    code (in ``lib-dynload``), which does not write through the C library's buffers;
    ``ctypes`` aside, through which an agent may call anything."""
    if "ctypes" in sys.modules:
        return False
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith((".so", ".pyd")) and "lib-dynload" not in path:
            return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
