"""An online agent on the seat bus, for tests of remote seats without HTTP.

``BusClient`` plays an SDK agent file through ``sandboxes.seat_gateway``, exactly as the
gateway would for an HTTP client: a stream of events (resumed with the last ``seq`` after
a drop) and one reply per request. Its ``drop_after`` and ``away`` make it leave for a
while, or for good, after a number of requests, to test grace periods and resumption.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import queue
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
from arena_sdk import Agent
from arena_sdk.adapters import load_agent
from arena_sdk.serve import serve

from sandboxes.seat_bus import GATEWAY_TTL, SeatBus
from sandboxes.seat_gateway import ReplyRefused, event_lines, reply_submit
from tests.support.loops import run_apart


class _Lines(io.RawIOBase):
    """The protocol lines the stream delivered, as the input file ``serve`` reads."""

    def __init__(self, lines: queue.Queue[bytes | None]) -> None:
        self.lines = lines

    def __iter__(self) -> Iterator[bytes]:
        while (line := self.lines.get()) is not None:
            yield line


class BusClient:
    def __init__(
        self,
        bus: SeatBus,
        seat: str,
        agent: Path | Agent,
        *,
        drop_after: int | None = None,
        away: float = 0.0,
        resume: bool = True,
        twice: bool = False,
    ) -> None:
        """``drop_after`` requests, the client drops its stream and stays ``away`` seconds
        (forever if ``away`` is 0), then comes back with its last seq (``resume``) or as a
        fresh client that lost its place. ``twice``: every reply is sent a second time."""
        self.bus = bus
        self.seat = seat
        self.agent = agent if isinstance(agent, Agent) else load_agent(agent)
        self.twice = twice
        self.drop_after = drop_after
        self.away = away
        self.resume = resume
        self.refused: list[ReplyRefused] = []
        self.accepted: list[str] = []
        self.events: list[dict[str, object]] = []
        self.duels_over = threading.Event()
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop.run_forever, daemon=True),
            threading.Thread(target=self._serve, daemon=True),
        ]

    def __enter__(self) -> BusClient:
        for thread in self._threads:
            thread.start()
        self._task = asyncio.run_coroutine_threadsafe(self._begin(), self._loop).result()
        return self

    async def _begin(self) -> asyncio.Task[None]:
        return asyncio.ensure_future(self._stream())

    async def _end(self) -> None:
        # The stream, and whatever the bus started on this loop (Redis's listener).
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        for task in others:
            with contextlib.suppress(BaseException):
                await task

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        asyncio.run_coroutine_threadsafe(self._end(), self._loop).result(timeout=10)
        self._lines.put(None)
        self._loop.call_soon_threadsafe(self._loop.stop)
        for thread in self._threads:
            thread.join(timeout=5)

    async def _stream(self) -> None:
        after: str | None = None
        requests = 0
        while not self._stop.is_set():
            dropped = False
            lines = event_lines(self.bus, self.seat, after=after, ping_seconds=1.0)
            try:
                async for chunk in lines:
                    for line in chunk.splitlines():
                        message = orjson.loads(line)
                        self.events.append(message)
                        if "seq" in message:
                            after = str(message["seq"])
                        if message["type"] in ("hello", "start", "act", "end", "bye"):
                            self._lines.put(line + b"\n")
                        if message["type"] == "act":
                            requests += 1
                            if requests == self.drop_after:
                                dropped = True
                        if message["type"] == "bye":
                            self.duels_over.set()
                    if dropped:
                        break
            finally:
                await lines.aclose()
            if not dropped:
                return
            if not self.away:
                return  # gone for good
            await asyncio.sleep(self.away)
            if not self.resume:
                after = None

    def _serve(self) -> None:
        client = self

        class Replies(io.RawIOBase):
            # serve() writes bytes; RawIOBase.write takes any buffer.
            def write(self, line: bytes) -> int:  # type: ignore[override]
                for _ in range(2 if client.twice else 1):
                    future = asyncio.run_coroutine_threadsafe(
                        reply_submit(client.bus, client.seat, bytes(line).strip()), client._loop
                    )
                    try:
                        client.accepted.append(future.result(timeout=30))
                    except ReplyRefused as refused:
                        client.refused.append(refused)
                return len(line)

        while not self._stop.is_set():
            # serve() only reads lines from one file and writes bytes to the other: these
            # stand-ins are all of a binary file it uses.
            serve(self.agent, _Lines(self._lines), Replies())  # type: ignore[arg-type]
            if self._lines.empty() and self._stop.is_set():
                return


@contextlib.contextmanager
def gateway_running(bus: SeatBus) -> Iterator[SeatBus]:
    """``bus`` with a gateway's heartbeat on it for as long as the block runs, refreshed
    well within ``GATEWAY_TTL``: a test that a loaded machine makes longer than that never
    sees its seats told that no gateway runs. The beats run apart, so a test whose thread
    has an event loop running (a browser test's Playwright) can use it too."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    stop = threading.Event()
    run_apart(lambda: bus.gateway_heartbeat(name))

    def beat() -> None:
        while not stop.wait(GATEWAY_TTL / 5):
            asyncio.run(bus.gateway_heartbeat(name))

    thread = threading.Thread(target=beat, name="test-gateway-heartbeat", daemon=True)
    thread.start()
    try:
        yield bus
    finally:
        stop.set()
        thread.join()
