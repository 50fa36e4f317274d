"""The stronger example players do what their descriptions promise."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from arena_sdk import Agent, Match, Result, Turn

from environments.base import Environment
from environments.registry import make_environment

LIMITS = {"move_time": 1.0, "time_bank": 10.0, "startup_time": 5.0}


def make_match(environment: Environment, player: int, seed: int) -> Match:
    return Match(
        environment=environment.name,
        configuration=environment.configuration,
        index=0,
        player=player,
        seed=seed,
        first_player=0,
        limits=LIMITS,
    )


def make_turn(environment: Environment, match: Match) -> Turn:
    return Turn(
        match=match,
        step=environment.step_count,
        observation=environment.observation(match.player),
        legal_actions=environment.legal_actions(match.player),
        move_time_left=LIMITS["move_time"],
        time_bank_left=LIMITS["time_bank"],
    )


def play_match(
    environment_name: str,
    agents: list[Agent],
    seed: int,
    move_times: dict[int, list[float]] | None = None,
) -> list[float]:
    """One match between agents called directly; ``agents[i]`` sits in seat ``i``.

    ``move_times`` collects the CPU time each agent took for each move, keyed by ``id``.
    """
    environment = make_environment(environment_name)
    environment.reset(seed)
    matches = [make_match(environment, player, seed) for player in range(len(agents))]
    for agent, match in zip(agents, matches, strict=True):
        agent.start(match)
    while not environment.is_terminal():
        actions = {}
        for player in environment.to_move():
            turn = make_turn(environment, matches[player])
            started = time.thread_time()
            action = agents[player].act(turn)
            if move_times is not None:
                elapsed = time.thread_time() - started
                move_times.setdefault(id(agents[player]), []).append(elapsed)
            assert action in turn.legal_actions
            actions[player] = action
        environment.step(actions)
    scores = environment.scores()
    for player, (agent, match) in enumerate(zip(agents, matches, strict=True)):
        outcome = "win" if scores[player] == 1 else "loss" if scores[player] == 0 else "draw"
        agent.end(
            Result(
                match=match,
                outcome=outcome,
                scores=scores,
                reason="",
                observation=environment.observation(player),
            )
        )
    return scores


def score_of_first(
    environment_name: str,
    first: Agent,
    second: Agent,
    matches: int,
    move_times: dict[int, list[float]] | None = None,
) -> list[float]:
    """Points of ``first`` in each match, the seats swapping every match."""
    points = []
    for match in range(matches):
        if match % 2 == 0:
            points.append(play_match(environment_name, [first, second], match, move_times)[0])
        else:
            points.append(play_match(environment_name, [second, first], match, move_times)[1])
    return points


def connect_four_turn(rows_top_first: list[str], mark: int) -> Turn:
    """A Connect Four turn from a picture of the board: '.', 'X' (mark 1), 'O' (mark 2)."""
    environment = make_environment("connect_four")
    symbols = {".": 0, "X": 1, "O": 2}
    board = [symbols[symbol] for row in rows_top_first for symbol in row]
    columns = environment.configuration["columns"]
    legal = [column for column in range(columns) if board[column] == 0]
    match = make_match(environment, mark - 1, seed=0)
    return Turn(
        match=match,
        step=sum(1 for square in board if square),
        observation={"board": board, "mark": mark},
        legal_actions=legal,
        move_time_left=1.0,
        time_bank_left=10.0,
    )


def play_turn(agent: Agent, turn: Turn) -> Any:
    agent.start(turn.match)
    return agent.act(turn)


# -- Connect Four ---------------------------------------------------------------


def test_connect_four_minimax_beats_random_in_nine_of_ten(
    load_player: Callable[[str], Agent],
) -> None:
    minimax = load_player("connect_four/minimax.py")
    random_player = load_player("connect_four/random_player.py")
    move_times: dict[int, list[float]] = {}
    points = score_of_first("connect_four", minimax, random_player, 10, move_times)
    assert points.count(1.0) >= 9, points
    # The thread's CPU time, which a loaded machine does not stretch: the target is ~100 ms
    # a move.
    minimax_times = move_times[id(minimax)]
    assert sum(minimax_times) / len(minimax_times) < 0.1
    assert max(minimax_times) < 0.5


def test_connect_four_minimax_reads_its_depth_from_the_environment(
    load_player: Callable[[str], Agent], monkeypatch
) -> None:
    # ``depth`` is the minimax agent's own attribute, not the SDK's Agent's.
    assert load_player("connect_four/minimax.py").depth == 4  # type: ignore[attr-defined]
    monkeypatch.setenv("ARENA_MINIMAX_DEPTH", "2")
    assert load_player("connect_four/minimax.py").depth == 2  # type: ignore[attr-defined]


CONNECT_FOUR_X_CAN_WIN = [
    ".......",
    ".......",
    ".......",
    ".......",
    "OO.....",
    "XXX.O..",
]
CONNECT_FOUR_X_MUST_BLOCK = [
    ".......",
    ".......",
    ".......",
    "...O...",
    "X..O...",
    "X.XO...",
]


def test_connect_four_players_win_when_they_can(load_player: Callable[[str], Agent]) -> None:
    for relative_path in ("connect_four/minimax.py", "connect_four/kaggle_style.py"):
        agent = load_player(relative_path)
        assert play_turn(agent, connect_four_turn(CONNECT_FOUR_X_CAN_WIN, mark=1)) == 3


def test_connect_four_players_block_when_they_must(load_player: Callable[[str], Agent]) -> None:
    for relative_path in ("connect_four/minimax.py", "connect_four/kaggle_style.py"):
        agent = load_player(relative_path)
        assert play_turn(agent, connect_four_turn(CONNECT_FOUR_X_MUST_BLOCK, mark=1)) == 3


def test_connect_four_players_do_not_play_under_a_winning_cell(
    load_player: Callable[[str], Agent],
) -> None:
    # O completes the second row from the bottom in column 2 or 6 as soon as a disc
    # lies beneath, so X must not play either column.
    board = [
        ".......",
        ".......",
        ".......",
        "...X...",
        "...OOO.",
        "X..XXO.",
    ]
    for relative_path in ("connect_four/minimax.py", "connect_four/kaggle_style.py"):
        agent = load_player(relative_path)
        assert play_turn(agent, connect_four_turn(board, mark=1)) not in (2, 6)


# -- Tic-tac-toe ----------------------------------------------------------------


def test_tic_tac_toe_minimax_never_loses_to_random(load_player: Callable[[str], Agent]) -> None:
    minimax = load_player("tic_tac_toe/minimax.py")
    random_player = load_player("tic_tac_toe/random_player.py")
    points = score_of_first("tic_tac_toe", minimax, random_player, 10)
    assert 0.0 not in points
    assert points.count(1.0) >= 6, points


def test_tic_tac_toe_minimax_draws_against_itself(load_player: Callable[[str], Agent]) -> None:
    points = score_of_first(
        "tic_tac_toe",
        load_player("tic_tac_toe/minimax.py"),
        load_player("tic_tac_toe/minimax.py"),
        4,
    )
    assert points == [0.5] * 4


def tic_tac_toe_turn(board: str, mark: int) -> Turn:
    environment = make_environment("tic_tac_toe")
    squares = [{".": 0, "X": 1, "O": 2}[symbol] for symbol in board]
    return Turn(
        match=make_match(environment, mark - 1, seed=0),
        step=9 - squares.count(0),
        observation={"board": squares, "mark": mark},
        legal_actions=[square for square, occupant in enumerate(squares) if occupant == 0],
        move_time_left=1.0,
        time_bank_left=10.0,
    )


def test_tic_tac_toe_player_class_wins_then_blocks_then_takes_the_center(
    load_player: Callable[[str], Agent],
) -> None:
    agent = load_player("tic_tac_toe/player_class.py")
    # X can win on square 2 while O threatens square 5: winning comes first.
    assert play_turn(agent, tic_tac_toe_turn("XX.OO....", mark=1)) == 2
    assert play_turn(agent, tic_tac_toe_turn("X...X.O..", mark=2)) == 8
    assert play_turn(agent, tic_tac_toe_turn("X........", mark=2)) == 4
    assert play_turn(agent, tic_tac_toe_turn("....X....", mark=2)) in (0, 2, 6, 8)


# -- Quarto ---------------------------------------------------------------------


def quarto_turn(board: list[int | None], piece: int | None, legal_actions: list) -> Turn:
    environment = make_environment("quarto")
    on_board = {square_piece for square_piece in board if square_piece is not None}
    available = [p for p in range(16) if p not in on_board and p != piece]
    return Turn(
        match=make_match(environment, 0, seed=3),
        step=len(on_board),
        observation={"board": board, "piece": piece, "available": available, "mark": 1},
        legal_actions=legal_actions,
        move_time_left=1.0,
        time_bank_left=10.0,
    )


def quarto_legal_actions(board: list[int | None], piece: int) -> list[dict]:
    on_board = {square_piece for square_piece in board if square_piece is not None}
    available = [p for p in range(16) if p not in on_board and p != piece]
    return [
        {"square": square, "piece": give}
        for square, occupant in enumerate(board)
        if occupant is None
        for give in available
    ]


def test_quarto_heuristic_completes_a_line_when_it_can(
    load_player: Callable[[str], Agent],
) -> None:
    # Pieces 1, 3 and 5 share bit 0 (and 7 has it too): square 3 completes the top row.
    board: list[int | None] = [1, 3, 5, None] + [None] * 12
    action = play_turn(
        load_player("quarto/heuristic.py"),
        quarto_turn(board, 7, quarto_legal_actions(board, 7)),
    )
    assert action["square"] == 3


def test_quarto_heuristic_never_hands_over_a_winning_piece(
    load_player: Callable[[str], Agent],
) -> None:
    # Top row 0, 2, 4 share "bit 0 clear"; any even piece completes it at square 3.
    # Piece 15 has no line to complete wherever it is placed, so odd pieces are safe.
    board: list[int | None] = [0, 2, 4, None] + [None] * 12
    agent = load_player("quarto/heuristic.py")
    for seed in range(20):
        turn = quarto_turn(board, 15, quarto_legal_actions(board, 15))
        turn.match.random.seed(seed)
        action = agent.act(turn)
        if action["square"] != 3:
            assert action["piece"] % 2 == 1, action


def test_quarto_heuristic_beats_random_more_often_than_not(
    load_player: Callable[[str], Agent],
) -> None:
    points = score_of_first(
        "quarto",
        load_player("quarto/heuristic.py"),
        load_player("quarto/random_player.py"),
        10,
    )
    assert points.count(1.0) >= 7, points


# -- Rock-paper-scissors and sum to 10 ------------------------------------------


def test_rps_frequency_player_beats_a_one_track_opponent(
    load_player: Callable[[str], Agent], duel_in_process: Callable
) -> None:
    transcript = duel_in_process(
        load_player("rock_paper_scissors/frequency.py"),
        "rock_paper_scissors",
        matches=6,
        opponent=lambda observation, legal, rng: "rock",
    )
    assert transcript.outcomes == ["win"] * 6
    # After the first round of the first match it has seen enough.
    assert all(action == "paper" for _legal, action in transcript.moves[1:])


def test_sum_to_10_optimal_always_wins_when_it_moves_first(
    load_player: Callable[[str], Agent], duel_in_process: Callable
) -> None:
    transcript = duel_in_process(load_player("sum_to_10/optimal.py"), "sum_to_10", matches=10)
    # The duel script seats the player first in even-numbered matches.
    assert transcript.outcomes[0::2] == ["win"] * 5
