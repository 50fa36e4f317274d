// The replay viewer: one script for every game.
//
// The page carries the match's compact document: one picture of each state
// (Environment.view: a board, a FEN), which the game's drawer (boards.js) draws at each
// step, the move list and, for whoever may read them, what the agents logged at each
// step, which this script writes as text. Without this script, the page still shows a
// state as the server rendered it (with its logs) and the move list, whose links
// (?step=N) load any other state.
(function () {
  "use strict";

  var root = document.getElementById("replay");
  var data = document.getElementById("replay-views");
  if (!root || !data || !window.ArenaBoards) {
    return;
  }
  var views = JSON.parse(data.textContent);
  if (!views.length) {
    return;
  }

  var BASE_DELAY_MS = 800;
  var last = views.length - 1;
  var board = root.querySelector("[data-replay-board]");
  var position = root.querySelector("[data-replay-position]");
  var moveText = root.querySelector("[data-replay-move]");
  var slider = root.querySelector("[data-replay-slider]");
  var playButton = root.querySelector("[data-replay-play]");
  var speed = root.querySelector("[data-replay-speed]");
  var moveList = root.querySelector("[data-replay-moves]");
  var moveLinks = Array.prototype.slice.call(root.querySelectorAll("[data-step]"));
  var faultBoxes = Array.prototype.slice.call(document.querySelectorAll("[data-replay-fault]"));
  // Panels that belong to one step each (an LLM seat's conversation), rendered and
  // escaped by the server, in groups: each group shows the panel of the current step.
  var panelGroups = Array.prototype.slice.call(document.querySelectorAll("[data-step-panels]"));
  // What the agents logged, by frame, from the page's document: [[frame, [[label, step,
  // log]]]]. One panel is written at a time: every step's panel as HTML weighed several
  // times more than the logs themselves.
  var logBox = root.querySelector("[data-move-logs]");
  var logData = document.getElementById("replay-logs");
  var logsByFrame = {};
  if (logBox && logData) {
    JSON.parse(logData.textContent).forEach(function (frame) {
      logsByFrame[frame[0]] = frame[1];
    });
  }
  // The move list's items by step, to tell what was played (fault lines excluded).
  var items = {};
  moveLinks.forEach(function (link) {
    if (!link.parentNode.classList.contains("move-fault")) {
      items[link.getAttribute("data-step")] = link.parentNode;
    }
  });
  var current = clamp(parseInt(root.getAttribute("data-step"), 10));
  var timer = null;

  function clamp(step) {
    if (isNaN(step)) {
      return last;
    }
    return Math.max(0, Math.min(last, step));
  }

  function describe(step) {
    var item = items[step];
    var players = item ? item.querySelectorAll(".move-player") : [];
    var actions = item ? item.querySelectorAll(".move-action") : [];
    var said = [];
    for (var i = 0; i < players.length && i < actions.length; i += 1) {
      said.push(players[i].textContent + " played " + actions[i].textContent);
    }
    return said.length ? said.join("; ") : "Start of the match";
  }

  function keepInView(item) {
    // Scroll the move list only, never the page: the list is the items' offset parent.
    var top = item.offsetTop;
    if (top < moveList.scrollTop) {
      moveList.scrollTop = top;
    } else if (top + item.offsetHeight > moveList.scrollTop + moveList.clientHeight) {
      moveList.scrollTop = top + item.offsetHeight - moveList.clientHeight;
    }
  }

  function showPanels() {
    panelGroups.forEach(function (group) {
      var shown = false;
      group.querySelectorAll("[data-step-panel]").forEach(function (panel) {
        var here = Number(panel.getAttribute("data-step-panel")) === current;
        panel.hidden = !here;
        shown = shown || here;
      });
      var none = group.querySelector("[data-step-panel-none]");
      if (none) {
        none.hidden = shown;
      }
    });
  }

  // The agents' logs of the current step, written as text (never as HTML: they come
  // from the agents).
  function showLogs() {
    if (!logBox || !logData) {
      return;
    }
    var shown = logBox.querySelector("[data-move-log-step]");
    if (shown) {
      logBox.removeChild(shown);
    }
    var entries = logsByFrame[current];
    logBox.querySelector("[data-move-log-none]").hidden = Boolean(entries);
    if (!entries) {
      return;
    }
    var el = window.ArenaBoards.element;
    var section = el("section", "move-log");
    section.setAttribute("data-move-log-step", String(current));
    section.setAttribute("aria-label", "Agent logs for step " + current);
    section.appendChild(el("h2", "", "Agent logs · step " + current));
    entries.forEach(function (entry) {
      var article = el("article", "move-log-entry");
      var heading = el("h3", "", entry[0] + " ");
      heading.appendChild(el("span", "muted small", "while choosing move " + (entry[1] + 1)));
      article.appendChild(heading);
      article.appendChild(el("pre", "move-log-text", entry[2]));
      section.appendChild(article);
    });
    logBox.insertBefore(section, logBox.firstChild);
  }

  // An episode of a one-player game has neither a move list nor a move line: its
  // drawing says what was done.
  var previous = moveList ? moveList.querySelector(".move.current") : null;

  function show(step) {
    current = clamp(step);
    window.ArenaBoards.draw(board, views[current]);
    position.textContent = "Step " + current + " of " + last;
    if (moveText) {
      moveText.textContent = describe(current);
    }
    slider.value = String(current);
    if (previous) {
      previous.classList.remove("current");
      previous.querySelector("a").removeAttribute("aria-current");
    }
    var item = items[current];
    if (item) {
      item.classList.add("current");
      item.querySelector("a").setAttribute("aria-current", "step");
      keepInView(item);
    }
    previous = item || null;
    faultBoxes.forEach(function (box) {
      box.classList.toggle("is-now", current === last);
    });
    showPanels();
    showLogs();
    if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", "?step=" + current);
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
