"""A small OpenAI-compatible chat server on this machine, with no model weights.

It answers ``POST /v1/chat/completions`` (streamed as server-sent events, or whole) and
``GET /v1/models`` like vLLM, llama.cpp or Ollama do, from a *brain*: a function of the
request that returns a ``Reply``. The default brain, ``rule_based``, reads the harness's
prompt (the game, the observation as JSON, the legal actions) and plays a simple rule
(win, block, centre) with mistakes in proportion to the request's ``temperature``, so two
"models" at two temperatures differ in strength. Tests give a scripted brain instead: a
``Reply`` can be slow, an HTTP error (with ``Retry-After``), a stream cut short, or huge.

    python -m llm.local_server --port 8011        # serves http://127.0.0.1:8011/v1

    with LocalLLMServer() as server:              # in a test: a free port, a thread
        config = LLMConfig(base_url=server.url, model="rule-based")
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import http.server
import json
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

MODEL = "rule-based"


@dataclasses.dataclass(frozen=True)
class Reply:
    """What the server does with one request."""

    text: str = ""
    #: An HTTP error status instead of an answer (with ``text`` as its message).
    status: int = 200
    #: Seconds before the answer starts.
    delay: float = 0.0
    #: ``Retry-After`` seconds sent with an error.
    retry_after: float | None = None
    #: Stop a streamed answer halfway, without its end (a broken connection).
    truncate: bool = False
    #: Report token usage (as ``stream_options.include_usage`` asks).
    usage: bool = True
    #: Close the connection after the answer, unannounced, as a server does with a
    #: kept-alive connection that has been idle too long.
    close: bool = False
    #: Answer with one JSON completion even when a stream was asked (some servers do).
    ignore_stream: bool = False


Brain = Callable[[dict[str, Any]], Reply]


# -- the rule-based player ------------------------------------------------------------------

_LINE = re.compile(r"^(?P<key>Game|Observation \(JSON\)|Legal actions): (?P<value>.*)$", re.M)


def _prompt_facts(request: dict[str, Any]) -> dict[str, Any]:
    """The game, observation and legal actions in the harness's prompts (the last ones)."""
    facts: dict[str, Any] = {}
    for message in request.get("messages", []):
        if message.get("role") != "user":
            continue
        for found in _LINE.finditer(str(message.get("content", ""))):
            key, value = found.group("key"), found.group("value")
            if key == "Game":
                facts["game"] = value.split(".")[0].strip()
            else:
                try:
                    facts[key] = json.loads(value)
                except ValueError:
                    continue
    return facts


def _lines(rows: int, columns: int, inarow: int) -> list[list[int]]:
    lines = []
    for row in range(rows):
        for column in range(columns):
            for row_step, column_step in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [
                    (row + k * row_step) * columns + column + k * column_step for k in range(inarow)
                ]
                end_row, end_column = (
                    row + (inarow - 1) * row_step,
                    column + (inarow - 1) * column_step,
                )
                if 0 <= end_row < rows and 0 <= end_column < columns:
                    lines.append(cells)
    return lines


def _completes_line(board: list[int], cell: int, mark: int, lines: list[list[int]]) -> bool:
    return any(
        cell in line and all(board[other] == mark for other in line if other != cell)
        for line in lines
    )


def _landing(board: list[int], column: int, rows: int, columns: int) -> int:
    for row in range(rows - 1, -1, -1):
        if board[row * columns + column] == 0:
            return row * columns + column
    return column


def _board_choice(game: str, observation: dict[str, Any], legal: list[Any]) -> tuple[Any, str]:
    board = [int(mark) for mark in observation.get("board", [])]
    mark = int(observation.get("mark", 1))
    if game == "tic_tac_toe":
        rows = columns = 3
        inarow = 3
        cell_of: Callable[[Any], int] = int
        preference = [4, 0, 2, 6, 8, 1, 3, 5, 7]
    else:
        rows, columns, inarow = 6, 7, 4
        size = rows * columns
        if len(board) != size:
            return legal[0], "I play the first legal action."
        cell_of = lambda column: _landing(board, int(column), rows, columns)  # noqa: E731
        preference = [3, 2, 4, 1, 5, 0, 6]
    lines = _lines(rows, columns, inarow)
    for action in legal:
        if _completes_line(board, cell_of(action), mark, lines):
            return action, f"Playing {action} completes a line: I win."
    for action in legal:
        if _completes_line(board, cell_of(action), 3 - mark, lines):
            return action, f"My opponent threatens to win at {action}, so I block it."
    for action in preference:
        if action in legal:
            return action, f"No line to win or block; {action} is the best spot left."
    return legal[0], "I play the first legal action."


