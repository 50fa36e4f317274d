"""An OpenSpiel game as an Arena environment.

Seats are OpenSpiel's players (seat 0 is player 0). What the referee needs maps as follows:

* Chance events (dealing cards, rolling dice) are played here, never by a seat: each
  chance node is resolved as soon as it is reached, by a ``random.Random`` seeded with the
  match seed, from OpenSpiel's outcome probabilities. The outcomes drawn depend only on
  the seed and the seats' actions, so a replay recomputes every one of them.
* A seat's observation holds only what OpenSpiel says that player sees: its observation
  string and, in games of imperfect information, its information state (what it has
  seen so far). The state itself, with every hidden card, is kept for replays.
* A legal action is an object ``{"id": <OpenSpiel action>, "text": <its name>}``; an
  agent answers with one of the objects exactly as listed.
* A match is scored by OpenSpiel's returns: the seat with the higher return wins (in
  poker, the one who won chips), equal returns are a draw. With more than two seats
  (``players=3`` in the spec of a game that takes it), each seat scores the share of the
  others whose return its own beat, a tie counting half (``shares_beaten``): the returns
  rank the seats, equal returns sharing a rank, and two seats score 1, 0 or ½ as ever.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
from typing import Any, ClassVar

import pyspiel

from environments.base import JSON, Environment, IllegalAction, cut, require_object, shares_beaten

ACTION_KEYS = ("id", "text")
#: PBKDF2 rounds between a match seed and the seeds its agents are given: a few
#: milliseconds a match here, while working back from an agent's seed to the match seed
#: (2**31 candidates) would take that many times longer than any time bank.
AGENT_SEED_ROUNDS = 5_000
#: Legal actions named in a refusal, at most.
NAMED_IN_REFUSAL = 8
#: OpenSpiel's chess seats Black as player 0 and White as player 1.
CHESS_COLOURS = {0: " (Black)", 1: " (White)"}
#: White's pieces by FEN letter, then Black's.
CHESS_PIECES = dict(zip("KQRBNPkqrbnp", "♔♕♖♗♘♙♚♛♜♝♞♟", strict=True))
#: Leduc poker's six cards by OpenSpiel's number: rank (number // 2), then suit.
LEDUC_CARDS = ("J♠", "J♥", "Q♠", "Q♥", "K♠", "K♥")
#: Leduc's betting actions by OpenSpiel's number, as its information state lists them.
LEDUC_ACTIONS = ("Fold", "Call", "Raise")
#: The number OpenSpiel puts before the name of a backgammon move (``52 - 24/22/21``).
NUMBERED_ACTION = re.compile(r"^[0-9]+ - ")
#: One ``[Name: value]`` field of an OpenSpiel observation or information state string.
BRACKET_FIELD = re.compile(r"\[([^\]:]+):? ?([^\]]*)\]")


class OpenSpielEnvironment(Environment):
    """The adapter; ``environments.openspiel.load_spec_class`` makes one subclass per spec,
    setting the class attributes below."""

    game: ClassVar[pyspiel.Game]
    #: OpenSpiel's short name of the game (``chess``).
    short_name: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Any]] = {}

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        game_type = self.game.get_type()
        self._has_observation = bool(game_type.provides_observation_string)
        self._has_information_state = bool(game_type.provides_information_state_string) and (
            game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION
            or not self._has_observation
        )
        # Its state, as replays draw it, shows every hand: spectators see a running match
        # of such a game only once it is over (``reads.live``).
        self.hidden_information = (
            game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION
        )
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {
            "game": cls.short_name,
            "parameters": dict(cls.parameters),
            "max_game_length": cls.game.max_game_length(),
            "num_distinct_actions": cls.game.num_distinct_actions(),
        }

    # -- the match -------------------------------------------------------------

    def agent_seed(self, seed: int, player: int) -> int:
        """Derived one way from the match seed: the chance draws (the other seat's cards,
        the next dice) come from the match seed, so no agent may be given it."""
        digest = hashlib.pbkdf2_hmac(
            "sha256",
            str(seed).encode(),
            f"arena-openspiel-agent-seed-{player}".encode(),
            AGENT_SEED_ROUNDS,
            dklen=8,
        )
        return int.from_bytes(digest, "big") >> 1

    def _reset(self) -> None:
        self._state = self.game.new_initial_state()
        self._chance = random.Random(self.seed)
        self._legal: dict[int, list[dict[str, JSON]]] = {}
        #: What happened in the last step, as people read it: (who, what).
        self.last_events: list[tuple[str, str]] = []
        #: Chess only: the last move in long algebraic notation (e2e4, e7e8q).
        self.last_move: str | None = None
        self._play_chance()

    def _play_chance(self) -> None:
        """Resolve chance nodes until a seat must act or the match is over."""
        state = self._state
        while state.is_chance_node():
            outcomes = state.chance_outcomes()
            draw = self._chance.random()
            chosen = outcomes[-1][0]
            for action, probability in outcomes:
                draw -= probability
                if draw < 0:
                    chosen = action
                    break
            self.last_events.append(
                ("chance", state.action_to_string(pyspiel.PlayerId.CHANCE, chosen))
            )
            state.apply_action(chosen)

    def to_move(self) -> list[int]:
        state = self._state
        if state.is_terminal():
            return []
        if state.is_simultaneous_node():
            return list(range(self.num_players))
        return [state.current_player()]

    def legal_actions(self, player: int) -> list[JSON]:
        if player not in self.to_move():
            return []
        if player not in self._legal:
            state = self._state
            self._legal[player] = [
                {"id": action, "text": state.action_to_string(player, action)}
                for action in state.legal_actions(player)
            ]
        return list(self._legal[player])

    def check_action(self, player: int, action: JSON) -> None:
        if self._state.is_terminal():
            raise IllegalAction(player, "the match is already over")
        if player not in self.to_move():
            raise IllegalAction(player, "it is not this player's turn")
        require_object(player, action, ACTION_KEYS, '{"id": ..., "text": ...} from legal_actions')
        chosen = action["id"]
        if isinstance(chosen, bool) or not isinstance(chosen, int):
            raise IllegalAction(
                player, f"'id' must be an integer, got {type(chosen).__name__} {cut(chosen)}"
            )
        # Only the chosen action is named (a chess position has dozens, each name costly
        # to write), unless it is refused.
        if chosen not in self._state.legal_actions(player):
            legal = [candidate["text"] for candidate in self.legal_actions(player)]
            named = ", ".join(legal[:NAMED_IN_REFUSAL])
            more = (
                f" and {len(legal) - NAMED_IN_REFUSAL} more"
                if len(legal) > NAMED_IN_REFUSAL
                else ""
            )
            raise IllegalAction(player, f"action {chosen} is not legal now (legal: {named}{more})")
        name = self._state.action_to_string(player, chosen)
        if action["text"] != name:
            raise IllegalAction(
                player,
                f"'text' {cut(action['text'])} does not match action {chosen}, which is {name!r}",
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        state = self._state
        if self.short_name == "chess":
            # The board a drawer marks the last move on (from and to squares), read before
            # the move changes it.
            [(_mover, action)] = actions.items()
            self.last_move = pyspiel.chess.action_to_move(action["id"], state.board()).to_lan()
        self.last_events = [
            (f"player {player + 1}", actions[player]["text"]) for player in sorted(actions)
        ]
        if state.is_simultaneous_node():
            state.apply_actions([actions[player]["id"] for player in range(self.num_players)])
        else:
            [(_player, action)] = actions.items()
            state.apply_action(action["id"])
        self._legal = {}
        self._play_chance()

    def is_terminal(self) -> bool:
        return bool(self._state.is_terminal())

    def returns(self) -> list[float]:
        """OpenSpiel's returns of each seat (0 until the match is over)."""
        return [float(value) for value in self._state.returns()]

    def _leaders(self) -> list[int]:
        """The seats with the highest return."""
        returns = self.returns()
        best = max(returns)
        return [player for player, value in enumerate(returns) if value == best]

    def winner(self) -> int | None:
        if not self._state.is_terminal():
            return None
        leaders = self._leaders()
        return leaders[0] if len(leaders) == 1 else None

    def scores(self) -> list[float]:
        """Each seat's share of the others whose return it beat (a tie counts half)."""
        if not self._state.is_terminal():
            return [0.0] * self.num_players
        return shares_beaten(self.returns())

    # -- what a seat sees ----------------------------------------------------------

    def observation(self, player: int) -> dict[str, JSON]:
        state = self._state
        seen: dict[str, JSON] = {
            "game": self.short_name,
            "player": player,
            "to_move": self.to_move(),
        }
        if self._has_observation:
            seen["observation"] = state.observation_string(player)
        if self._has_information_state:
            seen["information_state"] = state.information_state_string(player)
        if state.is_terminal():
            seen["returns"] = self.returns()
        return seen

    def describe_action(self, action: JSON) -> str:
        """OpenSpiel's name of the action, which is what a person reads already in most
        games (chess in standard algebraic notation, poker's Fold, Call and Raise), but
        backgammon's, which starts with the action's number (``52 - 24/22/21``)."""
        if not isinstance(action, dict) or not isinstance(action.get("text"), str):
            return super().describe_action(action)
        text: str = action["text"]
        if self.short_name == "backgammon":
            return NUMBERED_ACTION.sub("", text)
        return text

    def seat_side(self, seat: int) -> str:
        if self.short_name == "chess":
            return CHESS_COLOURS.get(seat, "").strip(" ()")
        return super().seat_side(seat)

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        lines = [f"{self.short_name}, as player {player + 1} sees it:"]
        if "observation" in observation:
            lines += ["", str(observation["observation"]).rstrip()]
        if "information_state" in observation:
            lines += [
                "",
                "What you have seen of this match so far (information state):",
                str(observation["information_state"]).rstrip(),
            ]
        if "returns" in observation:
            lines += ["", f"The match is over; returns by player: {observation['returns']}"]
        return "\n".join(lines)

    def observation_view(self, observation: dict[str, JSON], player: int) -> dict[str, JSON]:
        if self.short_name == "chess" and isinstance(observation.get("observation"), str):
            return {
                "kind": "chess",
                "fen": observation["observation"],
                "you": CHESS_COLOURS.get(player, "").strip(" ()"),
            }
        if self.short_name == "leduc_poker":
            seen = _leduc_seen(observation, player)
            if seen is not None:
                return seen
        return super().observation_view(observation, player)

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        fen = observation.get("observation")
        if self.short_name != "chess" or not isinstance(fen, str):
            return super().choice_parts(observation, player, actions)
        try:
            board = self.game.new_initial_state(fen).board()
            moves = [pyspiel.chess.action_to_move(action["id"], board) for action in actions]
        except (RuntimeError, KeyError, TypeError):  # pyspiel.SpielError is a RuntimeError
            return super().choice_parts(observation, player, actions)
        parts: list[dict[str, JSON]] = []
        for move in moves:
            lan = move.to_lan()
            parts.append({"from": lan[:2], "to": lan[2:4], "promotion": lan[4:] or None})
        return parts

    # -- the whole state, for replays ---------------------------------------------

    def view(self) -> dict[str, JSON]:
        if self.short_name == "chess":
            return {
                "kind": "chess",
                "fen": str(self._state),
                "last": self.last_move,
                "status": self._status(),
            }
        if self.short_name == "leduc_poker":
            table = _leduc_table(str(self._state))
            if table is not None:
                return {**table, "status": self._status()}
        return super().view()

    def state(self) -> dict[str, JSON]:
        state = self._state
        return {
            "game": self.short_name,
            "text": str(state),
            "to_move": self.to_move(),
            "move_number": state.move_number(),
            "history": list(state.history()),
            "last_events": [list(event) for event in self.last_events],
            "terminal": state.is_terminal(),
            "returns": self.returns(),
        }

    def _status(self) -> str:
        if self._state.is_terminal():
            returns = ", ".join(f"{value:g}" for value in self.returns())
            leaders = self._leaders()
            if len(leaders) == 1:
                verdict = f"player {leaders[0] + 1} won"
            elif len(leaders) == self.num_players:
                verdict = "draw"
            else:
                verdict = f"players {_numbers(leaders)} share first place"
            return f"Over: {verdict} (returns {returns})"
        movers = self.to_move()
        if len(movers) > 1:
            return f"Players {_numbers(movers)} move"
        colour = CHESS_COLOURS.get(movers[0], "") if self.short_name == "chess" else ""
        return f"Player {movers[0] + 1}{colour} to move"

    def render_text(self) -> str:
        events = "; ".join(f"{who}: {what}" for who, what in self.last_events)
        text = str(self._state).rstrip()
        return f"{self._status()}\n{text}" + (f"\nLast: {events}" if events else "")

    def render_html(self) -> str:
        board = self._chess_board() if self.short_name == "chess" else ""
        if not board:
            board = f'<pre class="openspiel-state">{html.escape(str(self._state))}</pre>'
        events = "".join(
            f'<li class="openspiel-{"chance" if who == "chance" else "move"}">'
            f"{html.escape(who)}: {html.escape(what)}</li>"
            for who, what in self.last_events
        )
        return (
            f'<div class="openspiel openspiel-{html.escape(self.short_name)}">'
            f'<p class="openspiel-status">{html.escape(self._status())}</p>'
            f"{board}"
            + (f'<ul class="openspiel-events">{events}</ul>' if events else "")
            + "</div>"
        )

    def _chess_board(self) -> str:
        """The position of the state's FEN as an 8x8 table; "" if it does not read as one."""
        ranks = str(self._state).split(" ")[0].split("/")
        if len(ranks) != 8:
            return ""
        rows = []
        for rank_index, rank in enumerate(ranks):
            cells = []
            for symbol in rank:
                if symbol.isdigit():
                    cells += [""] * int(symbol)
                elif symbol in CHESS_PIECES:
                    cells.append(symbol)
                else:
                    return ""
            if len(cells) != 8:
                return ""
            row = [f'<th class="openspiel-rank">{8 - rank_index}</th>']
            for file_index, symbol in enumerate(cells):
                shade = "light" if (rank_index + file_index) % 2 == 0 else "dark"
                square = f"{'abcdefgh'[file_index]}{8 - rank_index}"
                label = square + (f" {_piece_name(symbol)}" if symbol else "")
                row.append(
                    f'<td class="openspiel-square openspiel-{shade}" title="{label}">'
                    f"{CHESS_PIECES.get(symbol, '')}</td>"
                )
            rows.append(f"<tr>{''.join(row)}</tr>")
        files = "".join(f"<th>{letter}</th>" for letter in "abcdefgh")
        return (
            '<table class="openspiel-board">'
            f"<tbody>{''.join(rows)}<tr><th></th>{files}</tr></tbody></table>"
            f'<p class="openspiel-fen">{html.escape(str(self._state))}</p>'
        )


