// Drawers of OpenSpiel games (web/static/web/boards.js). Chess: the position of a FEN, the
// last move marked; to play, click a piece (its legal targets light up), then a target,
// and choose the piece a pawn promotes to. Leduc poker: the cards, pot and chips as words;
// its moves (Fold, Call, Raise) are offered as labelled buttons. Other OpenSpiel games
// are drawn from their own HTML by the default drawer.
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var el = boards.element;
  var FILES = "abcdefgh";
  var GLYPHS = {
    K: "♔", Q: "♕", R: "♖", B: "♗", N: "♘", P: "♙",
    k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟",
  };
  var NAMES = { k: "king", q: "queen", r: "rook", b: "bishop", n: "knight", p: "pawn" };
  var PROMOTIONS = [["q", "Queen"], ["r", "Rook"], ["b", "Bishop"], ["n", "Knight"]];

  // The pieces of a FEN's first field, by square name ("e4": "P").
  function position(fen) {
    var pieces = {};
    (fen || "").split(" ")[0].split("/").forEach(function (rank, index) {
      var file = 0;
      for (var i = 0; i < rank.length; i += 1) {
        var symbol = rank.charAt(i);
        if (symbol >= "1" && symbol <= "8") {
          file += Number(symbol);
        } else {
          pieces[FILES.charAt(file) + (8 - index)] = symbol;
          file += 1;
        }
      }
    });
    return pieces;
  }

  function pieceName(symbol) {
    return (symbol === symbol.toUpperCase() ? "white " : "black ") + NAMES[symbol.toLowerCase()];
  }

  function drawChess(box, view, options, selected) {
    box.textContent = "";
    var pieces = position(view.fen);
    var flipped = view.you === "Black";
    var choices = options.choices;
    var from = {};
    var targets = {};
    choices.forEach(function (choice) {
      from[choice.parts.from] = true;
      if (choice.parts.from === selected) {
        targets[choice.parts.to] = true;
      }
    });
    var last = view.last ? [view.last.slice(0, 2), view.last.slice(2, 4)] : [];

    function redraw(square) {
      return function () {
        drawChess(box, view, options, square === selected ? null : square);
      };
    }

    function moveTo(square) {
      return function () {
        var moves = choices.filter(function (choice) {
          return choice.parts.from === selected && choice.parts.to === square;
        });
        if (moves.length === 1) {
          options.choose(moves[0]);
        } else {
          askPromotion(frame, moves, options);
        }
      };
    }

    var frame = el("div", "openspiel openspiel-chess chess");
    if (view.status) {
      frame.appendChild(el("p", "openspiel-status", view.status));
    }
    var table = el("table", "openspiel-board chess-board");
    var body = el("tbody");
    for (var row = 0; row < 8; row += 1) {
      var rank = flipped ? row + 1 : 8 - row;
      var line = el("tr");
      line.appendChild(el("th", "openspiel-rank", rank));
      for (var column = 0; column < 8; column += 1) {
        var file = flipped ? 7 - column : column;
        var square = FILES.charAt(file) + rank;
        var symbol = pieces[square];
        var shade = (rank + file) % 2 === 1 ? "dark" : "light";
        var td = el("td", "openspiel-square openspiel-" + shade);
        var label = square + (symbol ? " " + pieceName(symbol) : "");
        td.title = label;
        td.setAttribute("data-square", square);
        if (last.indexOf(square) >= 0) {
          td.classList.add("chess-last");
        }
        var glyph = symbol ? GLYPHS[symbol] || "" : "";
        if (targets[square]) {
          td.classList.add("chess-target");
          var target = boards.moveButton(glyph, "chess-square-button", null, options, moveTo(square));
          target.setAttribute("aria-label", "Move to " + label);
          td.appendChild(target);
        } else if (from[square]) {
          if (square === selected) {
            td.classList.add("chess-selected");
          }
          var piece = boards.moveButton(glyph, "chess-square-button", null, options, redraw(square));
          piece.setAttribute("aria-label", (square === selected ? "Selected: " : "Move ") + label);
          piece.setAttribute("aria-pressed", square === selected ? "true" : "false");
          td.appendChild(piece);
        } else {
          td.textContent = glyph;
        }
        line.appendChild(td);
      }
      body.appendChild(line);
    }
    var files = el("tr");
    files.appendChild(el("th"));
    for (column = 0; column < 8; column += 1) {
      files.appendChild(el("th", "openspiel-file", FILES.charAt(flipped ? 7 - column : column)));
    }
    body.appendChild(files);
    table.appendChild(body);
    frame.appendChild(table);
    if (options.playing) {
      frame.appendChild(
        el(
          "p",
          "chess-hint small",
          selected
            ? "Click a highlighted square to move there, or another piece."
            : "Click the piece you want to move."
        )
      );
    }
    frame.appendChild(el("p", "openspiel-fen", view.fen));
    box.appendChild(frame);
  }

  // A pawn reaching the last rank: which piece it becomes.
  function askPromotion(frame, moves, options) {
    var old = frame.querySelector("[data-chess-promotion]");
    if (old) {
      old.parentNode.removeChild(old);
    }
    var chooser = el("div", "chess-promotion");
    chooser.setAttribute("role", "group");
    chooser.setAttribute("aria-label", "Promote to");
    chooser.setAttribute("data-chess-promotion", "");
    chooser.appendChild(el("span", "chess-promotion-title", "Promote the pawn to: "));
    PROMOTIONS.forEach(function (promotion) {
      var move = moves.filter(function (choice) {
        return choice.parts.promotion === promotion[0];
      })[0];
      if (move) {
        chooser.appendChild(boards.moveButton(promotion[1], "button button-small", move, options));
      }
    });
    frame.insertBefore(chooser, frame.querySelector(".chess-board").nextSibling);
  }

  boards.register("chess", function (box, view, options) {
    var onBoard = options.choices.every(function (choice) {
      return choice.parts && choice.parts.from && choice.parts.to;
    });
    drawChess(box, view, onBoard ? options : { choices: [], choose: options.choose }, null);
    return onBoard;
  });

  function card(name, hidden) {
    var node = el("span", "leduc-card" + (hidden ? " leduc-card-hidden" : ""), name);
    if (name && name.indexOf("♥") >= 0) {
      node.classList.add("leduc-red");
    }
    return node;
  }

  boards.register("leduc", function (box, view) {
    var frame = el("div", "openspiel leduc");
    if (view.status) {
      frame.appendChild(el("p", "openspiel-status", view.status));
    }
    var table = el("dl", "leduc-table");
    function row(term, value) {
      table.appendChild(el("dt", "", term));
      var dd = el("dd");
      if (typeof value === "string") {
        dd.textContent = value;
      } else {
        dd.appendChild(value);
      }
      table.appendChild(dd);
    }
    var mine = typeof view.you === "number";
    view.hands.forEach(function (hand, player) {
      var who = mine ? (player === view.you ? "Your card" : "Opponent's card") : "Player " + (player + 1) + "'s card";
      row(who, hand ? card(hand) : card("?", true));
    });
    row("Public card", view.public ? card(view.public) : "not dealt yet");
    row("Pot", view.pot + " chips");
    row(
      "Chips left",
      view.money
        .map(function (chips, player) {
          var who = mine ? (player === view.you ? "you" : "opponent") : "player " + (player + 1);
          return who + " " + chips;
        })
        .join(", ")
    );
    view.rounds.forEach(function (bets, index) {
      row("Round " + (index + 1) + " betting", bets || "none yet");
    });
    frame.appendChild(table);
    box.appendChild(frame);
    return false;
  });
})();
