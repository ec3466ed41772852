// fencepost report: step selection on timelines (click, hover list, arrow keys).
// Written for this page only; no network, no libraries.
(function () {
  "use strict";
  function setup(fig) {
    var svg = fig.querySelector("svg.lanes");
    var cursor = fig.querySelector(".cursor");
    var output = fig.querySelector(".stepnav output");
    var states = Array.prototype.slice.call(fig.querySelectorAll(".state"));
    var items = Array.prototype.slice.call(fig.querySelectorAll("ol.steps li"));
    var first = Number(fig.dataset.first);
    var left = Number(fig.dataset.left);
    var col = Number(fig.dataset.col);
    var indices = states.map(function (s) { return Number(s.dataset.step); });
    if (!svg || !cursor || indices.length === 0) { return; }

    // The step shown for column i: the last recorded step at or before it.
    function nearest(i) {
      var found = indices[0];
      indices.forEach(function (n) { if (n <= i) { found = n; } });
      return found;
    }

    function select(i) {
      var step = nearest(i);
      cursor.setAttribute("x", String(left + (step - first) * col));
      states.forEach(function (s) { s.hidden = Number(s.dataset.step) !== step; });
      items.forEach(function (li) {
        li.classList.toggle("selected", Number(li.dataset.step) === step);
      });
      var position = indices.indexOf(step) + 1;
      if (output) { output.textContent = "step " + step + " (" + position + " of " + indices.length + ")"; }
      fig.dataset.selected = String(step);
    }

    function move(delta) {
      var at = indices.indexOf(Number(fig.dataset.selected));
      var next = Math.min(indices.length - 1, Math.max(0, at + delta));
      select(indices[next]);
    }

    function columnAt(event) {
      var box = svg.getBoundingClientRect();
      var scale = box.width > 0 ? svg.viewBox.baseVal.width / box.width : 1;
      var x = (event.clientX - box.left) * scale;
      return first + Math.floor((x - left) / col);
    }

    svg.addEventListener("click", function (event) {
      var i = columnAt(event);
      if (i >= first) { select(i); }
    });
    items.forEach(function (li) {
      li.addEventListener("click", function () { select(Number(li.dataset.step)); });
    });
    var prev = fig.querySelector(".stepnav .prev");
    var next = fig.querySelector(".stepnav .next");
    if (prev) { prev.addEventListener("click", function () { move(-1); }); }
    if (next) { next.addEventListener("click", function () { move(1); }); }
    fig.addEventListener("keydown", function (event) {
      if (event.key === "ArrowLeft") { move(-1); event.preventDefault(); }
      if (event.key === "ArrowRight") { move(1); event.preventDefault(); }
    });
    select(Number(fig.dataset.selected));
  }
  Array.prototype.forEach.call(document.querySelectorAll("figure.timeline"), setup);
})();
