// A person's seat in the browser: the seat's events (edge/human.py) as server-sent
// events, and one POST per reply, with the session cookie and the page's CSRF token.
// Each request to move carries the person's own board ("view", drawn from their
// observation alone) and the legal moves with what they mean on it ("choices"); the
// game's drawer (boards.js) makes those clickable. The end carries the final board and
// the faults in words. Each game has a seat of its own: two tabs, two games, apart.
// A finished game's page is drawn by the server's final position, with no stream.
(function () {
  "use strict";

  var root = document.getElementById("play");
  if (!root || !window.fetch || !window.ArenaBoards) {
    return;
  }
  var side = root.querySelector("[data-play-side]");
  var turn = root.querySelector("[data-play-turn]");
  var clock = root.querySelector("[data-play-clock]");
  var board = root.querySelector("[data-play-board]");
  var result = root.querySelector("[data-play-result]");
  var problem = root.querySelector("[data-play-error]");
  var replay = root.querySelector("[data-play-replay]");
  var rematch = root.querySelector("[data-play-rematch]");
  var abortButton = root.querySelector("[data-play-abort]");
  var resignButton = root.querySelector("[data-play-resign]");
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var opponent = root.getAttribute("data-opponent");

  if (root.hasAttribute("data-finished")) {
    var final = document.getElementById("play-final");
    if (final) {
      window.ArenaBoards.draw(board, JSON.parse(final.textContent));
    }
    return;
  }
  if (!window.EventSource) {
    return;
  }

  var source = new EventSource(root.getAttribute("data-events-url"));
  var seat = 1;
  var timer = null;
  var answered = {};
  var moved = false;
  // The request the board answers now: the next one may arrive before the reply's
  // answer does (an agent answers at once).
  var current = null;

  function post(url, body, quiet) {
    problem.hidden = true;
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body),
    }).then(function (response) {
      if (response.status === 202) {
        return true;
      }
      return response.json().then(function (answer) {
        if (quiet) {
          return false;
        }
        problem.textContent = answer.error ? answer.error.message : "The request was refused.";
        problem.hidden = false;
        return false;
      });
    });
  }

  function send(reply, quiet) {
    return post(root.getAttribute("data-reply-url"), reply, quiet);
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

  // Abort until the person's first move, then Resign (as on lichess).
  function showButtons() {
    if (abortButton) {
      abortButton.hidden = moved;
    }
    if (resignButton) {
      resignButton.hidden = !moved;
    }
  }

  function over(text, state, withReplay) {
    current = null;
    stopClock();
    if (clock) {
      // The result takes the clock's place: nothing runs any more.
      clock.hidden = true;
    }
    result.textContent = text;
    result.hidden = false;
    replay.hidden = !withReplay;
    rematch.hidden = false;
    if (abortButton) {
      abortButton.hidden = true;
    }
    if (resignButton) {
      resignButton.hidden = true;
    }
    sayTurn(state, "The game is over.");
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
        if (ok) {
          moved = true;
          showButtons();
        }
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
    if (message.view) {
      window.ArenaBoards.draw(board, message.view);
    }
    var words = { win: "You won!", loss: "You lost.", draw: "A draw." };
    var why = message.words || "";
    over((words[message.result] || message.result) + (why ? " " + why : ""), "over", true);
  }

  if (abortButton) {
    abortButton.addEventListener("click", function () {
      post(root.getAttribute("data-abort-url"), {}).then(function (ok) {
        if (ok) {
          source.close();
          over("Aborted: no result.", "done", false);
        }
      });
    });
  }
  if (resignButton) {
    // Two clicks: the first asks, the second resigns (a misclick costs nothing).
    resignButton.addEventListener("click", function () {
      if (resignButton.getAttribute("data-confirm") !== "yes") {
        resignButton.setAttribute("data-confirm", "yes");
        resignButton.textContent = "Resign: are you sure?";
        return;
      }
      post(root.getAttribute("data-resign-url"), {}).then(function (ok) {
        if (ok) {
          source.close();
          over("You resigned: " + opponent + " wins.", "done", true);
        }
      });
    });
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
      // A request the person answered already (the stream replays the game after a
      // reload): they have moved.
      if (current !== null && current !== message.id && answered[current]) {
        moved = true;
      }
      if (!answered[message.id]) {
        if (current !== null && current !== message.id) {
          moved = true;
        }
        offer(message);
      }
      showButtons();
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
