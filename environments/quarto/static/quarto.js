// Quarto's drawer (web/static/web/boards.js): the board, the piece in hand and the pieces
// left, from Environment.view or a player's observation_view. To play: click an empty
// square for the piece in hand, then the piece your opponent places next (on the first
// move only the piece; on the last, only the square).
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var el = boards.element;
  var SIZE = 4;
  // For each bit of a piece's number, the attribute when the bit is set and when clear.
  var ATTRIBUTES = [["tall", "short"], ["dark", "light"], ["square", "round"], ["hollow", "solid"]];

  function attributes(piece) {
    return ATTRIBUTES.map(function (names, bit) {
      return (piece >> bit) & 1 ? names[0] : names[1];
    });
  }

  function describe(piece) {
    return "piece " + piece + " (" + attributes(piece).join(", ") + ")";
  }

  // A square as the move list names it (environments.base.square_name): its column's
  // letter from the left, then its row's number from the top; square 6 is c2.
  function squareName(square) {
    return "abcd".charAt(square % SIZE) + String(Math.floor(square / SIZE) + 1);
  }

  function pieceNode(piece) {
    var wrap = el("span", "quarto-piece-wrap");
    var shape = el("span", "quarto-piece");
    attributes(piece).forEach(function (name) {
      shape.classList.add("quarto-" + name);
    });
    shape.setAttribute("aria-hidden", "true");
    shape.appendChild(el("span", "quarto-number", piece));
    wrap.appendChild(shape);
    wrap.appendChild(el("span", "visually-hidden", describe(piece)));
    return wrap;
  }

  function draw(box, view, options, picked) {
    box.textContent = "";
    var choices = options.choices;
    var placing = choices.some(function (choice) {
      return choice.parts.square !== null;
    });
    var giving = choices.some(function (choice) {
      return choice.parts.piece !== null;
    });
    var square = placing ? picked.square : null;
    var open = choices.filter(function (choice) {
      return square === undefined || choice.parts.square === square;
    });

    function pick(choiceSquare) {
      var left = choices.filter(function (choice) {
        return choice.parts.square === choiceSquare;
      });
      if (!giving && left.length === 1) {
        options.choose(left[0]);
      } else {
        draw(box, view, options, { square: choiceSquare });
      }
    }

    var win = view.win || [];
    var table = el("table", "quarto-board");
    table.appendChild(el("caption", "quarto-status", view.status || ""));
    for (var row = 0; row < SIZE; row += 1) {
      var line = el("tr");
      for (var column = 0; column < SIZE; column += 1) {
        var cell = row * SIZE + column;
        var piece = view.board[cell];
        var td = el("td", "quarto-square-cell");
        var notes = [];
        if (cell === view.last) {
          td.classList.add("quarto-last");
          notes.push("last move");
        }
        if (win.indexOf(cell) >= 0) {
          td.classList.add("quarto-win");
          notes.push("winning line");
        }
        if (piece !== null && piece !== undefined) {
          td.appendChild(pieceNode(piece));
        } else if (cell === square) {
          td.classList.add("quarto-picked");
          td.appendChild(pieceNode(view.piece));
        } else if (placing && square === undefined && canPlace(choices, cell)) {
          var button = boards.moveButton(squareName(cell), "board-cell-button quarto-empty", null, options, pickLater(pick, cell));
          button.setAttribute("aria-label", "Place on " + squareName(cell));
          button.setAttribute("data-square", String(cell));
          td.appendChild(button);
        } else {
          td.appendChild(el("span", "quarto-empty", squareName(cell)));
        }
        if (notes.length) {
          td.appendChild(el("span", "visually-hidden", ", " + notes.join(", ")));
        }
        line.appendChild(td);
      }
      table.appendChild(line);
    }
    var frame = el("div", "quarto");
    frame.appendChild(table);

    if (options.playing) {
      var hint = el("p", "quarto-hint");
      if (placing && square === undefined) {
        hint.textContent = "Click an empty square for " + describe(view.piece) + ".";
      } else if (giving) {
        hint.textContent = "Now click the piece your opponent places next.";
      }
      hint.setAttribute("data-quarto-hint", "");
      frame.appendChild(hint);
    }
    var hand = el("p", "quarto-hand", "Piece to place: ");
    if (view.piece === null || view.piece === undefined) {
      hand.appendChild(document.createTextNode("none"));
    } else {
      hand.appendChild(pieceNode(view.piece));
    }
    frame.appendChild(hand);
    frame.appendChild(el("p", "quarto-available-title", "Available pieces:"));
    var list = el("ul", "quarto-available");
    var givable = giving && (!placing || square !== undefined);
    view.available.forEach(function (piece) {
      var item = el("li", "quarto-available-piece");
      var choice = givable
        ? open.filter(function (candidate) {
            return candidate.parts.piece === piece;
          })[0]
        : null;
      if (choice) {
        var button = boards.moveButton("", "quarto-give-button", choice, options);
        button.setAttribute("aria-label", "Give " + describe(piece));
        button.setAttribute("data-piece", String(piece));
        button.appendChild(pieceNode(piece));
        item.appendChild(button);
      } else {
        item.appendChild(pieceNode(piece));
      }
      list.appendChild(item);
    });
    frame.appendChild(list);
    frame.appendChild(
      el(
        "p",
        "quarto-legend",
        "Attributes: " +
          ATTRIBUTES.map(function (names) {
            return names.join(" / ");
          }).join(", ")
      )
    );
    box.appendChild(frame);
  }

  function canPlace(choices, cell) {
    return choices.some(function (choice) {
      return choice.parts.square === cell;
    });
  }

  function pickLater(pick, cell) {
    return function () {
      pick(cell);
    };
  }

  boards.register("quarto", function (box, view, options) {
    draw(box, view, options, {});
    return true;
  });
})();
