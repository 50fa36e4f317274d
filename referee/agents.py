"""The referee's side of its agents: each contestant's agent, channel, restarts and logs
(``Contestant``), and ``AgentReferee``, the base of ``referee.duel.Referee``, which starts
and restarts the agents, each on its own clock, asks them for their moves, on a move clock
and a time bank each, and charges their failures to them."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from arena_sdk import protocol

from environments.base import Environment
from referee.channel import AgentFailure, Channel, Wait, gather
from referee.duel_settings import DuelSettings
from referee.results import Fault, FaultKind
from sandboxes.base import AgentSource, MoveKey, SandboxBackend, SandboxedAgent, SandboxError

T = TypeVar("T")

MAX_RESTARTS = 1
#: How long an agent may take to exit after ``bye`` before it is killed.
FAREWELL_TIME = 0.5


class _Threads:
    """The threads that start and stop a duel's agents side by side, kept from one duel to
    the next (``side_by_side``). Enough for the many duels a worker of network seats plays
    at once; a thread is started only when none is idle. A process forked from one that
    has played gets a pool of its own: the threads are not in it, and its work would wait
    for a thread its pool believes idle."""

    def __init__(self) -> None:
        self.pool = self._new()
        os.register_at_fork(after_in_child=self._forked)

    @staticmethod
    def _new() -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="referee-agents")

    def _forked(self) -> None:
        self.pool = self._new()


_THREADS = _Threads()


def side_by_side(calls: list[Callable[[], T]]) -> list[concurrent.futures.Future[T]]:
    """``calls`` run at once, each on a thread of its own (a container takes a while to
    start, or to stop), the first on the calling thread; returns once all have ended,
    with their outcomes. The threads are kept: starting two for each duel and ending them
    again cost a warm 10-match duel about a tenth of its wall. The first call is not
    handed to one: where a call takes microseconds (a warm agent taken from its pool in
    the process sandbox), the hand-over and the wake-up that brings its outcome back are
    most of a call's cost."""
    futures = [_THREADS.pool.submit(call) for call in calls[1:]]
    here: concurrent.futures.Future[T] = concurrent.futures.Future()
    if calls:
        try:
            here.set_result(calls[0]())
        except Exception as error:
            here.set_exception(error)
        futures.insert(0, here)
    concurrent.futures.wait(futures)
    return futures


class Contestant:
    """One side of the duel: its source, its sandbox, its running agent and what it has
    cost."""

    def __init__(self, number: int, source: AgentSource, backend: SandboxBackend) -> None:
        self.number = number
        self.source = source
        self.backend = backend
        self.agent: SandboxedAgent | None = None
        self.channel: Channel | None = None
        #: Seconds added to each of its deadlines for the network (remote seats only): its
        #: agent's, read once when the agent is set (``use``), not at every move.
        self.allowance = 0.0
        self.restarts = 0
        #: Why the current process can no longer be used; None while healthy.
        self.broken: str | None = None
        #: Why it can never play again in this duel (a remote seat that left for good, or
        #: resigned), and the fault its remaining matches are lost by.
        self.gone: str | None = None
        self.gone_kind = FaultKind.TIMEOUT
        #: Agents of earlier starts, stopped: their logs are read when the duel ends, so
        #: that a sandbox that removes them in the background never delays play.
        self.stopped: list[SandboxedAgent] = []

    @property
    def label(self) -> str:
        return f"player {self.number} ({self.source.name})"

    def say_bye(self) -> None:
        """Tell a healthy agent the duel is over, so it can exit on its own."""
        if self.channel is not None and self.broken is None:
            with contextlib.suppress(AgentFailure):
                self.channel.send({"type": protocol.BYE}, time.monotonic() + FAREWELL_TIME)

    def stop(self, *, grace: float = 0.0) -> None:
        """Kill the agent (after waiting up to ``grace`` seconds for it to exit)."""
        if self.agent is not None:
            if grace:
                # How it ended no longer matters: the duel is decided.
                with contextlib.suppress(SandboxError):
                    self.agent.wait_for_exit(grace)
            self.agent.close()
            self.stopped.append(self.agent)
        self.agent = None
        self.channel = None
        self.allowance = 0.0

    def use(self, agent: SandboxedAgent, *, max_message_bytes: int) -> None:
        """Play with ``agent`` (just started) from now on."""
        self.agent = agent
        self.channel = Channel(agent, max_message_bytes=max_message_bytes)
        self.allowance = float(getattr(agent, "latency_allowance", 0.0))
        self.broken = None

    def transcript(self, match: int) -> dict[str, Any] | None:
        """Its conversation in ``match``, if its seat keeps one (an LLM seat does)."""
        agent = self.agent if self.agent is not None else next(reversed(self.stopped), None)
        keeper = getattr(agent, "transcript", None)
        return keeper(match) if keeper is not None else None

    def _agents(self) -> list[SandboxedAgent]:
        return [*self.stopped, *([self.agent] if self.agent is not None else [])]

    def log(self) -> str:
        parts = [agent.log() for agent in self._agents()]
        return "\n[--- agent restarted ---]\n".join(part for part in parts if part)

    def mark_move(self, move: MoveKey | None) -> None:
        """What its agent wrote until now belongs to ``move`` (None: to no move)."""
        if self.agent is not None:
            self.agent.mark_move(move)

    def move_logs(self) -> dict[MoveKey, str]:
        """What it wrote during each move, over its starts (once they are stopped)."""
        logs: dict[MoveKey, str] = {}
        for agent in self._agents():
            for move, text in agent.move_logs().items():
                logs[move] = logs.get(move, "") + text
        return logs


