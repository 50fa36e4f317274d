// Frozen Lake's drawer (web/static/web/boards.js): the map as a grid with the agent on
// its cell, from Environment.view ({map: rows of S start, F frozen, H hole, G goal;
// cell: the agent's, row * width + column; move: the direction last chosen, 0 left,
// 1 down, 2 right, 3 up, where the slippery ice may not have taken it}).
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var TILES = { S: "start", F: "frozen", H: "hole", G: "goal" };
  var MOVES = ["left", "down", "right", "up"];
  var MARKS = { hole: "○", goal: "★" };

  boards.register("frozen_lake", function (box, view) {
    var el = boards.element;
    var rows = view.map || [];
    var width = rows.length ? rows[0].length : 0;
    var table = el("table", "frozen-lake-board");
    var under = "";
    rows.forEach(function (row, r) {
      var line = el("tr");
      for (var c = 0; c < row.length; c += 1) {
        var tile = TILES[row.charAt(c)] || "frozen";
        var td = el("td", "frozen-lake-cell frozen-lake-" + tile, MARKS[tile] || "");
        var label = "row " + (r + 1) + ", column " + (c + 1) + ": " + tile;
        if (r * width + c === view.cell) {
          td.classList.add("frozen-lake-agent");
          td.textContent = "●";
          label += ", the agent";
          under = tile;
        }
        td.setAttribute("aria-label", label);
        line.appendChild(td);
      }
      table.appendChild(line);
    });
    var said = "move" in view ? "Chose " + (MOVES[view.move] || "move " + view.move) : "Start";
    if (under === "hole") {
      said += " · fell into a hole";
    } else if (under === "goal") {
      said += " · reached the goal";
    }
    table.appendChild(el("caption", "frozen-lake-status", said));
    var frame = el("div", "frozen-lake");
    frame.appendChild(table);
    box.appendChild(frame);
    return false;
  });
})();