def rule_based(request: dict[str, Any]) -> Reply:
    """Win, block, or take the best square; a random legal action instead with probability
    ``temperature / 2`` (seeded by the request, so the same request gets the same answer)."""
    facts = _prompt_facts(request)
    legal = facts.get("Legal actions")
    if not isinstance(legal, list) or not legal:
        return Reply("I cannot see any legal action in this prompt, so I cannot answer.")
    digest = hashlib.sha256(json.dumps(request.get("messages"), sort_keys=True).encode())
    chance = random.Random(f"{digest.hexdigest()}:{request.get('seed')}")
    temperature = float(request.get("temperature") or 0.0)
    game = facts.get("game", "")
    observation = facts.get("Observation (JSON)") or {}
    if chance.random() < temperature / 2:
        action, reason = chance.choice(legal), "I follow a hunch."
    elif game in ("tic_tac_toe", "connect_four") and isinstance(observation, dict):
        action, reason = _board_choice(game, observation, legal)
    else:
        action, reason = legal[0], "I play the first legal action."
    return Reply(f"{reason}\nANSWER: {json.dumps(action)}")


# -- the server ---------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each event is sent as it is written, as a real server's are: with Nagle's algorithm
    # on, a small write waits for the client's delayed acknowledgement (40 ms).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.connected()

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "the body is not JSON"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        self.server.record(request, {name.lower(): value for name, value in self.headers.items()})
        reply = self.server.brain(request)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            headers = {}
            if reply.retry_after is not None:
                headers["Retry-After"] = f"{reply.retry_after:g}"
            message = reply.text or f"scripted status {reply.status}"
            self._json(reply.status, {"error": {"message": message}}, headers)
            return
        if request.get("stream") and not reply.ignore_stream:
            self._stream(request, reply)
        else:
            self._json(200, self._completion(request, reply))
        if reply.close:
            self.close_connection = True

    def _usage(self, request: dict[str, Any], text: str) -> dict[str, int]:
        prompt = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
        return {
            "prompt_tokens": prompt // 4 + 1,
            "completion_tokens": len(text) // 4 + 1,
            "total_tokens": prompt // 4 + len(text) // 4 + 2,
        }

    def _completion(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", MODEL),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": "stop",
                }
            ],
        }
        if reply.usage:
            document["usage"] = self._usage(request, reply.text)
        return document

    def _json(
        self, status: int, document: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _event(self, document: dict[str, Any] | str) -> None:
        payload = document if isinstance(document, str) else json.dumps(document)
        self._chunk(f"data: {payload}\n\n".encode())

    def _stream(self, request: dict[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {
            "id": "chatcmpl-local",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model", MODEL),
        }
        text = reply.text
        pieces = [text[start : start + 4096] for start in range(0, len(text), 4096)] or [""]
        if reply.truncate:
            pieces = pieces[: max(1, len(pieces) // 2)]
        for piece in pieces:
            delta = {"role": "assistant", "content": piece}
            self._event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        if reply.truncate:
            # The connection breaks: no end of the answer, no end of the chunked body.
            self.wfile.flush()
            self.close_connection = True
            return
        self._event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        include_usage = (request.get("stream_options") or {}).get("include_usage")
        if reply.usage and include_usage:
            self._event({**base, "choices": [], "usage": self._usage(request, text)})
        self._event("[DONE]")
        self._chunk(b"")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], brain: Brain) -> None:
        super().__init__(address, _Handler)
        self.brain = brain
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.connections = 0
        self._lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away mid-answer (a harness that gave up)
        super().handle_error(request, client_address)

    def connected(self) -> None:
        with self._lock:
            self.connections += 1

    def record(self, request: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)


class LocalLLMServer:
    """The server in a thread of this process, on ``host`` and a free port by default."""

    def __init__(self, brain: Brain = rule_based, *, host: str = "127.0.0.1", port: int = 0):
        self._server = _Server((host, port), brain)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="local-llm", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat request received, in order."""
        return self._server.requests

    @property
    def headers(self) -> list[dict[str, str]]:
        """The HTTP headers of every chat request (names in lower case), in order."""
        return self._server.headers

    @property
    def connections(self) -> int:
        """Connections accepted so far (a client that keeps its connection opens one)."""
        return self._server.connections

    @property
    def brain(self) -> Brain:
        return self._server.brain

    @brain.setter
    def brain(self, brain: Brain) -> None:
        self._server.brain = brain

    def start(self) -> LocalLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llm.local_server",
        description="A rule-based OpenAI-compatible chat server (no model weights).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    arguments = parser.parse_args(argv)
    server = _Server((arguments.host, arguments.port), rule_based)
    host, port = server.server_address[:2]
    host = host.decode() if isinstance(host, bytes) else host
    print(f"rule-based OpenAI-compatible server on http://{host}:{port}/v1 (model {MODEL!r})")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