def _numbers(seats: list[int]) -> str:
    """Seats as people number them: ``1 and 2``, ``1, 3 and 4``."""
    numbers = [str(seat + 1) for seat in seats]
    return ", ".join(numbers[:-1]) + " and " + numbers[-1] if len(numbers) > 1 else numbers[0]


def _piece_name(symbol: str) -> str:
    colour = "white" if symbol.isupper() else "black"
    name = {"k": "king", "q": "queen", "r": "rook", "b": "bishop", "n": "knight", "p": "pawn"}
    return f"{colour} {name[symbol.lower()]}"


def _leduc_card(number: str) -> str | None:
    """A card's name (``Q♥``) from OpenSpiel's number; None for none (a negative number)."""
    card = int(number)
    return LEDUC_CARDS[card] if 0 <= card < len(LEDUC_CARDS) else None


def _leduc_table(text: str) -> dict[str, JSON] | None:
    """The whole table of a leduc poker state (every hand: for replays), from its text;
    None if the text does not read as the two-player game's."""
    lines = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    try:
        public, *hands = lines["Cards (public player_0 player_1)"].split()
        return {
            "kind": "leduc",
            "hands": [_leduc_card(hand) for hand in hands],
            "public": _leduc_card(public),
            "pot": int(lines["Pot"]),
            "money": [int(chips) for chips in lines["Money (player_0 player_1)"].split()],
            "rounds": [lines.get(f"Round {number} sequence", "") for number in (1, 2)],
        }
    except (KeyError, ValueError, IndexError):
        return None


def _leduc_seen(observation: dict[str, JSON], player: int) -> dict[str, JSON] | None:
    """What ``player`` sees of a leduc poker table, from its information state alone: its
    own card, the public card once dealt, the pot, the chips and the betting so far."""
    fields = dict(BRACKET_FIELD.findall(str(observation.get("information_state", ""))))
    try:
        money = [int(chips) for chips in fields["Money"].split()]
        hands: list[str | None] = [None] * len(money)
        hands[player] = _leduc_card(fields["Private"])
        rounds = [
            ", ".join(LEDUC_ACTIONS[int(action)] for action in fields.get(name, "").split())
            for name in ("Round1", "Round2")
        ]
        return {
            "kind": "leduc",
            "you": player,
            "hands": hands,
            "public": _leduc_card(fields["Public"]) if "Public" in fields else None,
            "pot": int(fields["Pot"]),
            "money": money,
            "rounds": rounds,
        }
    except (KeyError, ValueError, IndexError):
        return None
