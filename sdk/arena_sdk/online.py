"""Play an agent online: ``python -m arena_sdk connect --server URL --token-file F agent.py``.

The agent runs on your machine; Arena's gateway sends it the same messages a hosted agent
gets (``docs/protocol.md``) over one long-lived HTTP stream of newline-delimited JSON, and
it answers each request with one ``POST``. Only the standard library is used.

The client joins the matchmaking queue, keeps the stream open, and feeds each duel's
messages to the agent exactly as ``serve`` does for a hosted agent, so an agent written
for the SDK (or a Kaggle-style function, or a ``Player`` class) plays online unchanged.
When the connection drops it reconnects by itself with the ``seq`` of the last event it
handled, so nothing is lost or repeated; the server keeps the clocks and allows a grace
period to come back (see docs/players/online-play.md).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
from typing import Any, Callable, Iterator, Optional

from arena_sdk import protocol
from arena_sdk.agent import Agent, OnlineError
from arena_sdk.serve import serve

#: The server pings at least every 15 s; a stream silent for this long is dead.
STREAM_TIMEOUT = 45.0
#: Waits between reconnections: 0.2 s, doubling, at most this.
MAX_BACKOFF = 10.0
#: The longest wait between two attempts to send a reply the server could not take.
REPLY_RETRY_MAX = 1.0
PROTOCOL_TYPES = {
    protocol.HELLO,
    protocol.START,
    protocol.ACT,
    protocol.END,
    protocol.BYE,
}


class Gateway:
    """Requests to Arena's gateway with a model token (only ever in a header)."""

    def __init__(self, server: str, token: str, *, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{server!r} is not an http:// or https:// address")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base = parts.path.rstrip("/") + "/api/v1/online"
        self.headers = {"Authorization": f"Bearer {token}", "User-Agent": "arena-sdk"}
        self.timeout = timeout
        self._connection: Optional[http.client.HTTPConnection] = None
        self._lock = threading.Lock()

    def open(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method: str, path: str, body: Optional[bytes] = None) -> Any:
        """One request on a kept-alive connection; the JSON answer, or ``OnlineError``."""
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        with self._lock:
            for attempt in (1, 2):
                if self._connection is None:
                    self._connection = self.open(self.timeout)
                try:
                    self._connection.request(method, self.base + path, body=body, headers=headers)
                    response = self._connection.getresponse()
                    data = response.read()
                    break
                except (OSError, http.client.HTTPException):
                    # A kept-alive connection the server closed: once more on a new one.
                    self._connection.close()
                    self._connection = None
                    if attempt == 2:
                        raise
        answer = json.loads(data) if data else {}
        if response.status >= 400:
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            problem = OnlineError(
                response.status,
                str(error.get("code", "error")),
                str(error.get("message", data[:200].decode(errors="replace"))),
            )
            problem.retry_after = float(response.getheader("Retry-After") or 0)  # type: ignore[attr-defined]
            raise problem
        return answer

    def events(self, after: Optional[str]) -> Iterator[dict]:
        """The stream of events, from after ``after``; ends when the connection does."""
        connection = self.open(STREAM_TIMEOUT)
        headers = dict(self.headers)
        if after:
            headers["Last-Event-ID"] = after
        try:
            connection.request("GET", self.base + "/events", headers=headers)
            response = connection.getresponse()
            if response.status >= 400:
                answer = json.loads(response.read() or b"{}")
                error = answer.get("error", {})
                raise OnlineError(
                    response.status, error.get("code", "error"), error.get("message", "")
                )
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            connection.close()


class _Duel:
    """One duel's protocol messages, served to the agent in a thread of its own."""

    def __init__(self, agent: Agent, reply: Callable[[bytes], None]) -> None:
        self.lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        outgoing = _Replies(reply)
        self.thread = threading.Thread(
            target=self._serve, args=(agent, outgoing), name="arena-duel", daemon=True
        )
        self.thread.start()

    def _serve(self, agent: Agent, outgoing: "_Replies") -> None:
        try:
            serve(agent, iter(self.lines.get, None), outgoing)  # type: ignore[arg-type]
        except Exception:
            traceback.print_exc()

    def feed(self, message: dict) -> None:
        self.lines.put(protocol.encode(message))

    def finish(self) -> None:
        self.lines.put(None)


class _Replies:
    """The ``outgoing`` file of ``serve``: each line it writes is one POST."""

    def __init__(self, reply: Callable[[bytes], None]) -> None:
        self.reply = reply

    def write(self, line: bytes) -> int:
        self.reply(line.strip())
        return len(line)


class OnlineClient:
    """Plays ``agent`` on the gateway at ``server`` until ``duels`` duels are over (or
    forever), reconnecting by itself."""

    def __init__(
        self,
        agent: Agent,
        *,
        server: str,
        token: str,
        join: bool = True,
        duels: Optional[int] = None,
        log: Callable[[str], None] = lambda text: print(text, file=sys.stderr),
    ) -> None:
        self.agent = agent
        self.gateway = Gateway(server, token)
        self.join = join
        self.duels = duels
        self.log = log
        self.finished = 0
        self.last_seq: Optional[str] = None
        self._duel: Optional[_Duel] = None
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def _reply(self, line: bytes) -> None:
        """Send one reply; a refusal goes to the agent's ``on_error`` (a reply to a
        request replayed after a reconnection is refused, and that is expected).

        While the server cannot be reached (a gateway restarting takes seconds on a busy
        machine) the reply is sent again, every ``REPLY_RETRY_MAX`` seconds at most,
        until the server takes it or refuses it as too late: the referee's clock, not
        this client, decides when it is too late. A reply given up here would leave the
        referee waiting for it until the move's time ran out."""
        wait = 0.2
        said = False
        while not self._stop.is_set():
            try:
                self.gateway.request("POST", "/reply", line)
                if said:
                    self.log("arena: the reply was sent")
                return
            except OnlineError as error:
                if error.status == 429:
                    time.sleep(max(0.05, getattr(error, "retry_after", 0.5)))
                    continue
                self._hook(self.agent.on_error, error)
                return
            except (OSError, http.client.HTTPException) as error:
                if not said:
                    self.log(f"arena: could not send a reply ({error}); trying again")
                    said = True
                self._stop.wait(wait)
                wait = min(REPLY_RETRY_MAX, wait * 2)

    def _hook(self, hook: Callable[[Any], None], argument: Any) -> None:
        try:
            hook(argument)
        except Exception:
            traceback.print_exc()

    def _join(self) -> None:
        """Join the queue, waiting (and saying why) while no ladder is running."""
        waited = False
        while not self._stop.is_set():
            try:
                self.gateway.request("POST", "/queue", b"")
                return
            except OnlineError as error:
                if error.status != 409:
                    raise
                if not waited:
                    self.log(f"arena: {error.message} (trying again every 10 s)")
                    waited = True
                self._stop.wait(10)

    def _handle(self, event: dict) -> None:
        kind = event.get("type")
        seq = event.pop("seq", None)
        if kind == "ping":
            return
        if kind == "duel":
            if self._duel is not None:
                self._duel.finish()
            if event.get("evaluation") is not None:
                # A score competition's evaluation: the episodes of a one-player game.
                self.log(
                    f"arena: evaluation {event.get('evaluation')} of competition "
                    f"{event.get('competition')} ({event.get('episodes')} episodes)"
                )
            else:
                self.log(
                    f"arena: duel {event.get('duel')} against {event.get('opponent')} "
                    f"({event.get('matches')} matches)"
                )
            self._duel = _Duel(self.agent, self._reply)
            self._hook(self.agent.on_server_message, event)
        elif kind in PROTOCOL_TYPES:
            if self._duel is None:
                self._duel = _Duel(self.agent, self._reply)
            self._duel.feed(event)
            if kind == protocol.BYE:
                self._duel.finish()
                self._duel.thread.join(timeout=30)
                self._duel = None
                self.finished += 1
                self.log(f"arena: duel over ({self.finished} played)")
        else:
            if kind == "closed":
                self.log(f"arena: the server closed the stream: {event.get('reason')}")
            self._hook(self.agent.on_server_message, event)
        if seq is not None:
            self.last_seq = str(seq)

    def run(self) -> int:
        if self.join:
            self._join()
        backoff = 0.2
        while not self._stop.is_set():
            if self.duels is not None and self.finished >= self.duels:
                break
            try:
                for event in self.gateway.events(self.last_seq):
                    backoff = 0.2
                    self._handle(event)
                    if self.duels is not None and self.finished >= self.duels:
                        break
                    if self._stop.is_set():
                        break
                else:
                    self._hook(self.agent.on_disconnect, "the server closed the stream")
            except OnlineError as error:
                if error.status in (401, 403):
                    self.log(f"arena: {error.message}")
                    return 1
                self._hook(self.agent.on_error, error)
            except (OSError, http.client.HTTPException, ValueError) as error:
                self._hook(self.agent.on_disconnect, f"{type(error).__name__}: {error}")
            if self._stop.is_set() or (self.duels is not None and self.finished >= self.duels):
                break
            self.log(f"arena: reconnecting in {backoff:.1f} s")
            self._stop.wait(backoff)
            backoff = min(MAX_BACKOFF, backoff * 2)
        if self._duel is not None:
            self._duel.finish()
        with contextlib.suppress(OnlineError, OSError, http.client.HTTPException):
            self.gateway.request("DELETE", "/queue")
        return 0


def connect(
    agent: Agent,
    *,
    server: str,
    token: str,
    join: bool = True,
    duels: Optional[int] = None,
) -> int:
    """Play ``agent`` online; returns 0 when done (``duels`` played), 1 if refused."""
    return OnlineClient(agent, server=server, token=token, join=join, duels=duels).run()