class AgentReferee:
    """What the referee does with its agents, whatever it plays (``referee.duel.Referee``
    sets these attributes)."""

    environment_name: str
    environment: Environment
    settings: DuelSettings
    contestants: tuple[Contestant, ...]
    request_id: int
    startup_faults: dict[int, Fault]
    cpus: set[int] | None
    _match_index: int

    # -- agents --------------------------------------------------------------

    def _hello(self) -> dict[str, Any]:
        return {
            "type": protocol.HELLO,
            "protocol": protocol.PROTOCOL_VERSION,
            "environment": self.environment_name,
            "player_count": self.environment.num_players,
            "configuration": self.environment.configuration,
            "limits": self.settings.limits_message(),
        }

    def _start_sandboxes(self, contestants: list[Contestant]) -> None:
        """Start the agents' sandboxes side by side (a container takes a while to start)."""

        def start(contestant: Contestant) -> SandboxedAgent:
            return contestant.backend.start(
                contestant.source,
                limits=self.settings.limits,
                label=f"p{contestant.number}-{contestant.source.name}"[:40],
            )

        for contestant in contestants:
            contestant.stop()
        if len(contestants) == 1:
            started = [start(contestants[0])]
        else:
            futures = side_by_side(
                [functools.partial(start, contestant) for contestant in contestants]
            )
            errors = [error for future in futures if (error := future.exception())]
            if errors:
                for future in futures:
                    if not future.exception():
                        future.result().close()
                raise errors[0]
            started = [future.result() for future in futures]
        for contestant, agent in zip(contestants, started, strict=True):
            if self.cpus is not None:
                agent.pin_to(self.cpus)  # a restart, while the matches are played
            contestant.use(agent, max_message_bytes=self.settings.max_message_bytes)
            self.startup_faults.pop(contestant.number, None)

    def _launch(self, contestants: list[Contestant]) -> None:
        """Start agents and wait for their handshakes, all at once, each on its own clock.

        A failure marks the contestant broken and is kept in ``startup_faults`` so
        the first match it cannot play shows the real reason.
        """
        self._start_sandboxes(contestants)
        hello = self._hello()
        waits: dict[Contestant, Wait] = {}
        failures: dict[Contestant, AgentFailure] = {}
        for contestant in contestants:
            channel = contestant.channel
            assert channel is not None
            # The start-up clock of each agent begins with its own handshake.
            deadline = time.monotonic() + self.settings.startup_time + contestant.allowance
            try:
                channel.send(hello, deadline)
            except AgentFailure as failure:
                failures[contestant] = failure
                continue
            waits[contestant] = Wait(channel, deadline)
        for contestant, arrival in gather(waits).items():
            # What it wrote while starting is in its whole log, on no move.
            contestant.mark_move(None)
            reply = arrival.message
            if arrival.failure is not None:
                failures[contestant] = arrival.failure
            elif reply is not None and reply.get("type") != protocol.READY:
                failures[contestant] = AgentFailure(
                    FaultKind.MALFORMED_MESSAGE,
                    f"it answered the handshake with {reply.get('type')!r} instead of 'ready'",
                )
        for contestant, startup_failure in failures.items():
            message = startup_failure.message
            if startup_failure.kind is FaultKind.TIMEOUT:
                message = f"it did not finish starting within {self.settings.startup_time} s"
            message = f"while starting: {message}"
            self.startup_faults[contestant.number] = Fault(
                contestant.number, startup_failure.kind, message
            )
            contestant.broken = message
            if startup_failure.final:
                contestant.gone = startup_failure.message
                contestant.gone_kind = startup_failure.kind
            # Stopped now: whatever it is doing must not take the others' CPU.
            contestant.stop()

    def _ensure_running(self) -> None:
        """Restart each broken agent that has a restart left."""
        to_start = [
            contestant
            for contestant in self.contestants
            if contestant.broken is not None
            and contestant.gone is None
            and contestant.restarts < MAX_RESTARTS
            # A failed start is first charged to the match it spoils, with its reason.
            and contestant.number not in self.startup_faults
        ]
        for contestant in to_start:
            contestant.restarts += 1
        if to_start:
            self._launch(to_start)

    # -- moves --------------------------------------------------------------

    def _charge(self, contestant: Contestant, failure: AgentFailure, step: int | None) -> Fault:
        if failure.fatal:
            contestant.broken = f"{failure.kind.value}: {failure.message}"
        if failure.final:
            contestant.gone = failure.message
            contestant.gone_kind = failure.kind
        return Fault(contestant.number, failure.kind, failure.message, step)

    def _request_actions(
        self, seats: list[Contestant], movers: list[int], banks: list[float], step: int
    ) -> tuple[dict[int, Any], dict[int, float], list[Fault]]:
        """Ask every mover for an action; returns actions and timings (seconds, to the
        microsecond) by seat, and faults.

        Every mover's clock starts when its own request is sent, and all are awaited at
        once, so each agent's time is measured on its own.
        """
        environment = self.environment
        move_time = self.settings.move_time
        sent: dict[int, float] = {}
        waits: dict[int, Wait] = {}
        faults: list[Fault] = []
        for seat in movers:
            contestant = seats[seat]
            channel = contestant.channel
            assert channel is not None
            self.request_id += 1
            request = {
                "type": protocol.ACT,
                "id": self.request_id,
                "match": self._match_index,
                "step": step,
                "observation": environment.observation(seat),
                "legal_actions": environment.legal_actions(seat),
                "time_left": {"move": move_time, "bank": round(banks[seat], 6)},
            }
            sent[seat] = now = time.monotonic()
            deadline = now + move_time + banks[seat] + contestant.allowance
            try:
                channel.send(request, deadline)
            except AgentFailure as failure:
                faults.append(self._charge(contestant, failure, step))
                continue
            waits[seat] = Wait(channel, deadline, self.request_id)
        arrivals = gather(waits)

        # Each mover's log up to its answer is this move's: a mark is a position in its
        # stream (``AgentLog``), taken once all have answered, when none is being asked.
        move = (self._match_index, step)
        for seat in movers:
            seats[seat].mark_move(move)
        actions: dict[int, Any] = {}
        timings: dict[int, float] = {}
        for seat, arrival in sorted(arrivals.items()):
            try:
                if arrival.failure is not None:
                    if arrival.failure.kind is FaultKind.TIMEOUT and not arrival.failure.final:
                        raise self._move_timeout(seats[seat], banks, seat)
                    raise arrival.failure
                assert arrival.message is not None
                # Kept to the microsecond, as the match record stores it.
                timings[seat] = elapsed = round(arrival.at - sent[seat], 6)
                charged = max(0.0, elapsed - seats[seat].allowance)
                actions[seat] = self._action_from(
                    arrival.message, seats[seat], seat, charged, banks
                )
            except AgentFailure as failure:
                faults.append(self._charge(seats[seat], failure, step))
        return actions, timings, faults

    def _action_from(
        self,
        reply: dict[str, Any],
        contestant: Contestant,
        seat: int,
        elapsed: float,
        banks: list[float],
    ) -> Any:
        kind = reply.get("type")
        if kind == protocol.ERROR:
            message = str(reply.get("message", ""))[:500] or "no message"
            # The agent caught its own failure and is still answering: no restart.
            if reply.get("kind") == "memory":
                raise AgentFailure(
                    FaultKind.MEMORY_EXCEEDED, f"it ran out of memory: {message}", fatal=False
                )
            raise AgentFailure(FaultKind.CRASH, f"its code raised an error: {message}", fatal=False)
        if kind != protocol.ACTION or "action" not in reply:
            raise AgentFailure(
                FaultKind.MALFORMED_MESSAGE,
                f"expected an 'action' message with an 'action' field, got type {kind!r}",
            )
        overage = elapsed - self.settings.move_time
        if overage > 0:
            banks[seat] -= overage
            if banks[seat] < 0:
                # The reply arrived after the deadline but before we looked.
                raise self._move_timeout(contestant, banks, seat)
        return reply["action"]

    def _move_timeout(self, contestant: Contestant, banks: list[float], seat: int) -> AgentFailure:
        """The timeout to charge ``contestant`` for its move; raises ``SandboxError``
        instead when its seat says Arena's failure kept it from answering (an LLM seat
        whose provider is failing), so that the duel ends in error and nobody is charged."""
        excuse = contestant.agent.timeout_excuse() if contestant.agent is not None else None
        if excuse is not None:
            raise SandboxError(excuse)
        return AgentFailure(
            FaultKind.TIMEOUT,
            f"no answer within the {self.settings.move_time} s move limit plus "
            f"{max(0.0, banks[seat]):.3f} s left in its time bank",
        )
