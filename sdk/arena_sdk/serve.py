"""The agent side of the protocol: read requests, call the agent, answer."""

from __future__ import annotations

import contextlib
import os
import sys

from arena_sdk import protocol
from arena_sdk.agent import Agent, Match, Result, Turn

TYPE_CHECKING = False  # typing.TYPE_CHECKING without its import (see agent.py)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Optional


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """Take stdin/stdout for the protocol and send ``print`` output to stderr.

    A stray ``print`` in an agent would otherwise corrupt the protocol stream; here
    it lands in the agent's log instead.
    """
    incoming = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    outgoing = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return incoming, outgoing


def _print_traceback() -> None:
    # Imported when an agent fails: traceback costs every agent's start about 3 ms.
    import traceback

    traceback.print_exc()


def _error_message(error: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception_only(type(error), error)).strip()


def _flush_log() -> None:
    """Send what the agent printed during its move before the answer: the referee gives a
    move the log written before its answer (a line still in a buffer would go to the next).

    Called at every move: ``print`` goes to stderr (``protocol_streams``), so one stream is
    usually flushed, and a failed flush costs nothing until it happens."""
    stdout, stderr = sys.stdout, sys.stderr
    for stream in (stdout,) if stdout is stderr else (stdout, stderr):
        # Not contextlib.suppress: it costs a move 0.8 µs.
        try:  # noqa: SIM105
            stream.flush()
        except Exception:
            pass


def _call_hook(hook: Any, argument: Any) -> None:
    """Run a start or end hook; a failure there is logged, not fatal: no action depends on it."""
    try:
        hook(argument)
    except Exception:
        _print_traceback()


def serve(agent: Agent, incoming: BinaryIO, outgoing: BinaryIO) -> None:
    """Answer the referee until it says bye or closes the stream."""
    hello: dict = {}
    match: Optional[Match] = None
    last_observation: Optional[dict] = None
    for line in incoming:
        message = protocol.decode(line)
        kind = message["type"]
        if kind == protocol.ACT:
            if match is None:
                outgoing.write(
                    protocol.encode(
                        {
                            "type": protocol.ERROR,
                            "id": message.get("id"),
                            "message": "protocol error: act before start",
                        }
                    )
                )
                continue
            last_observation = message["observation"]
            time_left = message.get("time_left", {})
            turn = Turn(
                match=match,
                step=message["step"],
                observation=last_observation,
                legal_actions=message["legal_actions"],
                move_time_left=time_left.get("move", 0.0),
                time_bank_left=time_left.get("bank", 0.0),
            )
            try:
                reply: dict[str, Any] = {
                    "type": protocol.ACTION,
                    "id": message["id"],
                    "action": agent.act(turn),
                }
                line_out = protocol.encode(reply)
            except MemoryError:
                line_out = protocol.encode(
                    {
                        "type": protocol.ERROR,
                        "id": message["id"],
                        "kind": "memory",
                        "message": "MemoryError: the agent ran out of memory",
                    }
                )
            except Exception as error:
                _print_traceback()
                line_out = protocol.encode(
                    {"type": protocol.ERROR, "id": message["id"], "message": _error_message(error)}
                )
            _flush_log()
            outgoing.write(line_out)
        elif kind == protocol.START:
            match = Match(
                environment=hello.get("environment", ""),
                configuration=hello.get("configuration", {}),
                index=message["match"],
                player=message["player"],
                seed=message["seed"],
                first_player=message.get("first_player", 0),
                limits=hello.get("limits", {}),
                player_count=hello.get("player_count", 2),
            )
            last_observation = message.get("observation")
            _call_hook(agent.start, match)
        elif kind == protocol.END:
            if match is not None:
                _call_hook(
                    agent.end,
                    Result(
                        match=match,
                        outcome=message["result"],
                        scores=message.get("scores", []),
                        reason=message.get("reason", ""),
                        observation=message.get("observation", last_observation),
                    ),
                )
            match = None
        elif kind == protocol.HELLO:
            hello = message
            outgoing.write(
                protocol.encode(
                    {
                        "type": protocol.READY,
                        "protocol": protocol.PROTOCOL_VERSION,
                        "name": agent.describe(),
                    }
                )
            )
        elif kind == protocol.BYE:
            return


def run(agent: Agent, streams: Optional[tuple[BinaryIO, BinaryIO]] = None) -> None:
    """Serve ``agent`` on this process's stdin/stdout (the entry point of a sandbox)."""
    incoming, outgoing = streams or protocol_streams()
    with contextlib.suppress(BrokenPipeError):
        serve(agent, incoming, outgoing)
