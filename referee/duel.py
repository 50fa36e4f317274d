"""The referee: plays a duel of N matches between two to six sandboxed agents.

Each agent is one long-lived process for the whole duel. Seats rotate by one each
match (``referee.results.seat_rotation``): with two players, player 1 moves first in
even-numbered matches, player 2 in odd ones. In a game with an opening (``info.yml``'s
``opening_moves``), each match starts with random moves the referee plays, the same for
the matches of one turn of the rotation (``referee.openings``). Every action is checked
against the rules before it is applied, every wait has a deadline, and whatever an
agent does wrong ends the match as a named fault charged to that agent.

An agent whose process is no longer usable (it crashed, timed out, ran out of
memory or broke the stream) is restarted once per duel; after a second such
failure it forfeits the remaining matches, which keeps a duel against a hostile
agent bounded in time.

The agents' side (starts, restarts, each move's request on its clock) is
``referee.agents``; a duel's settings are ``referee.duel_settings``, and validation by
self-play ``referee.validation``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from arena_sdk import protocol

from environments.base import Environment, IllegalAction
from environments.registry import load_info, make_environment
from referee.agents import FAREWELL_TIME, MAX_RESTARTS, AgentReferee, Contestant, side_by_side
from referee.channel import AgentFailure
from referee.duel_settings import DuelSettings
from referee.openings import Step, duel_openings, opening_turn
from referee.results import (
    DuelResult,
    Fault,
    FaultKind,
    MatchRecord,
    match_seed,
    outcome_of,
    seat_rotation,
)
from sandboxes.base import AgentSource, SandboxBackend, SandboxError
from sandboxes.cpus import claim_cpu

#: Told each event of a running duel as it happens (``Referee.progress``).
Progress = Callable[[dict[str, Any]], None]


class Referee(AgentReferee):
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
        of the duel as it happens: ``match`` (a match begins: its index, seed, seats and
        clock), ``step`` (the actions of a step, by seat, once applied, and each seat's
        time bank after it) and
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
        #: The openings of the duel's turns (``_opening``), drawn at its first match.
        self._openings: list[list[Step]] | None = None

    # -- matches --------------------------------------------------------------

    def _match_seed(self, index: int) -> int:
        return match_seed(self.seed, index)

    def _opening(self, index: int) -> list[Step]:
        """The steps the referee plays at the start of match ``index`` (none in most games)."""
        players = len(self.contestants)
        turn = opening_turn(index, players)
        if self._openings is None or turn >= len(self._openings):
            # Drawn for the whole duel at once: the same draws give each turn's opening
            # however many turns are drawn.
            last = max(turn, opening_turn(self.settings.matches - 1, players))
            self._openings = duel_openings(
                self.environment,
                duel_seed=self.seed,
                moves=self.settings.opening_moves,
                turns=last + 1,
            )
        return self._openings[turn]

    def _play_opening(self, record: MatchRecord, opening: list[Step]) -> None:
        """Apply the opening's steps to the environment just reset, recorded as the match's
        first steps (no agent's: no timings). A step the game refuses is the referee's error:
        the game is not as deterministic as its ``opening_moves`` promised."""
        environment = self.environment
        for step, actions in enumerate(opening):
            moved = {seat: action for seat, action in enumerate(actions) if action is not None}
            for seat, action in moved.items():
                environment.check_action(seat, action)
            environment.apply(moved)
            record.actions.append(list(actions))
            record.timings.append([None] * len(actions))
            if self.progress is not None:
                self.progress(
                    {
                        "type": "step",
                        "match": record.index,
                        "step": step,
                        "actions": record.actions[-1],
                        "opening": True,
                    }
                )
        record.opening = len(opening)

    def _forfeit(self, record: MatchRecord, unavailable: list[Contestant]) -> None:
        for contestant in unavailable:
            fault = self.startup_faults.pop(contestant.number, None)
            if fault is None and contestant.gone is not None:
                # Lost as the match it left was: leaving is no way to escape a loss.
                fault = Fault(
                    contestant.number, contestant.gone_kind, f"not played: {contestant.gone}"
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

        opening = self._opening(index)
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
                    # Each seat's clock: a move's limit, then the bank each seat starts with.
                    "move_time": self.settings.move_time,
                    "time_bank": self.settings.time_bank,
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
        self._play_opening(record, opening)

        banks = [self.settings.time_bank] * environment.num_players
        seat_numbers = range(len(seats))
        # Counted from the match's start, the opening's steps included, as its actions are.
        step = len(opening)
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
                    {
                        "type": "step",
                        "match": index,
                        "step": step,
                        "actions": record.actions[-1],
                        # What each seat's bank holds after this step, for spectators' clocks.
                        "banks": [round(bank, 3) for bank in banks],
                    }
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
                # The same faults structured (player, kind, step, message): a person's
                # page says them in words.
                "faults": [fault.as_json() for fault in record.faults],
                "observation": self.environment.observation(seat),
            }
            try:
                contestant.channel.send(message, time.monotonic() + self.settings.move_time)
            except AgentFailure as failure:
                contestant.broken = f"{failure.kind.value}: {failure.message}"

    # -- the duel -------------------------------------------------------------

    @contextlib.contextmanager
    def _shared_cpu(self) -> Iterator[Callable[[], None]]:
        """While the block runs, this thread and the agents on one CPU of their own, in a
        game played in turns (``sandboxes.cpus``), when every agent's sandbox can pin
        it (the process sandbox's, a container; not a remote seat or an LLM player); the
        agents started meanwhile too.

        The CPU is claimed before the agents start, so that what their sandboxes start in
        the background meanwhile (a warm pool's next agents, a fork server's clean-up)
        runs on the other CPUs; the block calls what it yields once the agents have
        answered their handshakes (started side by side on every CPU), which pins them
        all, or lets the CPU go."""
        if not self.settings.share_cpu or self.environment.simultaneous:
            yield lambda: None
            return
        everywhere = os.sched_getaffinity(0)
        with claim_cpu() as claim:

            def settle() -> None:
                if claim is None:
                    return
                running = [c.agent for c in self.contestants if c.agent is not None]
                # Asking an agent to stay where it may run already says whether it can
                # be pinned.
                if len(running) < len(self.contestants) or not all(
                    agent.pin_to(everywhere) for agent in running
                ):
                    claim.release()
                    return
                claim.pin_here()
                self.cpus = {claim.cpu}
                for agent in running:
                    agent.pin_to(self.cpus)

            try:
                yield settle
            finally:
                if self.cpus is not None:
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
            with self._shared_cpu() as settle:
                # Started side by side on every CPU; then, in turns, played on one.
                self._launch(list(self.contestants))
                settle()
                for index in range(self.settings.matches):
                    result.matches.append(self._play_match(index))
        except Exception as error:
            result.infrastructure_error = infrastructure_failure(error)
        finally:
            for contestant in self.contestants:
                contestant.say_bye()
            # Side by side: each wait for an agent to exit on its own costs an engine
            # round trip or two in the docker sandbox.
            for stopped in side_by_side(
                [
                    functools.partial(contestant.stop, grace=FAREWELL_TIME)
                    for contestant in self.contestants
                ]
            ):
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
