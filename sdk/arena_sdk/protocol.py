"""The Arena wire protocol: newline-delimited JSON over stdin/stdout.

One agent process serves every match of a duel. The referee writes one JSON object
per line and the agent answers on its own stdout; stderr is the agent's log.

    {"type": "hello", ...}          ->  {"type": "ready"}
    {"type": "start", ...}          (no answer)
    {"type": "act", "id": 7, ...}   ->  {"type": "action", "id": 7, "action": ...}
    {"type": "end", ...}            (no answer)
    {"type": "bye"}                 the agent exits

An agent whose code fails while choosing may answer
``{"type": "error", "id": 7, "message": "..."}`` instead of an action; the referee
charges the match to it at once instead of waiting for the move time limit.
The full description lives in docs/protocol.md.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without its import (see agent.py)
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = 1

HELLO = "hello"
READY = "ready"
START = "start"
ACT = "act"
ACTION = "action"
ERROR = "error"
END = "end"
BYE = "bye"

#: Largest line either side may send unless the hello says otherwise.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays (``np.argmax`` returns ``np.int64``) as plain JSON values."""
    for method in ("tolist", "item"):
        if callable(getattr(value, method, None)):
            return getattr(value, method)()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# Messages are trees built fresh for each send, so the circular-reference check is
# pure cost on the hot path.
_encoder = json.JSONEncoder(
    ensure_ascii=False,
    separators=(",", ":"),
    allow_nan=False,
    check_circular=False,
    default=_plain,
)
_decoder = json.JSONDecoder()


def encode(message: dict[str, Any]) -> bytes:
    """One message as a protocol line (compact JSON and a newline)."""
    return _encoder.encode(message).encode() + b"\n"


def decode(line: bytes | str) -> dict[str, Any]:
    """Parse one protocol line; raises ValueError unless it is a JSON object with a type."""
    # json.loads(bytes) first sniffs the encoding; the protocol is UTF-8, so decode here.
    text = line.decode() if isinstance(line, (bytes, bytearray)) else line
    try:
        # The usual line: the object at once, then its newline (``decode`` would look for
        # whitespace on both sides with two regular expressions).
        message, end = _decoder.raw_decode(text)
    except json.JSONDecodeError:
        message, end = _decoder.decode(text), len(text)  # leading whitespace, or the error
    if end < len(text) and not text[end:].isspace():
        raise json.JSONDecodeError("Extra data", text, end)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError("a message must be a JSON object with a string 'type'")
    return message
