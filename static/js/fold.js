// Folds for narrow screens (issue 44). A [data-fold] button shows or hides the element its
// aria-controls names; below 900 px the CSS hides a `.foldable` until it is `.unfolded` (the top
// bar's menu, a list's filters), and at desktop widths the buttons are hidden and everything
// shows. Tables (table.data) get a data-label on each cell from their header, which the CSS
// writes above the value when a table folds into cards on a phone.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-fold]");
    if (!button) return;
    var target = document.getElementById(button.getAttribute("aria-controls"));
    if (!target) return;
    var open = !target.classList.contains("unfolded");
    target.classList.toggle("unfolded", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });

  function labelCells(root) {
    (root || document).querySelectorAll("table.data").forEach(function (table) {
      var heads = table.tHead && table.tHead.rows.length ? table.tHead.rows[0].cells : null;
      if (!heads) return;
      var names = [];
      for (var i = 0; i < heads.length; i++) {
        var text = heads[i].textContent.trim().replace(/\s+/g, " ");
        for (var span = 0; span < (heads[i].colSpan || 1); span++) names.push(text);
      }
      for (var b = 0; b < table.tBodies.length; b++) {
        var rows = table.tBodies[b].rows;
        for (var r = 0; r < rows.length; r++) {
          var column = 0;
          for (var c = 0; c < rows[r].cells.length; c++) {
            var cell = rows[r].cells[c];
            if (!cell.hasAttribute("data-label") && names[column]) {
              cell.setAttribute("data-label", names[column]);
            }
            column += cell.colSpan || 1;
          }
        }
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () { labelCells(document); });
  document.addEventListener("htmx:afterSettle", function (event) { labelCells(event.target); });
})();
