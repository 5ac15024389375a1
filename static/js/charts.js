// Draws every [data-chart] element from the JSON figure next to it (see compaction/charts.py).
// Runs on load and after each htmx swap. Clicking a point whose customdata is a local URL
// (a compaction marker) opens it.
(function () {
  "use strict";

  function draw(root) {
    if (typeof Plotly === "undefined") return;
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      if (el.dataset.drawn === "1") return;
      var source = document.getElementById(el.dataset.chart);
      if (!source) return;
      var figure = JSON.parse(source.textContent);
      el.dataset.drawn = "1";
      Plotly.newPlot(el, figure.data, figure.layout, {
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
