// A person's seat in the browser: the seat's events (edge/human.py) as server-sent
// events, and one POST per reply, with the session cookie and the page's CSRF token.
// Each request to move carries the person's own board ("view", drawn from their
// observation alone) and the legal moves with what they mean on it ("choices"); the
// game's drawer (boards.js) makes those clickable. The end carries the final board.
(function () {
  "use strict";

  var root = document.getElementById("play");
  if (!root || !window.EventSource || !window.fetch || !window.ArenaBoards) {
    return;
  }
  var side = root.querySelector("[data-play-side]");
  var turn = root.querySelector("[data-play-turn]");
  var clock = root.querySelector("[data-play-clock]");
  var board = root.querySelector("[data-play-board]");
  var result = root.querySelector("[data-play-result]");
  var problem = root.querySelector("[data-play-error]");
  var replay = root.querySelector("[data-play-replay]");
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var replyUrl = root.getAttribute("data-reply-url");
  var opponent = root.getAttribute("data-opponent");
  var source = new EventSource(root.getAttribute("data-events-url"));
  var seat = 1;
  var timer = null;
  var answered = {};
  // The request the board answers now: the next one may arrive before the reply's
  // answer does (an agent answers at once).
  var current = null;

  function send(reply, quiet) {
    problem.hidden = true;
    return fetch(replyUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(reply),
    }).then(function (response) {
      if (response.status === 202) {
        return true;
      }
      return response.json().then(function (body) {
        if (quiet) {
          return false;
        }
        problem.textContent = body.error ? body.error.message : "The move was refused.";
        problem.hidden = false;
        return false;
      });
    });
  }

  function stopClock() {
    if (timer !== null) {
      window.clearInterval(timer);
      timer = null;
    }
  }

  function startClock(move, bank) {
    stopClock();
    var started = Date.now();
    function tick() {
      var spent = (Date.now() - started) / 1000;
      var moveLeft = Math.max(0, move - spent);
      var bankLeft = Math.max(0, bank - Math.max(0, spent - move));
      clock.textContent =
        "Your clock: " + moveLeft.toFixed(0) + " s for this move, then " +
        bankLeft.toFixed(0) + " s of time bank.";
    }
    tick();
    timer = window.setInterval(tick, 250);
  }

  function sayTurn(state, text) {
    root.setAttribute("data-play-state", state);
    turn.textContent = text;
  }

  function saySide(view) {
    var you = view && typeof view.you === "string" && view.you ? view.you : "";
    side.textContent = you ? "You play " + you + ", seat " + seat + "." : "You are seat " + seat + ".";
  }

  function offer(message) {
    current = message.id;
    root.setAttribute("data-play-request", String(message.id));
    saySide(message.view);
    sayTurn("your-turn", "Your turn.");
    function choose(choice) {
      if (answered[message.id]) {
        return;
      }
      answered[message.id] = true;
      send({ type: "action", id: message.id, action: choice.action }).then(function (ok) {
        if (ok && current === message.id) {
          stopClock();
          window.ArenaBoards.draw(board, message.view);
          sayTurn("waiting", "You played " + choice.text + ". " + opponent + " is thinking…");
        } else if (!ok) {
          answered[message.id] = false;
        }
      });
    }
    window.ArenaBoards.draw(board, message.view, { choices: message.choices, choose: choose });
    startClock(message.time_left.move, message.time_left.bank);
  }

  function finish(message) {
    current = null;
    stopClock();
    if (message.view) {
      window.ArenaBoards.draw(board, message.view);
    }
    var words = { win: "You won!", loss: "You lost.", draw: "A draw." };
    // The result takes the clock's place: nothing runs any more.
    clock.hidden = true;
    result.textContent = (words[message.result] || message.result) +
      (message.reason ? " " + message.reason : "");
    result.hidden = false;
    replay.hidden = false;
    sayTurn("over", "The match is over.");
  }

  source.onmessage = function (event) {
    var message = JSON.parse(event.data);
    if (message.type === "hello") {
      // Quietly: after a reload the stream starts again from the handshake, answered already.
      send({ type: "ready", name: "browser" }, true);
      turn.textContent = "The game begins.";
    } else if (message.type === "start") {
      seat = message.player + 1;
      saySide(null);
      if (root.getAttribute("data-first") === "opponent") {
        sayTurn("waiting", opponent + " moves first and is thinking…");
      } else {
        sayTurn("waiting", "The match begins.");
      }
    } else if (message.type === "act") {
      if (!answered[message.id]) {
        offer(message);
      }
    } else if (message.type === "end") {
      finish(message);
    } else if (message.type === "bye") {
      source.close();
      root.setAttribute("data-play-state", "done");
    }
  };

  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED && root.getAttribute("data-play-state") !== "done") {
      turn.textContent = "The connection to your game was refused: reload the page.";
    }
  };
})();
