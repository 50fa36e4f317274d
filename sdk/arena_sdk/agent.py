"""What an agent author writes: a subclass of ``Agent`` or a decorated function."""

from __future__ import annotations

import random

# typing.TYPE_CHECKING, without importing typing: an agent's process starts for every
# duel, and typing alone costs it about 2 ms. Annotations are never evaluated at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional


class Match:
    """One match of the duel, as seen by this agent."""

    def __init__(
        self,
        *,
        environment: str,
        configuration: dict,
        index: int,
        player: int,
        seed: int,
        first_player: int,
        limits: dict,
        player_count: int = 2,
    ) -> None:
        self.environment = environment
        self.configuration = configuration
        self.index = index
        #: Your seat in this match, from 0; it rotates from match to match.
        self.player = player
        self.seed = seed
        self.first_player = first_player
        self.limits = limits
        #: Players in the duel (the hello's ``player_count``): 2, or up to 6.
        self.player_count = player_count
        #: Seeded from the match seed and the player: a random agent that uses it
        #: replays identically.
        self.random = random.Random(seed * 7919 + player)

    def __repr__(self) -> str:
        return f"Match({self.environment!r}, index={self.index}, player={self.player})"


class Turn:
    """One request for an action."""

    def __init__(
        self,
        *,
        match: Match,
        step: int,
        observation: dict,
        legal_actions: list,
        move_time_left: float,
        time_bank_left: float,
    ) -> None:
        self.match = match
        self.step = step
        self.observation = observation
        self.legal_actions = legal_actions
        self.move_time_left = move_time_left
        self.time_bank_left = time_bank_left

    @property
    def player(self) -> int:
        return self.match.player

    @property
    def random(self) -> random.Random:
        return self.match.random


class Result:
    """How a match ended, from this agent's point of view."""

    def __init__(
        self,
        *,
        match: Match,
        outcome: str,
        scores: list,
        reason: str,
        observation: Optional[dict],
    ) -> None:
        self.match = match
        #: "win", "loss" or "draw".
        self.outcome = outcome
        self.scores = scores
        #: Why the match ended early ("" for a normal end).
        self.reason = reason
        #: The final observation, so an agent can see the last board.
        self.observation = observation

    @property
    def reward(self) -> int:
        return {"win": 1, "loss": -1}.get(self.outcome, 0)


class Agent:
    """Base class of an agent. Override ``act``; ``start`` and ``end`` are optional.

    One instance serves every match of a duel, so anything loaded in ``__init__``
    (a model, an opening book) is loaded once.
    """

    #: Shown in logs; defaults to the class name.
    name: Optional[str] = None

    def start(self, match: Match) -> None:
        """Called when a match begins."""

    def act(self, turn: Turn) -> Any:
        """Return one of ``turn.legal_actions``."""
        raise NotImplementedError("an agent must implement act(turn)")

    def end(self, result: Result) -> None:
        """Called when a match is over."""

    # Online play only (``python -m arena_sdk connect``): optional hooks.

    def on_server_message(self, message: dict) -> None:
        """Called with each message of the server that is not the protocol's: ``welcome``
        (the stream is open), ``duel`` (a duel begins: its ``opponent``...), and others."""

    def on_error(self, error: "OnlineError") -> None:
        """Called when the server refused something: its ``status``, ``code`` and
        ``message`` (for example a reply sent too late, ``not_your_turn``)."""

    def on_disconnect(self, reason: str) -> None:
        """Called when the connection to the server dropped; the client reconnects by
        itself and resumes where it was."""

    def describe(self) -> str:
        return self.name or type(self).__name__


class OnlineError(Exception):
    """What the server answered when it refused a request."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class FunctionAgent(Agent):
    """An agent built from a function by the ``@agent`` decorator."""

    def __init__(self, act: Callable[[Turn], Any]) -> None:
        self._act = act
        self._start: Optional[Callable[[Match], None]] = None
        self._end: Optional[Callable[[Result], None]] = None
        self.name = act.__name__
        self.__doc__ = act.__doc__

    def on_start(self, hook: Callable[[Match], None]) -> Callable[[Match], None]:
        """Decorator: run ``hook(match)`` when a match begins."""
        self._start = hook
        return hook

    def on_end(self, hook: Callable[[Result], None]) -> Callable[[Result], None]:
        """Decorator: run ``hook(result)`` when a match is over."""
        self._end = hook
        return hook

    def start(self, match: Match) -> None:
        if self._start is not None:
            self._start(match)

    def act(self, turn: Turn) -> Any:
        return self._act(turn)

    def end(self, result: Result) -> None:
        if self._end is not None:
            self._end(result)

    def __call__(self, turn: Turn) -> Any:
        return self._act(turn)


def agent(act: Callable[[Turn], Any]) -> FunctionAgent:
    """Decorator style::

    @agent
    def play(turn):
        return turn.random.choice(turn.legal_actions)

    @play.on_start
    def begin(match): ...
    """
    return FunctionAgent(act)
