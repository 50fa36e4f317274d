"""The ``remote`` seat: an agent that connects over the network instead of being started.

To the referee it is one more sandboxed agent with a byte stream: a socket pair whose
other end is relayed, line by line, to and from the seat bus (``seat_bus``), where the
network gateway holds the client's connection. So the referee, its clocks, its faults
and its records are exactly those of a hosted agent; what differs is said here:

- **Nothing runs on our machines**: there is no process to limit or kill; the limits
  that matter (message sizes, request rates, time) are applied by the gateway and by the
  referee's clocks, which are kept here, on the server.
- **Network allowance**: ``latency_allowance`` seconds are added to each of the seat's
  deadlines and taken off each of its measured times before the time bank is charged, so
  a round trip over the network is not charged as thinking time.
- **Absence**: a client whose connections have all dropped may come back within
  ``grace`` seconds and resumes where it was (the gateway replays what it missed). Past
  the grace period the seat is gone: the match in play and every remaining one are lost
  by timeout, and the duel is rated, so that leaving is never a way to escape a loss.
  Its clocks run meanwhile, as a hosted agent's would.
- **Arena's failures are not the agent's**: when the bus fails, or no gateway is alive
  to take the client back, the seat raises ``SandboxError`` and the duel ends in error,
  unrated.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import orjson

from sandboxes.base import AgentSource, SandboxError, SandboxLimits
from sandboxes.seat_bus import RESIGN_LINE, SeatBus, pending_key
from sandboxes.socket_seat import POLL_SECONDS, SocketSeat


class RemoteAgent(SocketSeat):
    """One remote seat for one duel: a socket pair, and two relay threads."""

    def __init__(
        self,
        bus: SeatBus,
        *,
        seat: str,
        duel: int,
        announcement: dict[str, Any],
        grace: float,
        allowance: float,
        log_bytes: int,
        kind: str = "duel",
    ) -> None:
        super().__init__(log_bytes=log_bytes)
        self.bus = bus
        self.seat = seat
        self.grace = grace
        self.latency_allowance = allowance
        self._note(f"{kind} {duel}: waiting for the client of seat {seat}")
        # The announcement of an evaluation says so (``duel`` null, its ``evaluation``).
        game = {"duel": duel} if kind == "duel" else {"duel": None, kind: duel}
        try:
            bus.seat_open(
                seat,
                duel=duel,
                kind=kind,
                announcement=orjson.dumps({"type": "duel", **game, **announcement}),
            )
        except Exception as error:
            self._close_fds()
            raise SandboxError(f"the seat bus failed: {error}") from error
        self._threads = [
            threading.Thread(target=self._relay_out, name=f"seat-out-{seat}", daemon=True),
            threading.Thread(target=self._relay_in, name=f"seat-in-{seat}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- relays ---------------------------------------------------------------------------

    def _relay_out(self) -> None:
        """The referee's messages, a line each, to the bus."""
        for line in self._referee_lines():
            message = orjson.loads(line)  # the referee's own output
            try:
                self.bus.publish(self.seat, line, awaits=pending_key(message))
            except Exception as error:
                self._fail(f"the seat bus failed: {error}")
                return
            if message.get("type") == "bye":
                # The duel is over for the client: nothing is pending, and its status no
                # longer says it plays while the referee stores the results.
                with contextlib.suppress(Exception):
                    self.bus.seat_close(self.seat)
                self._heard_bye()

    def _relay_in(self) -> None:
        """The client's accepted replies to the referee, at once; and, every
        ``POLL_SECONDS``, whether the client is still there."""
        away_since: float | None = None
        next_check = 0.0
        while not self._stop.is_set():
            try:
                replies = self.bus.replies(self.seat, POLL_SECONDS)
            except Exception as error:
                self._fail(f"the seat bus failed: {error}")
                return
            for reply in replies:
                if reply == RESIGN_LINE:
                    # Its player gave up: the seat ends, and the referee charges it.
                    self._gone = "it resigned"
                    self._resigned = True
                    self._note("the player resigned")
                    self._end()
                    return
                try:
                    self._relay_end.sendall(reply + b"\n")
                except OSError:
                    return
            now = time.monotonic()
            if now < next_check or self._said_bye:
                continue  # after bye, where the client is no longer matters
            next_check = now + POLL_SECONDS
            try:
                present = self.bus.is_present(self.seat)
                alive = present or self.bus.gateway_alive()
            except Exception as error:
                self._fail(f"the seat bus failed: {error}")
                return
            if present:
                if away_since is not None:
                    self._note(f"the client is back after {now - away_since:.1f} s")
                away_since = None
                continue
            if away_since is None:
                away_since = now
                self._note("the client is not connected")
            if now - away_since < self.grace:
                continue
            if not alive:
                self._fail("no network gateway is running, so the client could not come back")
                return
            self._gone = (
                f"it disconnected and did not come back within the {self.grace:g} s grace period"
            )
            self._note(self._gone)
            self._end()
            return

    # -- the SandboxedAgent interface -----------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._end()
        for thread in self._threads:
            thread.join(timeout=2 * POLL_SECONDS + 1)
        if self._failure is None:
            with contextlib.suppress(Exception):
                self.bus.seat_close(self.seat)
        self._close_fds()


class RemoteSandbox:
    """Seats of one duel (or, with ``kind`` ``"evaluation"``, of one evaluation) whose
    agents connect over the network (``AgentSource.seat``)."""

    name = "remote"
    confined = True
    unconfined_reason = ""

    def __init__(
        self,
        bus: SeatBus,
        *,
        duel: int,
        grace: float,
        allowance: float,
        announcement: dict[str, Any] | None = None,
        kind: str = "duel",
    ) -> None:
        self.bus = bus
        self.duel = duel
        self.kind = kind
        self.grace = grace
        self.allowance = allowance
        self.announcement = announcement or {}

    def start(self, source: AgentSource, *, limits: SandboxLimits, label: str) -> RemoteAgent:
        if source.seat is None:
            raise SandboxError(f"{source.name} is not an online agent (it has no seat)")
        return RemoteAgent(
            self.bus,
            seat=source.seat,
            duel=self.duel,
            announcement=self.announcement,
            grace=self.grace,
            allowance=self.allowance,
            log_bytes=limits.log_bytes,
            kind=self.kind,
        )
