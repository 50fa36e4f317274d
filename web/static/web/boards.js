// Boards drawn in the browser: one registry of drawers for every page that shows a game
// (the replay viewer, the live view, playing by hand).
//
// A game describes a state as a small JSON picture (Python's Environment.view for the
// whole state, Environment.observation_view for what one player sees) whose "kind" names
// its drawer. A game with a drawer of its own registers it from its static/<game>.js:
//
//   ArenaBoards.register("tic_tac_toe", function (box, view, options) { ... });
//
// A drawer fills `box` from `view`. To play by hand, `options.choices` lists the legal
// moves ({action, text, parts}: `parts` says what the move means on the board, a cell or
// a from-square) and `options.choose(choice)` plays one; a drawer that makes its moves
// clickable returns true, else the moves are offered as labelled buttons below it.
// Pictures without a drawer of their own are drawn by the defaults: "html" (the game's
// own render_html, escaped by the game) and "text".
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var drawers = {};
  var drawnOnce = false;

  // An element with a class and text content (never HTML: a drawer's text may come from
  // an agent).
  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    return node;
  }

  // An SVG element with a class and attributes, for the drawers that draw a picture
  // (CartPole, Mountain Car, Acrobot).
  function svg(tag, className, attributes) {
    var node = document.createElementNS(SVG, tag);
    node.setAttribute("class", className);
    Object.keys(attributes).forEach(function (name) {
      node.setAttribute(name, String(attributes[name]));
    });
    return node;
  }

  // A drawing in `box` as a figure whose caption (`className`-caption) says in words what
  // it shows; the same words are the drawing's accessible name.
  function figure(box, className, drawing, text) {
    drawing.setAttribute("role", "img");
    drawing.setAttribute("aria-label", text);
    var frame = element("figure", className);
    frame.appendChild(drawing);
    frame.appendChild(element("figcaption", className + "-caption", text));
    box.appendChild(frame);
  }

  // A button that plays `choice` when clicked (or runs `onClick` instead).
  function moveButton(label, className, choice, options, onClick) {
    var button = element("button", className, label);
    button.type = "button";
    button.addEventListener("click", function () {
      if (onClick) {
        onClick();
      } else {
        options.choose(choice);
      }
    });
    return button;
  }

  // The moves as labelled buttons: for a game without a board to click on (cards).
  function choiceButtons(choices, options) {
    var group = element("div", "board-choices");
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", "Your legal moves");
    choices.forEach(function (choice) {
      group.appendChild(moveButton(choice.text, "button board-choice", choice, options));
    });
    return group;
  }

  drawers.html = function (box, view) {
    // The game's render_html output: it escapes whatever came from an agent.
    box.innerHTML = view.html || "";
    return false;
  };

  drawers.text = function (box, view) {
    box.appendChild(element("pre", "board-text", view.text || ""));
    return false;
  };

  function draw(container, view, options) {
    options = options || {};
    var choices = options.choices || [];
    var kind = view && drawers[view.kind] ? view.kind : view && "html" in view ? "html" : "text";
    container.textContent = "";
    var box = element("div", "board board-" + kind);
    container.appendChild(box);
    var clickable = drawers[kind](box, view || {}, {
      choices: choices,
      choose: options.choose || function () {},
      playing: choices.length > 0,
    });
    if (choices.length && !clickable) {
      container.appendChild(choiceButtons(choices, options));
    }
    if (!drawnOnce) {
      drawnOnce = true;
      // How long a page takes to show its first board (tests/browser, BENCHMARKS.md).
      if (window.performance && window.performance.mark) {
        window.performance.mark("arena-board-drawn");
      }
    }
  }

  window.ArenaBoards = {
    register: function (kind, drawer) {
      drawers[kind] = drawer;
    },
    draw: draw,
    element: element,
    svg: svg,
    figure: figure,
    moveButton: moveButton,
  };
})();
