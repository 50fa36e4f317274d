// Acrobot's drawer (web/static/web/boards.js): the two links hanging from their pivot,
// from Environment.view ({angles: [the upper link's angle from hanging straight down,
// the lower link's relative to the upper one], in degrees; push: the last action's
// torque on the joint between them, -1, 0 or 1}). The links are 1 long each; the
// episode ends when the free end rises 1 above the pivot (the dashed line).
(function () {
  "use strict";
  var boards = window.ArenaBoards;
  var svg = boards.svg;
  var SIZE = 300;
  var LINK = 62; // pixels
  var PIVOT = SIZE / 2;
  var SAID = ["Torque -1 on the joint", "No torque", "Torque +1 on the joint"];

  function fixed(value) {
    return value.toFixed(1);
  }

  function link(from, to) {
    return svg("line", "acrobot-link", {
      x1: fixed(from[0]), y1: fixed(from[1]), x2: fixed(to[0]), y2: fixed(to[1]),
    });
  }

  boards.register("acrobot", function (box, view) {
    var angles = view.angles || [0, 0];
    var push = Number(view.push) || 0;
    var upper = (Number(angles[0]) * Math.PI) / 180;
    var lower = upper + (Number(angles[1]) * Math.PI) / 180;
    // Angles from hanging down: x grows with the sine, and the drawing's y (downwards)
    // with the cosine.
    var pivot = [PIVOT, PIVOT];
    var joint = [PIVOT + Math.sin(upper) * LINK, PIVOT + Math.cos(upper) * LINK];
    var end = [joint[0] + Math.sin(lower) * LINK, joint[1] + Math.cos(lower) * LINK];
    var rise = -Math.cos(upper) - Math.cos(lower);
    var drawing = svg("svg", "acrobot-drawing", { viewBox: "0 0 " + SIZE + " " + SIZE });
    drawing.appendChild(svg("line", "acrobot-goal", {
      x1: 20, y1: PIVOT - LINK, x2: SIZE - 20, y2: PIVOT - LINK,
    }));
    drawing.appendChild(link(pivot, joint));
    drawing.appendChild(link(joint, end));
    drawing.appendChild(svg("circle", "acrobot-pivot", { cx: PIVOT, cy: PIVOT, r: 6 }));
    drawing.appendChild(svg("circle", "acrobot-joint" + (push ? " acrobot-torque" : ""), {
      cx: fixed(joint[0]), cy: fixed(joint[1]), r: 6,
    }));

    var said = ["push" in view ? SAID[push + 1] : "Start"];
    var where = Math.abs(rise).toFixed(2) + (rise < 0 ? " below" : " above") + " the pivot";
    said.push("the free end is " + where + " (the goal is 1 above)");
    boards.figure(box, "acrobot", drawing, said.join(" · "));
    return false;
  });
})();
