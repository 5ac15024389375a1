// Draws every [data-chart] element from the JSON figure next to it (see compaction/charts.py).
// Runs on load and after each htmx swap. Clicking a point whose customdata is a local URL
// (a compaction marker) opens it.
(function () {
  "use strict";

  // ==== theme: charts follow dark mode (static/js/theme.js) ====
  var DARK = { paper: "#171c26", ink: "#e6e9ef", grid: "#2e3646" };
  function themed(layout) {
    var dark = window.sawtoothTheme && window.sawtoothTheme() === "dark";
    var out = JSON.parse(JSON.stringify(layout));
    if (!dark) return out;
    out.paper_bgcolor = DARK.paper;
    out.plot_bgcolor = DARK.paper;
    out.font = Object.assign({}, out.font, { color: DARK.ink });
    ["xaxis", "yaxis"].forEach(function (axis) {
      out[axis] = Object.assign({}, out[axis], { gridcolor: DARK.grid, zerolinecolor: DARK.grid });
    });
    (out.shapes || []).forEach(function (shape) {
      if (shape.line && shape.line.color === "#1b1f24") shape.line.color = DARK.ink;
    });
    (out.annotations || []).forEach(function (note) {
      if (note.font && (note.font.color === "#1b1f24" || note.font.color === "#5d6673")) {
        note.font.color = DARK.ink;
      }
    });
    return out;
  }
  document.addEventListener("theme:changed", function () {
    document.querySelectorAll("[data-chart][data-drawn='1']").forEach(function (el) {
      var source = document.getElementById(el.dataset.chart);
      if (source) Plotly.relayout(el, themed(JSON.parse(source.textContent).layout));
    });
  });
  // ==== end theme ====

  function draw(root) {
    if (typeof Plotly === "undefined") return;
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      if (el.dataset.drawn === "1") return;
      var source = document.getElementById(el.dataset.chart);
      if (!source) return;
      var figure = JSON.parse(source.textContent);
      el.dataset.drawn = "1";
      Plotly.newPlot(el, figure.data, themed(figure.layout), {
        responsive: true,
        displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"],
      }).then(function () {
        el.setAttribute("data-points", String(
          figure.data.reduce(function (n, t) { return n + (t.x ? t.x.length : 0); }, 0)));
        el.dispatchEvent(new CustomEvent("chart:drawn", { bubbles: true }));
      });
      el.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        var target = point && point.customdata;
        if (typeof target === "string" && target.charAt(0) === "/") {
          window.location.assign(target);
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (event) { draw(event.target); });
})();
