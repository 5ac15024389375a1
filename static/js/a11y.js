// Keyboard access to wide tables: a .table-wrap that scrolls sideways becomes a focusable,
// labelled region (arrow keys scroll it); one that fits stays out of the tab order.
(function () {
  "use strict";

  function label(wrap) {
    var table = wrap.querySelector("table");
    var caption = table && table.querySelector("caption");
    var heading = wrap.closest("section") && wrap.closest("section").querySelector("h2, h3");
    return (caption && caption.textContent.trim()) ||
      (heading && heading.textContent.trim().replace(/\s+/g, " ")) || "Table";
  }

  function update(root) {
    (root || document).querySelectorAll(".table-wrap").forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) {
        wrap.setAttribute("tabindex", "0");
        wrap.setAttribute("role", "region");
        wrap.setAttribute("aria-label", label(wrap) + " (scrolls sideways)");
      } else if (wrap.getAttribute("tabindex") === "0") {
        wrap.removeAttribute("tabindex");
        wrap.removeAttribute("role");
        wrap.removeAttribute("aria-label");
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () { update(document); });
  document.addEventListener("htmx:afterSwap", function (event) { update(event.target); });
  window.addEventListener("resize", function () { update(document); });
})();
