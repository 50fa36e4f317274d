// The live view of a running duel: one script for every game.
//
// The gateway streams server-sent events (edge/live.py): each "frame" carries the board
// as the game pictures it (Environment.view, drawn by boards.js as in replays), the last
// moves, the results so far and each seat's player, side, turn and time bank; "end" says
// the duel is over and where its replays are. The browser's EventSource reconnects by
// itself and resumes after the last frame it got.
//
// The clock of the seat to move is counted down here from the moment its frame arrives:
// first the move's limit, then the bank. The referee's own count, told with each move,
// replaces it at the next frame, so the page is never off by more than a frame's delay.
(function () {
  "use strict";

  var root = document.getElementById("live");
  if (!root || !window.EventSource || !window.ArenaBoards) {
    return;
  }
  var board = root.querySelector("[data-live-board]");
  var status = root.querySelector("[data-live-status]");
  var moves = root.querySelector("[data-live-moves]");
  var results = root.querySelector("[data-live-results]");
  var ending = root.querySelector("[data-live-end]");
  var seatList = root.querySelector("[data-live-seats]");
  // The page's badge and sentence (duel.html): what the duel's page says of it now.
  var badge = document.querySelector("[data-duel-badge]");
  var outcome = document.querySelector("[data-duel-outcome]");
  var source = new EventSource(root.getAttribute("data-live-url"));
  var frames = 0;
  var playing = false;
  // The clocks that tick: {element, bank, moveTime, since} for each seat to move.
  var ticking = [];
  var ticker = null;
  var lastSeats = [];
  var lastMoveTime = null;

  function seconds(value) {
    var left = Math.max(0, value);
    if (left >= 60) {
      var minutes = Math.floor(left / 60);
      var rest = Math.floor(left - minutes * 60);
      return minutes + ":" + (rest < 10 ? "0" : "") + rest;
    }
    return left.toFixed(1) + " s";
  }

  function clockText(moveLeft, bankLeft) {
    return "move " + seconds(moveLeft) + " · bank " + seconds(bankLeft);
  }

  function tick() {
    var now = window.performance.now();
    ticking.forEach(function (clock) {
      var spent = (now - clock.since) / 1000;
      var moveLeft = clock.moveTime - spent;
      var bankLeft = clock.bank - Math.max(0, spent - clock.moveTime);
      clock.element.textContent = clockText(moveLeft, bankLeft);
    });
  }

  function stopClocks() {
    ticking = [];
    if (ticker !== null) {
      window.clearInterval(ticker);
      ticker = null;
    }
  }

  // Each seat: its number, its player's name, its side, its clock and whether it is to
  // move. Names come from the players' revisions: set as text, never as HTML.
  function showSeats(seats, moveTime) {
    stopClocks();
    seatList.textContent = "";
    var since = window.performance.now();
    seats.forEach(function (seat, index) {
      var item = document.createElement("li");
      item.className = "live-seat" + (seat.to_move ? " is-to-move" : "");
      item.setAttribute("data-live-seat", String(index + 1));
      var number = document.createElement("span");
      number.className = "seat-number";
      number.textContent = "Seat " + (index + 1);
      var name = document.createElement("strong");
      name.className = "live-seat-name";
      name.textContent = seat.name;
      item.appendChild(number);
      item.appendChild(name);
      if (seat.side) {
        var side = document.createElement("span");
        side.className = "live-seat-side";
        side.setAttribute("data-live-side", "");
        side.textContent = seat.side;
        item.appendChild(document.createTextNode(" "));
        item.appendChild(side);
      }
      if (seat.to_move) {
        var turn = document.createElement("span");
        turn.className = "badge badge-pending";
        turn.setAttribute("data-live-turn", "");
        turn.textContent = "to move";
        item.appendChild(document.createTextNode(" "));
        item.appendChild(turn);
      }
      if (moveTime !== null && seat.bank !== null) {
        var clock = document.createElement("span");
        clock.className = "live-clock";
        clock.setAttribute("data-live-clock", "");
        clock.title =
          "Each move may take " + seconds(moveTime) + "; time beyond it comes out of a bank " +
          "that lasts the match.";
        clock.textContent = clockText(moveTime, seat.bank);
        item.appendChild(clock);
        if (seat.to_move) {
          ticking.push({ element: clock, bank: seat.bank, moveTime: moveTime, since: since });
        }
      }
      seatList.appendChild(item);
    });
    seatList.hidden = seats.length === 0;
    if (ticking.length) {
      ticker = window.setInterval(tick, 100);
    }
  }

  function showOutcome(label, style, text) {
    if (!badge) {
      return;
    }
    badge.textContent = label;
    badge.className = "badge badge-" + style;
    if (outcome) {
      outcome.textContent = text;
    }
  }

  function showResults(list) {
    results.textContent = "";
    list.forEach(function (row) {
      var item = document.createElement("li");
      item.textContent = "Match " + row.match + ": " + row.result;
      results.appendChild(item);
    });
  }

  source.addEventListener("frame", function (event) {
    var frame = JSON.parse(event.data);
    frames += 1;
    if (frame.match !== null && !playing) {
      playing = true;
      showOutcome("Running", "pending", ""); // a page opened while it was queued
    }
    root.setAttribute("data-live-frames", String(frames));
    root.setAttribute("data-live-step", frame.match === null ? "" : frame.match + ":" + frame.step);
    if (frame.view) {
      window.ArenaBoards.draw(board, frame.view);
    } else {
      board.textContent = "";
    }
    status.textContent = frame.error ? frame.status + " " + frame.error : frame.status;
    lastSeats = frame.seats || [];
    lastMoveTime = frame.move_time === undefined ? null : frame.move_time;
    showSeats(lastSeats, lastMoveTime);
    moves.textContent = frame.moves.length ? "Last move: " + frame.moves.join("; ") : "";
    showResults(frame.results);
  });

  source.addEventListener("end", function (event) {
    var end = JSON.parse(event.data);
    source.close();
    status.textContent = "The duel is over: " + end.result;
    showSeats(
      lastSeats.map(function (seat) {
        return { name: seat.name, side: seat.side, bank: seat.bank, to_move: false };
      }),
      lastMoveTime
    );
    if (end.outcome) {
      showOutcome(end.outcome.label, end.outcome.style, end.outcome.text);
    } else if (badge) {
      badge.hidden = true; // deleted: no badge is true any more
    }
    showResults(end.results);
    if (end.view) {
      window.ArenaBoards.draw(board, end.view);
    }
    moves.textContent = "";
    ending.textContent = "";
    end.replays.forEach(function (replay, index) {
      var link = document.createElement("a");
      link.href = replay.url;
      link.className = "button button-small";
      link.textContent = "Replay of match " + replay.match;
      if (index) {
        ending.appendChild(document.createTextNode(" "));
      }
      ending.appendChild(link);
    });
    if (end.duel) {
      var reload = document.createElement("a");
      reload.href = end.duel;
      reload.textContent = "Show the duel's results";
      ending.appendChild(document.createTextNode(" "));
      ending.appendChild(reload);
    }
    ending.hidden = false;
    root.setAttribute("data-live-ended", "true");
  });

  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      status.textContent = "The live view is not available now: reload the page to try again.";
    } else {
      status.textContent = "Connection lost: reconnecting…";
    }
  });
})();
