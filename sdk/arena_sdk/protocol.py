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


#: The constants ``json`` reads besides JSON's own (the referee never sends them).
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _DecoderSettings:
    """What ``json.JSONDecoder()`` gives its scanner (``_json.make_scanner`` reads these)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _c_json() -> tuple[Any, Any] | None:
    """The standard library's JSON scanner and encoder, made from its C half (``_json``)
    without importing ``json``, which imports ``re`` and compiles regular expressions the
    protocol never uses: 6 ms of a sandboxed agent's start, a fifth of it. The encoder is
    the one ``json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
    check_circular=False, default=_plain)`` makes (messages are trees built fresh for
    each send, so the circular-reference check would be pure cost). None where this
    Python has no such C half, or another signature: the json module then does it all."""
    try:
        from _json import encode_basestring, make_encoder, make_scanner

        encoder = make_encoder(None, _plain, encode_basestring, None, ":", ",", False, False, False)
        # A duck-typed stand-in for json.JSONDecoder: what the C scanner reads of it.
        scanner = make_scanner(_DecoderSettings())  # type: ignore[arg-type]
        if "".join(encoder({"a": [1, "\u00e9"]}, 0)) != '{"a":[1,"\u00e9"]}':
            return None
    except Exception:
        return None
    return scanner, encoder


_scan, _encode = _c_json() or (None, None)


def encode(message: dict[str, Any]) -> bytes:
    """One message as a protocol line (compact JSON and a newline)."""
    if _encode is not None:
        return "".join(_encode(message, 0)).encode() + b"\n"
    import json

    line = json.dumps(
        message,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
        check_circular=False,
        default=_plain,
    )
    return line.encode() + b"\n"


def decode(line: bytes | str) -> dict[str, Any]:
    """Parse one protocol line; raises ValueError unless it is a JSON object with a type."""
    # json.loads(bytes) first sniffs the encoding; the protocol is UTF-8, so decode here.
    text = line.decode() if isinstance(line, (bytes, bytearray)) else line
    message: Any = None
    end = -1
    if _scan is not None:
        # The usual line: the object at once, then its newline. A malformed value raises
        # the json module's error.
        try:
            message, end = _scan(text, 0)
        except StopIteration:  # no value at the start: leading whitespace, or nothing
            end = -1
    if end < 0 or (end < len(text) and not text[end:].isspace()):
        message = _json_decode(text)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError("a message must be a JSON object with a string 'type'")
    return message


def _json_decode(text: str) -> Any:
    """The json module's reading of ``text``, or its error where ``text`` is not one JSON
    value with only whitespace around it."""
    import json

    decoder = json.JSONDecoder()
    try:
        message, end = decoder.raw_decode(text)
    except json.JSONDecodeError:
        message, end = decoder.decode(text), len(text)  # leading whitespace, or the error
    if end < len(text) and not text[end:].isspace():
        raise json.JSONDecodeError("Extra data", text, end)
    return message
