// A person's seat in the browser: the seat's events (edge/human.py) as server-sent
// events, and one POST per reply, with the session cookie and the page's CSRF token.
// The board itself is the live view's (live.js); this script answers the referee:
// "ready" to its handshake, and the move the person clicks to each request.
(function () {
  "use strict";

  var root = document.getElementById("play");
  if (!root || !window.EventSource || !window.fetch) {
    return;
  }
  var turn = root.querySelector("[data-play-turn]");
  var clock = root.querySelector("[data-play-clock]");
  var choices = root.querySelector("[data-play-choices]");
  var view = root.querySelector("[data-play-view]");
  var result = root.querySelector("[data-play-result]");
  var problem = root.querySelector("[data-play-error]");
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var replyUrl = root.getAttribute("data-reply-url");
  var source = new EventSource(root.getAttribute("data-events-url"));
  var timer = null;
  var answered = {};
  // The request the buttons answer now: the next one may arrive before the reply's
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

  function clearChoices() {
    choices.textContent = "";
  }

  function offer(message) {
    current = message.id;
    root.setAttribute("data-play-request", String(message.id));
    clearChoices();
    root.setAttribute("data-play-state", "your-turn");
    turn.textContent = "Your turn: choose a move.";
    if (message.view) {
      view.textContent = message.view;
      view.hidden = false;
    }
    message.choices.forEach(function (choice) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "button button-small";
      button.textContent = choice.text;
      button.addEventListener("click", function () {
        if (answered[message.id]) {
          return;
        }
        answered[message.id] = true;
        send({ type: "action", id: message.id, action: choice.action }).then(function (ok) {
          if (ok && current === message.id) {
            stopClock();
            clearChoices();
            root.setAttribute("data-play-state", "waiting");
            turn.textContent = "Played " + choice.text + ". The agent is thinking…";
          } else if (!ok) {
            answered[message.id] = false;
          }
        });
      });
      choices.appendChild(button);
    });
    startClock(message.time_left.move, message.time_left.bank);
  }

  source.onmessage = function (event) {
    var message = JSON.parse(event.data);
    if (message.type === "hello") {
      // Quietly: after a reload the stream starts again from the handshake, answered already.
      send({ type: "ready", name: "browser" }, true);
      turn.textContent = "The game begins.";
    } else if (message.type === "start") {
      turn.textContent = "Match " + message.match + " begins: you are seat " + (message.player + 1) + ".";
      root.setAttribute("data-play-state", "waiting");
    } else if (message.type === "act") {
      if (!answered[message.id]) {
        offer(message);
      }
    } else if (message.type === "end") {
      current = null;
      stopClock();
      clearChoices();
      var words = { win: "You won!", loss: "You lost.", draw: "A draw." };
      result.textContent = (words[message.result] || message.result) +
        (message.reason ? " " + message.reason : "");
      result.hidden = false;
      turn.textContent = "The match is over.";
      root.setAttribute("data-play-state", "over");
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
