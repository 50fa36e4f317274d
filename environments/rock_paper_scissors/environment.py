"""Rock-paper-scissors, both players choosing at once, first to three points.

A round cap guarantees an end: when it is reached the player with more points
wins and equal points is a draw.
"""

from __future__ import annotations

import html

from environments.base import JSON, Environment, IllegalAction

ACTIONS = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}


def round_winner(first: str, second: str) -> int | None:
    """Index (0 or 1) of the player whose action wins the round, None for a tie."""
    if first == second:
        return None
    return 0 if BEATS[first] == second else 1


class RockPaperScissors(Environment):
    name = "rock_paper_scissors"
    simultaneous = True

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        self.points_to_win = self.positive_int_setting("points_to_win")
        self.max_rounds = self.positive_int_setting("max_rounds")
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"points_to_win": 3, "max_rounds": 30}

    def _reset(self) -> None:
        self.points = [0, 0]
        #: One [player 1 action, player 2 action] pair per round played.
        self.history: list[list[str]] = []
        self.terminal = False

    def to_move(self) -> list[int]:
        return [] if self.terminal else [0, 1]

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player not in (0, 1):
            return []
        return list(ACTIONS)

    def check_action(self, player: int, action: JSON) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if player not in (0, 1):
            raise IllegalAction(player, "it is not this player's turn")
        if not isinstance(action, str):
            raise IllegalAction(
                player,
                f"action must be one of the strings 'rock', 'paper', 'scissors', "
                f"got {type(action).__name__} {action!r}",
            )
        if action not in BEATS:
            raise IllegalAction(
                player, f"unknown action {action!r}: expected 'rock', 'paper' or 'scissors'"
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        pair = [actions[0], actions[1]]
        self.history.append(pair)
        winner = round_winner(*pair)
        if winner is not None:
            self.points[winner] += 1
        if max(self.points) >= self.points_to_win or len(self.history) >= self.max_rounds:
            self.terminal = True

    def observation(self, player: int) -> dict[str, JSON]:
        opponent = 1 - player
        return {
            "round": len(self.history),
            "my_points": self.points[player],
            "opponent_points": self.points[opponent],
            "history": [[pair[player], pair[opponent]] for pair in self.history],
            "opponent_last": self.history[-1][opponent] if self.history else None,
        }

    def is_terminal(self) -> bool:
        return self.terminal

    def winner(self) -> int | None:
        if not self.terminal or self.points[0] == self.points[1]:
            return None
        return 0 if self.points[0] > self.points[1] else 1

    def state(self) -> dict[str, JSON]:
        return {
            "round": len(self.history),
            "points": list(self.points),
            "history": [list(pair) for pair in self.history],
            "to_move": self.to_move(),
            "winner": self.winner(),
            "terminal": self.terminal,
            "last_action": list(self.history[-1]) if self.history else None,
            "points_to_win": self.points_to_win,
            "max_rounds": self.max_rounds,
        }

    def _status(self) -> str:
        winner = self.winner()
        if winner is not None:
            return f"Player {winner + 1} wins {max(self.points)} to {min(self.points)}"
        if self.terminal:
            return f"Draw at {self.points[0]} all after {len(self.history)} rounds"
        return (
            f"Round {len(self.history) + 1}: both players choose "
            f"(first to {self.points_to_win} points, at most {self.max_rounds} rounds)"
        )

    @staticmethod
    def _result_text(pair: list[str]) -> str:
        winner = round_winner(*pair)
        return "tie" if winner is None else f"player {winner + 1}"

    def render_text(self) -> str:
        lines = [f"Score: player 1 {self.points[0]} - {self.points[1]} player 2"]
        for number, pair in enumerate(self.history, start=1):
            lines.append(f"round {number}: {pair[0]} vs {pair[1]} -> {self._result_text(pair)}")
        lines.append(self._status())
        return "\n".join(lines)

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        lines = [
            f"Round {observation['round'] + 1}. Points: you {observation['my_points']}, "
            f"your opponent {observation['opponent_points']} (first to {self.points_to_win}, "
            f"at most {self.max_rounds} rounds)."
        ]
        for number, (mine, theirs) in enumerate(observation["history"], start=1):
            lines.append(f"round {number}: you {mine}, your opponent {theirs}")
        return "\n".join(lines)

    def render_html(self) -> str:
        rows_html = []
        for number, pair in enumerate(self.history, start=1):
            winner = round_winner(*pair)
            classes = ["rock-paper-scissors-round"]
            if number == len(self.history):
                classes.append("rock-paper-scissors-last")
            cells = []
            for player, action in enumerate(pair):
                cell_class = "rock-paper-scissors-action"
                if winner == player:
                    cell_class += " rock-paper-scissors-round-win"
                cells.append(f'<td class="{cell_class}">{html.escape(action)}</td>')
            rows_html.append(
                f'<tr class="{" ".join(classes)}"><th scope="row">{number}</th>'
                f"{''.join(cells)}<td>{html.escape(self._result_text(pair))}</td></tr>"
            )
        winner = self.winner()
        score_cells = []
        for player in range(2):
            cell_class = "rock-paper-scissors-points"
            if winner == player:
                cell_class += " rock-paper-scissors-win"
            score_cells.append(f'<td class="{cell_class}">{self.points[player]}</td>')
        return (
            '<div class="rock-paper-scissors">'
            f'<p class="rock-paper-scissors-status">{html.escape(self._status())}</p>'
            '<table class="rock-paper-scissors-board">'
            '<thead><tr><th scope="col">Round</th><th scope="col">Player 1</th>'
            '<th scope="col">Player 2</th><th scope="col">Result</th></tr></thead>'
            f"<tbody>{''.join(rows_html)}</tbody>"
            f'<tfoot><tr><th scope="row">Points</th>{"".join(score_cells)}<td></td></tr></tfoot>'
            "</table></div>"
        )
