"""Connect Four written as a kaggle-environments agent, with no import of arena_sdk.

Wins when it can, blocks when it must, avoids playing under an opponent's winning
cell, and otherwise plays the column closest to the center. It is deterministic.
"""


def drop_row(board, column, rows, columns):
    """Row where a piece dropped in ``column`` lands (row 0 is the top), or None if full."""
    for row in range(rows - 1, -1, -1):
        if board[row * columns + column] == 0:
            return row
    return None


def count_direction(board, row, column, row_step, column_step, mark, rows, columns):
    count = 0
    row, column = row + row_step, column + column_step
    while 0 <= row < rows and 0 <= column < columns and board[row * columns + column] == mark:
        count += 1
        row, column = row + row_step, column + column_step
    return count


def wins_at(board, row, column, mark, configuration):
    """Whether a piece of ``mark`` at (row, column) completes a line."""
    rows, columns = configuration.rows, configuration.columns
    for row_step, column_step in ((0, 1), (1, 0), (1, 1), (1, -1)):
        line = 1 + count_direction(board, row, column, row_step, column_step, mark, rows, columns)
        line += count_direction(board, row, column, -row_step, -column_step, mark, rows, columns)
        if line >= configuration.inarow:
            return True
    return False


def winning_columns(board, mark, configuration):
    found = []
    for column in range(configuration.columns):
        row = drop_row(board, column, configuration.rows, configuration.columns)
        if row is not None and wins_at(board, row, column, mark, configuration):
            found.append(column)
    return found


def agent(observation, configuration):
    board = observation.board
    mark = observation.mark
    opponent = 3 - mark
    columns = configuration.columns
    rows = configuration.rows

    for wanted in (
        winning_columns(board, mark, configuration),
        winning_columns(board, opponent, configuration),
    ):
        if wanted:
            return wanted[0]

    open_columns = [c for c in range(columns) if board[c] == 0]
    safe = []
    for column in open_columns:
        row = drop_row(board, column, rows, columns)
        # The cell above ours becomes playable: do not hand the opponent a win there.
        if row > 0 and wins_at(board, row - 1, column, opponent, configuration):
            continue
        safe.append(column)
    candidates = safe or open_columns
    center = (columns - 1) / 2
    return min(candidates, key=lambda column: abs(column - center))
