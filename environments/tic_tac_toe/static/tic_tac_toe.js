// Tic-tac-toe's drawer (web/static/web/boards.js): the board of Environment.view, or of a
// player's observation_view; to play, each empty cell offered is a button.
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var SYMBOLS = ["", "X", "O"];

  boards.register("tic_tac_toe", function (box, view, options) {
    var el = boards.element;
    var byCell = {};
    options.choices.forEach(function (choice) {
      byCell[choice.parts.cell] = choice;
    });
    var win = view.win || [];
    var table = el("table", "tic-tac-toe-board");
    table.appendChild(el("caption", "tic-tac-toe-status", view.status || ""));
    for (var row = 0; row < view.rows; row += 1) {
      var line = el("tr");
      for (var column = 0; column < view.columns; column += 1) {
        var cell = row * view.columns + column;
        var mark = Number(view.board.charAt(cell));
        var td = el("td", "tic-tac-toe-cell");
        var label = "row " + (row + 1) + ", column " + (column + 1) + ": ";
        label += mark ? SYMBOLS[mark] + " (player " + mark + ")" : "empty";
        if (mark) {
          td.classList.add("tic-tac-toe-player-" + mark);
          td.textContent = SYMBOLS[mark];
        }
        if (cell === view.last) {
          td.classList.add("tic-tac-toe-last");
          label += ", last move";
        }
        if (win.indexOf(cell) >= 0) {
          td.classList.add("tic-tac-toe-win");
          label += ", winning line";
        }
        td.setAttribute("aria-label", label);
        if (byCell[cell]) {
          var button = boards.moveButton("", "board-cell-button", byCell[cell], options);
          button.setAttribute("aria-label", "Play row " + (row + 1) + ", column " + (column + 1));
          button.setAttribute("data-cell", String(cell));
          td.appendChild(button);
        }
        line.appendChild(td);
      }
      table.appendChild(line);
    }
    var frame = el("div", "tic-tac-toe");
    frame.appendChild(table);
    box.appendChild(frame);
    return true;
  });
})();
