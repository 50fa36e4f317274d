// The replay viewer: one script for every game.
//
// The server renders every state of the match (the environment's own HTML) into a JSON
// list of frames; this script only switches between them. Without it, the page still
// shows a state and the move list, whose links (?step=N) load any other state.
(function () {
  "use strict";

  var root = document.getElementById("replay");
  var data = document.getElementById("replay-frames");
  if (!root || !data) {
    return;
  }
  var frames = JSON.parse(data.textContent);
  if (!frames.length) {
    return;
  }

  var BASE_DELAY_MS = 800;
  var last = frames.length - 1;
  var board = root.querySelector("[data-replay-board]");
  var position = root.querySelector("[data-replay-position]");
  var moveText = root.querySelector("[data-replay-move]");
  var slider = root.querySelector("[data-replay-slider]");
  var playButton = root.querySelector("[data-replay-play]");
  var speed = root.querySelector("[data-replay-speed]");
  var moveList = root.querySelector("[data-replay-moves]");
  var moveLinks = Array.prototype.slice.call(root.querySelectorAll("[data-step]"));
  var faultBoxes = Array.prototype.slice.call(document.querySelectorAll("[data-replay-fault]"));
  // An LLM seat's conversation for each step, rendered (and escaped) by the server.
  var conversations = Array.prototype.slice.call(
    document.querySelectorAll("[data-conversation-step]")
  );
  var noConversation = document.querySelector("[data-conversation-none]");
  // What the agents logged while choosing each step's move, rendered (and escaped) by
  // the server, for whoever may read it: the same switch as the conversations.
  var moveLogs = Array.prototype.slice.call(document.querySelectorAll("[data-move-log-step]"));
  var noMoveLog = document.querySelector("[data-move-log-none]");
  var current = clamp(parseInt(root.getAttribute("data-step"), 10));
  var timer = null;

  function clamp(step) {
    if (isNaN(step)) {
      return last;
    }
    return Math.max(0, Math.min(last, step));
  }

  function describe(frame) {
    if (!frame.moves.length) {
      return "Start of the match";
    }
    return frame.moves
      .map(function (move) {
        return move.player + " played " + move.action;
      })
      .join("; ");
  }

  function keepInView(item) {
    // Scroll the move list only, never the page.
    var top = item.offsetTop - moveList.offsetTop;
    if (top < moveList.scrollTop) {
      moveList.scrollTop = top;
    } else if (top + item.offsetHeight > moveList.scrollTop + moveList.clientHeight) {
      moveList.scrollTop = top + item.offsetHeight - moveList.clientHeight;
    }
  }

  function show(step) {
    current = clamp(step);
    var frame = frames[current];
    // The environment's render_html output: it escapes whatever came from an agent.
    board.innerHTML = frame.html;
    position.textContent = "Step " + current + " of " + last;
    moveText.textContent = describe(frame);
    slider.value = String(current);
    moveLinks.forEach(function (link) {
      var item = link.parentNode;
      var here = Number(link.getAttribute("data-step")) === current;
      var isFault = item.classList.contains("move-fault");
      item.classList.toggle("current", here && !isFault);
      if (here && !isFault) {
        link.setAttribute("aria-current", "step");
        keepInView(item);
      } else {
        link.removeAttribute("aria-current");
      }
    });
    faultBoxes.forEach(function (box) {
      box.classList.toggle("is-now", current === last);
    });
    showPanels(conversations, "data-conversation-step", noConversation);
    showPanels(moveLogs, "data-move-log-step", noMoveLog);
    if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", "?step=" + current);
    }
  }

  // Shows the panel of the current step among ``panels`` (``attribute`` names its step),
  // or ``none`` when there is no such panel.
  function showPanels(panels, attribute, none) {
    var shown = false;
    panels.forEach(function (panel) {
      var here = Number(panel.getAttribute(attribute)) === current;
      panel.hidden = !here;
      shown = shown || here;
    });
    if (none) {
      none.hidden = shown;
    }
  }

  function delay() {
    return BASE_DELAY_MS / (parseFloat(speed.value) || 1);
  }

  function showPlaying(playing) {
    playButton.querySelector("[data-when-paused]").hidden = playing;
    playButton.querySelector("[data-when-playing]").hidden = !playing;
    playButton.setAttribute("aria-label", playing ? "Pause" : "Play");
  }

  function pause() {
    if (timer !== null) {
      window.clearTimeout(timer);
      timer = null;
    }
    showPlaying(false);
  }

  function tick() {
    if (current >= last) {
      pause();
      return;
    }
    show(current + 1);
    timer = window.setTimeout(tick, delay());
  }

  function play() {
    if (current >= last) {
      show(0);
    }
    showPlaying(true);
    timer = window.setTimeout(tick, delay());
  }

  function toggle() {
    if (timer === null) {
      play();
    } else {
      pause();
    }
  }

  function go(step) {
    pause();
    show(step);
  }

  root.querySelector("[data-replay-first]").addEventListener("click", function () {
    go(0);
  });
  root.querySelector("[data-replay-back]").addEventListener("click", function () {
    go(current - 1);
  });
  root.querySelector("[data-replay-forward]").addEventListener("click", function () {
    go(current + 1);
  });
  root.querySelector("[data-replay-last]").addEventListener("click", function () {
    go(last);
  });
  playButton.addEventListener("click", toggle);
  slider.addEventListener("input", function () {
    go(parseInt(slider.value, 10));
  });
  speed.addEventListener("change", function () {
    if (timer !== null) {
      window.clearTimeout(timer);
      timer = window.setTimeout(tick, delay());
    }
  });
  moveLinks.forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      go(Number(link.getAttribute("data-step")));
    });
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || (target && target.isContentEditable)) {
      return; // the slider and the speed menu handle their own keys
    }
    var handled = true;
    if (event.key === "ArrowLeft") {
      go(current - 1);
    } else if (event.key === "ArrowRight") {
      go(current + 1);
    } else if (event.key === " " || event.key === "Spacebar") {
      if (tag === "BUTTON" || tag === "A") {
        return; // space activates the focused control instead
      }
      toggle();
    } else if (event.key === "Home") {
      go(0);
    } else if (event.key === "End") {
      go(last);
    } else {
      handled = false;
    }
    if (handled) {
      event.preventDefault();
    }
  });

  root.querySelector("[data-replay-controls]").hidden = false;
  root.querySelector("[data-replay-nojs]").hidden = true;
  show(current);
})();
