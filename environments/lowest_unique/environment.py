"""Lowest unique number: three to six players each pick a number at once; the lowest
number that nobody else picked scores a point for its player.

The game of more than two players built into Arena: its ``players`` setting (3 to 6)
fixes the seat count, and a match is a fixed number of rounds, so every match ends.
"""

from __future__ import annotations

import html
from collections import Counter

from environments.base import JSON, Environment, IllegalAction, require_int, shares_beaten

MIN_PLAYERS = 3
MAX_PLAYERS = 6


def round_winner(choices: list[int]) -> int | None:
    """The seat whose number is the lowest one picked once; None when no number was."""
    counts = Counter(choices)
    unique = [number for number in choices if counts[number] == 1]
    return choices.index(min(unique)) if unique else None


class LowestUnique(Environment):
    name = "lowest_unique"
    simultaneous = True

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        players = self.positive_int_setting("players")
        if not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise ValueError(
                f"{self.name}: players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {players}"
            )
        self.num_players = players
        self.rounds = self.positive_int_setting("rounds")
        self.max_number = self.positive_int_setting("max_number")
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"players": 4, "rounds": 5, "max_number": 5}

    def _reset(self) -> None:
        self.points = [0] * self.num_players
        #: One list of every seat's number per round played.
        self.history: list[list[int]] = []

    @property
    def terminal(self) -> bool:
        return len(self.history) >= self.rounds

    def to_move(self) -> list[int]:
        return [] if self.terminal else list(range(self.num_players))

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or not 0 <= player < self.num_players:
            return []
        return list(range(1, self.max_number + 1))

    def check_action(self, player: int, action: JSON) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if not 0 <= player < self.num_players:
            raise IllegalAction(player, "it is not this player's turn")
        require_int(player, action, 1, self.max_number, "the number")

    def _apply(self, actions: dict[int, JSON]) -> None:
        choices = [int(actions[seat]) for seat in range(self.num_players)]
        self.history.append(choices)
        winner = round_winner(choices)
        if winner is not None:
            self.points[winner] += 1

    def observation(self, player: int) -> dict[str, JSON]:
        return {
            "round": len(self.history),
            "rounds": self.rounds,
            "max_number": self.max_number,
            "players": self.num_players,
            "seat": player,
            "points": list(self.points),
            "history": [list(choices) for choices in self.history],
        }

    def is_terminal(self) -> bool:
        return self.terminal

    def winner(self) -> int | None:
        best = max(self.points)
        if not self.terminal or self.points.count(best) > 1:
            return None
        return self.points.index(best)

    def scores(self) -> list[float]:
        """The share of the other players each one beat on points (a tie counts half):
        1 for the sole leader, 0 for the sole last, and with two players the usual 1, 0 or
        0.5 each."""
        if not self.terminal:
            return [0.0] * self.num_players
        return shares_beaten([float(points) for points in self.points])

    def state(self) -> dict[str, JSON]:
        return {
            "round": len(self.history),
            "rounds": self.rounds,
            "max_number": self.max_number,
            "players": self.num_players,
            "points": list(self.points),
            "history": [list(choices) for choices in self.history],
            "to_move": self.to_move(),
            "winner": self.winner(),
            "terminal": self.terminal,
            "last_action": list(self.history[-1]) if self.history else None,
        }

    def _status(self) -> str:
        if not self.terminal:
            return (
                f"Round {len(self.history) + 1} of {self.rounds}: every player picks a number "
                f"from 1 to {self.max_number}"
            )
        winner = self.winner()
        if winner is not None:
            return f"Player {winner + 1} wins with {self.points[winner]} points"
        return f"Shared first place at {max(self.points)} points"

    @staticmethod
    def _round_text(choices: list[int]) -> str:
        winner = round_winner(choices)
        return "nobody" if winner is None else f"player {winner + 1}"

    def render_text(self) -> str:
        points = ", ".join(f"player {seat + 1} {points}" for seat, points in enumerate(self.points))
        lines = [f"Points: {points}"]
        for number, choices in enumerate(self.history, start=1):
            picked = " ".join(str(choice) for choice in choices)
            lines.append(f"round {number}: {picked} -> {self._round_text(choices)}")
        lines.append(self._status())
        return "\n".join(lines)

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        points = observation["points"]
        lines = [
            f"You are player {player + 1} of {observation['players']}. Round "
            f"{observation['round'] + 1} of {observation['rounds']}: pick a number from 1 to "
            f"{observation['max_number']}; the lowest number nobody else picks scores a point.",
            "Points: "
            + ", ".join(
                f"{'you' if seat == player else f'player {seat + 1}'} {value}"
                for seat, value in enumerate(points)
            ),
        ]
        for number, choices in enumerate(observation["history"], start=1):
            lines.append(f"round {number}: " + " ".join(str(choice) for choice in choices))
        return "\n".join(lines)

    def render_html(self) -> str:
        winner = self.winner()
        header = "".join(
            f'<th scope="col">Player {seat + 1}</th>' for seat in range(self.num_players)
        )
        rows = []
        for number, choices in enumerate(self.history, start=1):
            round_won_by = round_winner(choices)
            last = " lowest-unique-last" if number == len(self.history) else ""
            cells = "".join(
                f'<td class="lowest-unique-pick'
                f'{" lowest-unique-round-win" if seat == round_won_by else ""}">{choice}</td>'
                for seat, choice in enumerate(choices)
            )
            rows.append(
                f'<tr class="lowest-unique-round{last}"><th scope="row">{number}</th>{cells}'
                f"<td>{html.escape(self._round_text(choices))}</td></tr>"
            )
        totals = "".join(
            f'<td class="lowest-unique-points{" lowest-unique-win" if seat == winner else ""}">'
            f"{points}</td>"
            for seat, points in enumerate(self.points)
        )
        return (
            '<div class="lowest-unique">'
            f'<p class="lowest-unique-status">{html.escape(self._status())}</p>'
            '<table class="lowest-unique-board">'
            f'<thead><tr><th scope="col">Round</th>{header}<th scope="col">Point to</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody>"
            f'<tfoot><tr><th scope="row">Points</th>{totals}<td></td></tr></tfoot>'
            "</table></div>"
        )
