"""Sum to 10: players take turns adding 1, 2 or 3; whoever reaches exactly 10 wins."""

from __future__ import annotations

import html

from environments.base import JSON, Environment, IllegalAction, require_int


class SumTo10(Environment):
    name = "sum_to_10"

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        self.target = self.positive_int_setting("target")
        self.max_add = self.positive_int_setting("max_add")
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"target": 10, "max_add": 3}

    def _reset(self) -> None:
        self.total = 0
        self.additions: list[int] = []
        self.current = 0
        self.terminal = False

    def to_move(self) -> list[int]:
        return [] if self.terminal else [self.current]

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        return list(range(1, min(self.max_add, self.target - self.total) + 1))

    def check_action(self, player: int, action: JSON) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if player != self.current:
            raise IllegalAction(player, "it is not this player's turn")
        addition = require_int(player, action, 1, self.max_add, "addition")
        if self.total + addition > self.target:
            raise IllegalAction(
                player,
                f"adding {addition} would bring the total to {self.total + addition}, "
                f"over the target {self.target}",
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        addition = actions[self.current]
        self.total += addition
        self.additions.append(addition)
        if self.total == self.target:
            self.terminal = True
        else:
            self.current = 1 - self.current

    def describe_action(self, action: JSON) -> str:
        if isinstance(action, int) and not isinstance(action, bool):
            return f"add {action}"
        return super().describe_action(action)

    def observation(self, player: int) -> dict[str, JSON]:
        return {"total": self.total, "target": self.target, "mark": player + 1}

    def is_terminal(self) -> bool:
        return self.terminal

    def _winning_player(self) -> int | None:
        # Whoever made the last addition reached the target; nobody else can win.
        return self.current if self.terminal else None

    def winner(self) -> int | None:
        return self.current if self.terminal else None

    def state(self) -> dict[str, JSON]:
        return {
            "total": self.total,
            "target": self.target,
            "max_add": self.max_add,
            "additions": list(self.additions),
            "to_move": self.to_move(),
            "winner": self._winning_player(),
            "terminal": self.terminal,
            "last_action": self.additions[-1] if self.additions else None,
        }

    def _status(self) -> str:
        if self.terminal:
            return f"Player {self.current + 1} wins by reaching {self.target}"
        return f"Player {self.current + 1} to add 1 to {self.max_add} (total {self.total})"

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        return (
            f"The total is {observation['total']}; whoever brings it to exactly "
            f"{observation['target']} wins. You may add 1 to {self.max_add}."
        )

    def render_text(self) -> str:
        lines = [f"Total: {self.total} of {self.target}"]
        running = 0
        for turn, addition in enumerate(self.additions):
            running += addition
            lines.append(f"player {turn % 2 + 1} added {addition} -> {running}")
        lines.append(self._status())
        return "\n".join(lines)

    def render_html(self) -> str:
        last = self.additions[-1] if self.additions else 0
        cells_html = []
        for value in range(1, self.target + 1):
            classes = ["sum-to-10-step"]
            if value <= self.total:
                classes.append("sum-to-10-reached")
            if self.total - last < value <= self.total:
                classes.append("sum-to-10-last")
            if self.terminal and value == self.target:
                classes.append("sum-to-10-win")
            cells_html.append(f'<li class="{" ".join(classes)}">{value}</li>')
        moves_html = []
        running = 0
        for turn, addition in enumerate(self.additions):
            running += addition
            moves_html.append(f"<li>Player {turn % 2 + 1} added {addition}, total {running}</li>")
        return (
            '<div class="sum-to-10">'
            f'<p class="sum-to-10-status">{html.escape(self._status())}</p>'
            f'<ol class="sum-to-10-track" aria-label="totals 1 to {self.target}">'
            f"{''.join(cells_html)}</ol>"
            f'<ol class="sum-to-10-moves">{"".join(moves_html)}</ol>'
            "</div>"
        )
