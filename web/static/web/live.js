// The live view of a running duel: one script for every game.
//
// The gateway streams server-sent events (edge/live.py): each "frame" carries the board
// as the game pictures it (Environment.view, drawn by boards.js as in replays), the last
// moves and the results so far; "end" says the duel is over and where its replays are. The browser's
// EventSource reconnects by itself and resumes after the last frame it got.
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
  // The page's badge and sentence (duel.html): what the duel's page says of it now.
  var badge = document.querySelector("[data-duel-badge]");
  var outcome = document.querySelector("[data-duel-outcome]");
  var source = new EventSource(root.getAttribute("data-live-url"));
  var frames = 0;
  var playing = false;

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
    moves.textContent = frame.moves.length ? "Last move: " + frame.moves.join("; ") : "";
    showResults(frame.results);
  });

  source.addEventListener("end", function (event) {
    var end = JSON.parse(event.data);
    source.close();
    status.textContent = "The duel is over: " + end.result;
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
