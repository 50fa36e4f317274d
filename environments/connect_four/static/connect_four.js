// Connect Four's drawer (web/static/web/boards.js): the board of Environment.view, or of a
// player's observation_view; to play, each column offered has a drop button above it.
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var COLOURS = ["", "red", "yellow"];

  // A click anywhere in a column drops there too, as on a real board.
  function dropOnClick(td, choice, options) {
    td.classList.add("board-clickable");
    td.addEventListener("click", function () {
      options.choose(choice);
    });
  }

  boards.register("connect_four", function (box, view, options) {
    var el = boards.element;
    var byColumn = {};
    options.choices.forEach(function (choice) {
      byColumn[choice.parts.column] = choice;
    });
    var win = view.win || [];
    var table = el("table", "connect-four-board");
    table.appendChild(el("caption", "connect-four-status", view.status || ""));
    var head = el("tr");
    for (var column = 0; column < view.columns; column += 1) {
      var th = el("th", "connect-four-column");
      th.setAttribute("scope", "col");
      if (byColumn[column]) {
        var button = boards.moveButton("▼", "board-drop-button", byColumn[column], options);
        button.setAttribute("aria-label", "Drop in column " + column);
        button.setAttribute("data-column", String(column));
        th.appendChild(button);
      } else {
        th.textContent = String(column);
      }
      head.appendChild(th);
    }
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody");
    for (var row = 0; row < view.rows; row += 1) {
      var line = el("tr");
      for (column = 0; column < view.columns; column += 1) {
        var cell = row * view.columns + column;
        var mark = Number(view.board.charAt(cell));
        var td = el("td", "connect-four-cell");
        var said = mark ? COLOURS[mark] : "empty";
        if (cell === view.last) {
          td.classList.add("connect-four-last");
          said += ", last move";
        }
        if (win.indexOf(cell) >= 0) {
          td.classList.add("connect-four-win");
          said += ", winning line";
        }
        var disc = el("span", "connect-four-disc" + (mark ? " connect-four-player-" + mark : ""));
        disc.setAttribute("aria-hidden", "true");
        td.appendChild(disc);
        td.appendChild(el("span", "visually-hidden", said));
        if (byColumn[column]) {
          dropOnClick(td, byColumn[column], options);
        }
        line.appendChild(td);
      }
      body.appendChild(line);
    }
    table.appendChild(body);
    var frame = el("div", "connect-four");
    frame.appendChild(table);
    box.appendChild(frame);
    return true;
  });
})();
