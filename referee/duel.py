"""The referee: plays a duel of N matches between two to six sandboxed agents.

Each agent is one long-lived process for the whole duel. Seats rotate by one each
match (``referee.results.seat_rotation``): with two players, player 1 moves first in
even-numbered matches, player 2 in odd ones. Every action is checked
against the rules before it is applied, every wait has a deadline, and whatever an
agent does wrong ends the match as a named fault charged to that agent.

An agent whose process is no longer usable (it crashed, timed out, ran out of
memory or broke the stream) is restarted once per duel; after a second such
failure it forfeits the remaining matches, which keeps a duel against a hostile
agent bounded in time.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import os
import random
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from arena_sdk import protocol

from environments.base import Environment, IllegalAction
from environments.registry import EnvironmentInfo, load_info, make_environment
from referee.channel import AgentFailure, Channel, Wait, gather
from referee.results import (
    DuelResult,
    Fault,
    FaultKind,
    MatchRecord,
    match_seed,
    outcome_of,
    seat_rotation,
)
from sandboxes.base import (
    AgentSource,
    MoveKey,
    SandboxBackend,
    SandboxedAgent,
    SandboxError,
    SandboxLimits,
)
from sandboxes.cpus import duel_cpu

#: Told each event of a running duel as it happens (``Referee.progress``).
Progress = Callable[[dict[str, Any]], None]

MAX_RESTARTS = 1
#: How long an agent may take to exit after ``bye`` before it is killed.
FAREWELL_TIME = 0.5


@dataclasses.dataclass(frozen=True)
class DuelSettings:
    matches: int
    move_time: float
    time_bank: float
    startup_time: float
    limits: SandboxLimits
    max_message_bytes: int = protocol.DEFAULT_MAX_MESSAGE_BYTES
    #: In a game played in turns, the referee and the agents share one CPU of their own
    #: while the matches are played, when one is free (``sandboxes.cpus``).
    share_cpu: bool = True

    @classmethod
    def from_info(cls, info: EnvironmentInfo, **overrides: Any) -> DuelSettings:
        """The limits of ``info.yml``; ``overrides`` replace any field (None is ignored)."""
        settings = cls(
            matches=info.matches_per_duel,
            move_time=info.move_time,
            time_bank=info.time_bank,
            startup_time=info.startup_time,
            limits=SandboxLimits(memory_mb=info.memory_mb, cpu_seconds=info.cpu_seconds),
        )
        return dataclasses.replace(
            settings, **{key: value for key, value in overrides.items() if value is not None}
        )

    def limits_message(self) -> dict[str, Any]:
        return {
            "move_time": self.move_time,
            "time_bank": self.time_bank,
            "startup_time": self.startup_time,
            "max_message_bytes": self.max_message_bytes,
            "memory_mb": self.limits.memory_mb,
        }


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
        #: Why it can never play again in this duel (a remote seat that left for good).
        self.gone: str | None = None
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
                    self.agent.termination(wait=grace)
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


class Referee:
    def __init__(
        self,
        *,
        environment: str,
        sources: Sequence[AgentSource],
        settings: DuelSettings,
        backend: SandboxBackend | tuple[SandboxBackend, ...],
        seed: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        """One source per player, as many as the game has seats (a game with a
        ``players`` setting is set up for their count). ``backend`` starts every agent, or
        is one per player (an online agent's seat beside hosted ones).

        ``progress``, if given, is called on the referee's thread with each public event
        of the duel as it happens: ``match`` (a match begins: its index, seed and first
        player), ``step`` (the actions of a step, by seat, once applied) and
        ``match_end`` (its result and every player's score). It must return at once
        (buffer, do not send); what it raises is not the agents' fault and ends the duel
        in error."""
        self.environment_name = environment
        self.environment: Environment = make_environment(environment, players=len(sources))
        self.settings = settings
        backends = backend if isinstance(backend, tuple) else (backend,) * len(sources)
        if len(backends) != len(sources):
            raise ValueError(f"{len(sources)} players but {len(backends)} sandbox backends")
        self.seed = random.SystemRandom().randrange(2**31) if seed is None else seed
        #: One per seat; an evaluation (``referee.evaluation``) has a single one.
        self.contestants: tuple[Contestant, ...] = tuple(
            Contestant(number, source, backends[number - 1])
            for number, source in enumerate(sources, start=1)
        )
        self.progress = progress
        self.request_id = 0
        self.startup_faults: dict[int, Fault] = {}
        #: The CPU the matches are played on, while they are (``_shared_cpu``).
        self.cpus: set[int] | None = None
        self._match_index = 0

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
            with concurrent.futures.ThreadPoolExecutor(len(contestants)) as pool:
                futures = [pool.submit(start, contestant) for contestant in contestants]
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

    # -- matches --------------------------------------------------------------

    def _match_seed(self, index: int) -> int:
        return match_seed(self.seed, index)

    def _forfeit(self, record: MatchRecord, unavailable: list[Contestant]) -> None:
        for contestant in unavailable:
            fault = self.startup_faults.pop(contestant.number, None)
            if fault is None and contestant.gone is not None:
                # Lost as the match it left was: leaving is no way to escape a loss.
                fault = Fault(
                    contestant.number, FaultKind.TIMEOUT, f"not played: {contestant.gone}"
                )
            if fault is None:
                fault = Fault(
                    contestant.number,
                    FaultKind.FORFEIT,
                    f"not played: the agent is unusable ({contestant.broken}) and its "
                    f"{MAX_RESTARTS} restart is spent",
                )
            record.faults.append(fault)

    def _score(self, record: MatchRecord, seat_scores: list[float]) -> None:
        for seat, player in enumerate(record.seats):
            record.scores[player - 1] = seat_scores[seat]
        record.result = outcome_of(record.scores)

    def _score_faults(self, record: MatchRecord) -> None:
        """A fault loses the match: each player at fault scores 0, every other 1 (all at
        fault: a draw at 0)."""
        guilty = {fault.player for fault in record.faults}
        record.scores = [
            0.0 if player in guilty else 1.0 for player in range(1, len(record.seats) + 1)
        ]
        record.result = outcome_of(record.scores)
        record.error_msg = "; ".join(fault.describe() for fault in record.faults)

    def _charge(self, contestant: Contestant, failure: AgentFailure, step: int | None) -> Fault:
        if failure.fatal:
            contestant.broken = f"{failure.kind.value}: {failure.message}"
        if failure.final:
            contestant.gone = failure.message
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
                        raise self._move_timeout(banks, seat)
                    raise arrival.failure
                assert arrival.message is not None
                # Kept to the microsecond, as the match record stores it.
                timings[seat] = elapsed = round(arrival.at - sent[seat], 6)
                charged = max(0.0, elapsed - seats[seat].allowance)
                actions[seat] = self._action_from(arrival.message, seat, charged, banks)
            except AgentFailure as failure:
                faults.append(self._charge(seats[seat], failure, step))
        return actions, timings, faults

    def _action_from(
        self, reply: dict[str, Any], seat: int, elapsed: float, banks: list[float]
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
                raise self._move_timeout(banks, seat)
        return reply["action"]

    def _move_timeout(self, banks: list[float], seat: int) -> AgentFailure:
        return AgentFailure(
            FaultKind.TIMEOUT,
            f"no answer within the {self.settings.move_time} s move limit plus "
            f"{max(0.0, banks[seat]):.3f} s left in its time bank",
        )

    def _play_match(self, index: int) -> MatchRecord:
        self._match_index = index
        seed = self._match_seed(index)
        record = MatchRecord(
            index=index, seed=seed, seats=seat_rotation(len(self.contestants), index)
        )
        started = time.monotonic()
        seats = [self.contestants[player - 1] for player in record.seats]

        self._ensure_running()
        unavailable = [contestant for contestant in seats if contestant.broken is not None]
        if unavailable:
            self._forfeit(record, unavailable)
            self._score_faults(record)
            self._tell_end(record)
            record.duration = time.monotonic() - started
            return record

        environment = self.environment
        environment.reset(seed)
        if self.progress is not None:
            self.progress(
                {
                    "type": "match",
                    "match": index,
                    "seed": seed,
                    "first_player": record.seats[0],
                    "seats": list(record.seats),
                }
            )
        for seat, contestant in enumerate(seats):
            assert contestant.channel is not None
            try:
                contestant.channel.send(
                    {
                        "type": protocol.START,
                        "match": index,
                        "player": seat,
                        "seed": environment.agent_seed(seed, seat),
                    },
                    time.monotonic() + self.settings.move_time,
                )
            except AgentFailure as failure:
                record.faults.append(self._charge(contestant, failure, None))

        banks = [self.settings.time_bank] * environment.num_players
        seat_numbers = range(len(seats))
        step = 0
        while not record.faults and not environment.is_terminal():
            movers = environment.to_move()
            actions, timings, faults = self._request_actions(seats, movers, banks, step)
            record.faults.extend(faults)
            for seat, action in actions.items():
                try:
                    environment.check_action(seat, action)
                except IllegalAction as illegal:
                    record.faults.append(
                        Fault(
                            seats[seat].number,
                            FaultKind.ILLEGAL_ACTION,
                            f"{_shown(action)} is illegal: {illegal.reason}",
                            step,
                        )
                    )
            if record.faults:
                break
            environment.apply(actions)
            record.actions.append(list(map(actions.get, seat_numbers)))
            if self.progress is not None:
                self.progress(
                    {"type": "step", "match": index, "step": step, "actions": record.actions[-1]}
                )
            record.timings.append(list(map(timings.get, seat_numbers)))
            step += 1

        if record.faults:
            self._score_faults(record)
        else:
            self._score(record, environment.scores())
        self._tell_end(record)
        self._send_end(record, seats)
        for contestant in seats:
            transcript = contestant.transcript(index)
            if transcript is not None:
                record.transcripts[contestant.number] = {"player": contestant.number, **transcript}
        for contestant in seats:
            if contestant.broken is not None:
                # Stopped now, so that whatever it is still doing (a busy loop, a swarm of
                # processes) takes nothing from the other agent while it plays on.
                contestant.stop()
        record.duration = time.monotonic() - started
        return record

    def _tell_end(self, record: MatchRecord) -> None:
        if self.progress is not None:
            self.progress(
                {
                    "type": "match_end",
                    "match": record.index,
                    "result": record.result.value,
                    "scores": list(record.scores),
                    "ranks": record.ranks,
                    "reason": record.error_msg,
                }
            )

    def _send_end(self, record: MatchRecord, seats: list[Contestant]) -> None:
        scores = [record.scores[contestant.number - 1] for contestant in seats]
        for seat, contestant in enumerate(seats):
            if contestant.channel is None or contestant.broken is not None:
                continue
            mine, best = scores[seat], max(scores)
            outcome = "draw" if scores.count(best) > 1 else ("win" if mine == best else "loss")
            message = {
                "type": protocol.END,
                "match": record.index,
                "result": outcome,
                "scores": scores,
                "reason": record.error_msg,
                "observation": self.environment.observation(seat),
            }
            try:
                contestant.channel.send(message, time.monotonic() + self.settings.move_time)
            except AgentFailure as failure:
                contestant.broken = f"{failure.kind.value}: {failure.message}"

    # -- the duel -------------------------------------------------------------

    @contextlib.contextmanager
    def _shared_cpu(self) -> Iterator[None]:
        """While the block runs, this thread and the agents on one CPU of their own, in a
        game played in turns (``sandboxes.cpus``), when every agent's sandbox can pin
        it (the process sandbox's; not a container, a remote seat or an LLM player); the
        agents started meanwhile too."""
        running = [c.agent for c in self.contestants if c.agent is not None]
        # Asking an agent to stay where it may run already says whether it can be pinned.
        everywhere = os.sched_getaffinity(0)
        if (
            not self.settings.share_cpu
            or self.environment.simultaneous
            or len(running) < len(self.contestants)
            or not all(agent.pin_to(everywhere) for agent in running)
        ):
            yield
            return
        with duel_cpu() as cpu:
            if cpu is not None:
                self.cpus = {cpu}
                for agent in running:
                    agent.pin_to(self.cpus)
            try:
                yield
            finally:
                self.cpus = None
                # The agents leave the CPU too: at the duel's end they exit side by side.
                for contestant in self.contestants:
                    if contestant.agent is not None:
                        contestant.agent.pin_to(everywhere)

    def play(self) -> DuelResult:
        result = DuelResult(
            environment=self.environment_name,
            players=[contestant.source.name for contestant in self.contestants],
            seed=self.seed,
        )
        started = time.monotonic()
        try:
            # Started side by side on every CPU; then, in turns, played on one.
            self._launch(list(self.contestants))
            with self._shared_cpu():
                for index in range(self.settings.matches):
                    result.matches.append(self._play_match(index))
        except Exception as error:
            result.infrastructure_error = infrastructure_failure(error)
        finally:
            for contestant in self.contestants:
                contestant.say_bye()
            # Side by side: each wait for an agent to exit on its own costs an engine
            # round trip or two in the docker sandbox.
            with concurrent.futures.ThreadPoolExecutor(len(self.contestants)) as pool:
                for stopped in [
                    pool.submit(contestant.stop, grace=FAREWELL_TIME)
                    for contestant in self.contestants
                ]:
                    stopped.result()
        result.restarts = [contestant.restarts for contestant in self.contestants]
        result.logs = [contestant.log() for contestant in self.contestants]
        for contestant in self.contestants:
            for (index, step), text in contestant.move_logs().items():
                if index < len(result.matches):
                    moves = result.matches[index].move_logs.setdefault(contestant.number, {})
                    moves[step] = text
        result.duration = time.monotonic() - started
        return result


def infrastructure_failure(error: Exception) -> str:
    """Why a duel or an evaluation could not be played, when neither agent is to blame
    (called in an ``except`` block: a referee error keeps its traceback)."""
    if isinstance(error, SandboxError):
        return f"sandbox failure: {error}"
    return f"referee error: {error!r}\n{traceback.format_exc(limit=8)}"


def _shown(action: Any) -> str:
    text = repr(action)
    return text if len(text) <= 80 else text[:77] + "..."


def llm_clock(info: EnvironmentInfo) -> dict[str, float]:
    """The clock of a duel with an LLM seat (``info.yml``'s ``llm_move_time`` and
    ``llm_time_bank``), for every seat of it: overrides for ``run_duel``."""
    return {"move_time": info.llm_move_time, "time_bank": info.llm_time_bank}


def run_duel(
    environment: str,
    sources: Sequence[AgentSource],
    *,
    backend: SandboxBackend | tuple[SandboxBackend, ...],
    seed: int | None = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> DuelResult:
    """Play a duel with the limits of the environment's ``info.yml`` unless overridden;
    ``backend`` may be one per player; ``progress`` see ``Referee``."""
    settings = DuelSettings.from_info(load_info(environment), **overrides)
    return Referee(
        environment=environment,
        sources=sources,
        settings=settings,
        backend=backend,
        seed=seed,
        progress=progress,
    ).play()


@dataclasses.dataclass
class ValidationResult:
    passed: bool
    message: str
    duel: DuelResult


def _log_tail(log: str, lines: int = 20) -> str:
    tail = log.strip().splitlines()[-lines:]
    return "\n".join(tail)


def validate(
    environment: str,
    source: AgentSource,
    *,
    backend: SandboxBackend,
    seed: int | None = None,
    **overrides: Any,
) -> ValidationResult:
    """Self-play: the agent plays copies of itself in every seat of the game; any fault of
    any copy fails it."""
    info = load_info(environment)
    if overrides.get("matches") is None:
        overrides["matches"] = info.validation_matches
    duel = run_duel(environment, (source,) * info.players, backend=backend, seed=seed, **overrides)
    if duel.infrastructure_error:
        return ValidationResult(
            False, f"validation could not run (not the agent's fault): {duel.error_msg}", duel
        )
    faults = [fault for match in duel.matches for fault in match.faults]
    if not faults:
        return ValidationResult(
            True, f"validated: {len(duel.matches)} self-play matches without a fault", duel
        )
    first = faults[0]
    log = duel.logs[first.player - 1]
    return ValidationResult(False, validation_failure(faults, log, "self-play matches"), duel)


def validation_failure(faults: list[Fault], log: str, played: str) -> str:
    """Why a validation failed: the first fault, advice, and the end of the agent's log."""
    first = faults[0]
    lines = [
        f"validation failed: {first.kind.value} — {first.message}"
        + (f" (move {first.step + 1})" if first.step is not None else ""),
        first.kind.advice,
    ]
    if len(faults) > 1:
        lines.append(f"{len(faults) - 1} more fault(s) in the other {played}.")
    tail = _log_tail(log)
    if tail:
        lines.append("last lines of the agent's log:\n" + tail)
    return "\n".join(line for line in lines if line)
