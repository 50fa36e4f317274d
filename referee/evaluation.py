"""Evaluations: one agent plays a fixed list of seeded episodes of a one-player game.

The referee of duels (``referee.duel.Referee``) does the work with one seat: the same
long-lived agent process for every episode, the same handshake, per-step clock with a
time bank (per episode), the same faults and the same single restart. An episode that a
fault ends scores the game's ``fault_return`` (``info.yml``: the worst return the
environment gives, 0 for CartPole); after its restart is spent, an unusable agent
forfeits its remaining episodes at that score. The seeds come from the competition, so
every agent plays the same episodes, and an episode is replayed from its seed and actions.

The seat is any seat a duel has (``sandboxes``): a hosted agent's sandbox, an online
agent's remote seat or an LLM player's harness, with their clocks, faults and
absences as in duels; an LLM seat's conversation of each episode is kept with it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from arena_sdk import protocol

from environments.base import IllegalAction
from environments.registry import load_info
from referee.agents import FAREWELL_TIME, Contestant
from referee.channel import AgentFailure
from referee.duel import Referee, _shown, infrastructure_failure
from referee.duel_settings import DuelSettings
from referee.results import DuelResult, Fault, FaultKind, MatchRecord, Outcome
from referee.scores import ScoreSummary, episode_seeds, summarize
from referee.validation import validation_failure
from sandboxes.base import AgentSource, SandboxBackend


@dataclasses.dataclass
class EpisodeRecord(MatchRecord):
    """One episode: its seed and actions replay it; its one score is its return."""

    terminated: bool = False
    truncated: bool = False

    @property
    def episode_return(self) -> float:
        return self.scores[0]

    @property
    def conversation(self) -> dict[str, Any] | None:
        """An LLM seat's requests and answers in this episode (``llm.records``)."""
        return self.transcripts.get(1)

    def as_json(self, *, include_logs: bool = True) -> dict[str, Any]:
        # An episode's log is the evaluation's whole log: it keeps no move logs.
        document: dict[str, Any] = {
            "index": self.index,
            "seed": self.seed,
            "return": self.episode_return,
            "steps": len(self.actions),
            "terminated": self.terminated,
            "truncated": self.truncated,
            "error_msg": self.error_msg,
            "faults": [fault.as_json() for fault in self.faults],
            "actions": self.actions,
            "timings": self.timings,
            "duration": round(self.duration, 6),
        }
        if self.conversation is not None:
            document["conversation"] = self.conversation
        return document


@dataclasses.dataclass
class EvaluationResult:
    environment: str
    agent: str
    seeds: list[int]
    episodes: list[EpisodeRecord] = dataclasses.field(default_factory=list)
    #: Set when the evaluation could not be played for reasons outside the agent.
    infrastructure_error: str = ""
    restarts: int = 0
    log: str = ""
    duration: float = 0.0

    @property
    def returns(self) -> list[float]:
        return [episode.episode_return for episode in self.episodes]

    @property
    def faults(self) -> list[Fault]:
        return [fault for episode in self.episodes for fault in episode.faults]

    @property
    def summary(self) -> ScoreSummary | None:
        return summarize(self.returns) if self.episodes else None

    def as_json(self, *, include_log: bool = True) -> dict[str, Any]:
        summary = self.summary
        document: dict[str, Any] = {
            "environment": self.environment,
            "agent": self.agent,
            "seeds": self.seeds,
            "infrastructure_error": self.infrastructure_error,
            "summary": summary.as_json() if summary is not None else None,
            "faulty_episodes": sum(1 for episode in self.episodes if episode.faults),
            "restarts": self.restarts,
            "duration": round(self.duration, 6),
            "episodes": [episode.as_json() for episode in self.episodes],
        }
        if include_log:
            document["log"] = self.log
        return document


