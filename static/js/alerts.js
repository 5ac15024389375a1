// The alert queue's "select all" box ticks every enabled row box of the same name.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("[data-select-all]")) return;
    var form = box.closest("form");
    form.querySelectorAll('input[name="' + box.dataset.selectAll + '"]:not(:disabled)')
      .forEach(function (el) { el.checked = box.checked; });
  });
})();
