// MountainCar's drawer (web/static/web/boards.js): the car in its valley, from
// Environment.view ({x: the car's position, from -1.2 to 0.6; push: -1 left, 0 none or
// 1 right, the last action}). The hill is MountainCar-v0's: height 0.45 sin(3x) + 0.55.
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var svg = boards.svg;
  var LOW = -1.2;
  var HIGH = 0.6;
  var GOAL = 0.5;
  var WIDTH = 600;
  var HEIGHT = 260;
  var SAID = ["Pushed left", "Coasted", "Pushed right"];

  function fixed(value) {
    return value.toFixed(1);
  }

  // Where a position on the hill is in the drawing.
  function point(x) {
    var height = 0.45 * Math.sin(3 * x) + 0.55;
    return [20 + ((x - LOW) / (HIGH - LOW)) * (WIDTH - 40), HEIGHT - 20 - height * 200];
  }

  function hill() {
    var path = [];
    for (var i = 0; i <= 60; i += 1) {
      var at = point(LOW + ((HIGH - LOW) * i) / 60);
      path.push((i ? "L" : "M") + fixed(at[0]) + " " + fixed(at[1]));
    }
    return svg("path", "mountain-car-hill", { d: path.join("") });
  }

  function flag() {
    var foot = point(GOAL);
    var group = svg("g", "mountain-car-goal", {
      transform: "translate(" + fixed(foot[0]) + " " + fixed(foot[1]) + ")",
    });
    group.appendChild(svg("line", "mountain-car-pole", { x1: 0, y1: 0, x2: 0, y2: -40 }));
    group.appendChild(svg("path", "mountain-car-flag", { d: "M0 -40l22 6l-22 6z" }));
    return group;
  }

  // The car on the slope, tilted as the hill is where it stands, and the last action's
  // push as an arrow ahead of it.
  function car(x, push) {
    var here = point(x);
    var ahead = point(x + 0.01);
    var tilt = (Math.atan2(ahead[1] - here[1], ahead[0] - here[0]) * 180) / Math.PI;
    var place = "translate(" + fixed(here[0]) + " " + fixed(here[1]) + ")";
    var tilted = place + " rotate(" + fixed(tilt) + ")";
    var group = svg("g", "mountain-car-car", { transform: tilted });
    var body = { x: -20, y: -22, width: 40, height: 16, rx: 3 };
    group.appendChild(svg("rect", "mountain-car-body", body));
    group.appendChild(svg("circle", "mountain-car-wheel", { cx: -12, cy: -5, r: 5 }));
    group.appendChild(svg("circle", "mountain-car-wheel", { cx: 12, cy: -5, r: 5 }));
    if (push) {
      group.appendChild(svg("path", "mountain-car-push", {
        d: "M" + push * 24 + " -14L" + push * 40 + " -14" +
          "m" + -push * 7 + " -5l" + push * 7 + " 5l" + -push * 7 + " 5",
      }));
    }
    return group;
  }

  boards.register("mountain_car", function (box, view) {
    var x = Math.max(LOW, Math.min(HIGH, Number(view.x) || 0));
    var push = Number(view.push) || 0;
    var drawing = svg("svg", "mountain-car-drawing", { viewBox: "0 0 " + WIDTH + " " + HEIGHT });
    drawing.appendChild(hill());
    drawing.appendChild(flag());
    drawing.appendChild(car(x, push));

    var said = ["push" in view ? SAID[push + 1] : "Start"];
    said.push("car at " + x.toFixed(2) + " (the flag is at " + GOAL + ")");
    if (x >= GOAL) {
      said.push("the car reached the flag");
    }
    boards.figure(box, "mountain-car", drawing, said.join(" · "));
    return false;
  });
})();