class Evaluator(Referee):
    """The referee with a single seat, playing episodes instead of a duel's matches."""

    def __init__(
        self,
        *,
        environment: str,
        source: AgentSource,
        settings: DuelSettings,
        backend: SandboxBackend,
        seeds: list[int],
    ) -> None:
        if load_info(environment).players != 1:
            raise ValueError(f"{environment} is not a one-player game")
        super().__init__(
            environment=environment,
            sources=(source,),
            settings=settings,
            backend=backend,
            seed=0,
        )
        self.seeds = list(seeds)
        self.fault_return = load_info(environment).fault_return

    def _play_episode(self, index: int, seed: int) -> EpisodeRecord:
        self._match_index = index
        record = EpisodeRecord(index=index, seed=seed, seats=[1])
        started = time.monotonic()
        [contestant] = self.contestants
        self._ensure_running()
        if contestant.broken is not None:
            self._forfeit(record, [contestant])
            self._score_episode(record)
            record.duration = time.monotonic() - started
            return record

        environment = self.environment
        environment.reset(seed)
        assert contestant.channel is not None
        try:
            contestant.channel.send(
                {"type": protocol.START, "match": index, "player": 0, "seed": seed},
                time.monotonic() + self.settings.move_time,
            )
        except AgentFailure as failure:
            record.faults.append(self._charge(contestant, failure, None))

        banks = [self.settings.time_bank]
        step = 0
        while not record.faults and not environment.is_terminal():
            actions, timings, faults = self._request_actions([contestant], [0], banks, step)
            record.faults.extend(faults)
            if 0 in actions:
                try:
                    environment.check_action(0, actions[0])
                except IllegalAction as illegal:
                    record.faults.append(
                        Fault(
                            1,
                            FaultKind.ILLEGAL_ACTION,
                            f"{_shown(actions[0])} is illegal: {illegal.reason}",
                            step,
                        )
                    )
            if record.faults:
                break
            environment.apply(actions)
            record.actions.append([actions[0]])
            record.timings.append([timings[0]])
            step += 1

        self._score_episode(record)
        self._send_end(record, [contestant])
        conversation = contestant.transcript(index)
        if conversation is not None:
            record.transcripts[1] = {"player": 1, **conversation}
        if contestant.broken is not None:
            contestant.stop()
        record.duration = time.monotonic() - started
        return record

    def _score_episode(self, record: EpisodeRecord) -> None:
        """The return, or ``fault_return`` for an episode that a fault ended."""
        if record.faults:
            record.scores = [self.fault_return]
            record.error_msg = "; ".join(fault.describe() for fault in record.faults)
            record.result = Outcome.PLAYER_2_WIN
            return
        record.scores = [self.environment.scores()[0]]
        record.terminated = bool(getattr(self.environment, "terminated", True))
        record.truncated = bool(getattr(self.environment, "truncated", False))
        record.result = Outcome.PLAYER_1_WIN

    def _send_end(self, record: MatchRecord, seats: list[Contestant]) -> None:
        [contestant] = seats
        if contestant.channel is None or contestant.broken is not None:
            return
        message = {
            "type": protocol.END,
            "match": record.index,
            "result": "done",
            "scores": [record.scores[0]],
            "reason": record.error_msg,
            "observation": self.environment.observation(0),
        }
        try:
            contestant.channel.send(message, time.monotonic() + self.settings.move_time)
        except AgentFailure as failure:
            contestant.broken = f"{failure.kind.value}: {failure.message}"

    def evaluate(self) -> EvaluationResult:
        [contestant] = self.contestants
        result = EvaluationResult(
            environment=self.environment_name, agent=contestant.source.name, seeds=self.seeds
        )
        started = time.monotonic()
        try:
            self._launch([contestant])
            for index, seed in enumerate(self.seeds):
                result.episodes.append(self._play_episode(index, seed))
        except Exception as error:
            result.infrastructure_error = infrastructure_failure(error)
        finally:
            contestant.say_bye()
            contestant.stop(grace=FAREWELL_TIME)
        result.restarts = contestant.restarts
        result.log = contestant.log()
        result.duration = time.monotonic() - started
        return result

    def play(self) -> DuelResult:
        raise TypeError("an evaluation has no duel: call evaluate()")


def run_evaluation(
    environment: str,
    source: AgentSource,
    *,
    backend: SandboxBackend,
    seeds: list[int],
    **overrides: Any,
) -> EvaluationResult:
    """Evaluate ``source`` on the episodes of ``seeds`` with the limits of the game's
    ``info.yml`` unless overridden (``move_time``, ``time_bank``, ...)."""
    # The seeds say how many episodes there are.
    overrides.pop("matches", None)
    settings = DuelSettings.from_info(load_info(environment), matches=len(seeds), **overrides)
    return Evaluator(
        environment=environment, source=source, settings=settings, backend=backend, seeds=seeds
    ).evaluate()


@dataclasses.dataclass
class EvaluationValidation:
    passed: bool
    message: str
    evaluation: EvaluationResult


def validate_evaluation(
    environment: str,
    source: AgentSource,
    *,
    backend: SandboxBackend,
    seed: int | None = None,
    **overrides: Any,
) -> EvaluationValidation:
    """A one-player agent's validation: a short evaluation (``validation_matches``
    episodes, or ``matches``) in which any fault fails it."""
    episodes = overrides.pop("matches", None) or load_info(environment).validation_matches
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    seeds = episode_seeds(seed, episodes)
    evaluation = run_evaluation(environment, source, backend=backend, seeds=seeds, **overrides)
    if evaluation.infrastructure_error:
        message = (
            f"validation could not run (not the agent's fault): {evaluation.infrastructure_error}"
        )
        return EvaluationValidation(False, message, evaluation)
    faults = evaluation.faults
    if faults:
        message = validation_failure(faults, evaluation.log, "episodes")
        return EvaluationValidation(False, message, evaluation)
    return EvaluationValidation(
        True, f"validated: {len(evaluation.episodes)} episodes without a fault", evaluation
    )
