// CartPole's drawer (web/static/web/boards.js): the cart on its track and the pole on
// it, from Environment.view ({x: metres from the centre, angle: degrees from upright,
// positive leaning right, push: -1 left or 1 right, the last action}).
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var svg = boards.svg;
  // CartPole-v1 ends an episode past these: the track's ends and the pole's lean.
  var TRACK_END = 2.4;
  var FALLEN = 12;
  var WIDTH = 600;
  var SCALE = 110; // pixels a metre
  var RAIL = 200; // the height of the push arrow; the cart stands on RAIL + 16
  var POLE = 140;

  function fixed(value) {
    return value.toFixed(1);
  }

  // A line from the pole's foot at `angle` radians from upright.
  function leaning(className, foot, top, angle) {
    return svg("line", className, {
      x1: fixed(foot),
      y1: top,
      x2: fixed(foot + Math.sin(angle) * POLE),
      y2: fixed(top - Math.cos(angle) * POLE),
    });
  }

  function side(value, left, right) {
    return value < 0 ? left : right;
  }

  function describe(x, angle, push, fallen) {
    var said = [];
    if (push) {
      said.push("Pushed " + side(push, "left", "right"));
    }
    var lean = Math.abs(angle).toFixed(1) + "° " + side(angle, "left", "right") + " of upright";
    said.push("pole " + (angle === 0 ? "upright" : lean));
    var away = Math.abs(x).toFixed(2) + " m " + side(x, "left", "right") + " of the centre";
    said.push("cart " + (x === 0 ? "at the centre" : away));
    if (fallen) {
      said.push(Math.abs(x) > TRACK_END ? "off the track" : "the pole has fallen");
    }
    var text = said.join(" · ");
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  boards.register("cartpole", function (box, view) {
    var x = Number(view.x) || 0;
    var angle = Number(view.angle) || 0;
    var push = Number(view.push) || 0;
    var fallen = Math.abs(angle) > FALLEN || Math.abs(x) > TRACK_END;
    var cart = WIDTH / 2 + x * SCALE;
    var top = RAIL - 16;
    var ends = TRACK_END * SCALE;
    var drawing = svg("svg", "cartpole-drawing", { viewBox: "0 0 " + WIDTH + " 240" });
    drawing.appendChild(svg("line", "cartpole-track", {
      x1: WIDTH / 2 - ends, y1: RAIL + 16, x2: WIDTH / 2 + ends, y2: RAIL + 16,
    }));
    [-1, 1].forEach(function (end) {
      var at = WIDTH / 2 + end * ends;
      var mark = { x1: at, y1: RAIL - 6, x2: at, y2: RAIL + 24 };
      drawing.appendChild(svg("line", "cartpole-end", mark));
      // How far the pole may lean before the episode ends.
      drawing.appendChild(leaning("cartpole-limit", cart, top, (end * FALLEN * Math.PI) / 180));
    });
    drawing.appendChild(svg("rect", "cartpole-cart", {
      x: fixed(cart - 30), y: top, width: 60, height: 32, rx: 4,
    }));
    if (push) {
      // The last action's push: an arrow on the side it pushes from, pointing at the cart.
      var tip = cart - push * 33;
      drawing.appendChild(svg("path", "cartpole-push", {
        d: "M" + fixed(cart - push * 52) + " " + RAIL + "L" + fixed(tip) + " " + RAIL +
          "m" + -push * 8 + " -6l" + push * 8 + " 6l" + -push * 8 + " 6",
      }));
    }
    var pole = "cartpole-pole" + (fallen ? " cartpole-fallen" : "");
    drawing.appendChild(leaning(pole, cart, top, (angle * Math.PI) / 180));
    drawing.appendChild(svg("circle", "cartpole-axle", { cx: fixed(cart), cy: top, r: 5 }));

    boards.figure(box, "cartpole", drawing, describe(x, angle, push, fallen));
    return false;
  });
})();
