// Parts of a page that poll themselves (hx-trigger "every 5s") carry the ETag they were drawn
// with (data-etag). A poll whose answer has the same ETag (the browser revalidated and got 304,
// then handed htmx the cached copy) is not swapped, so a chart is never redrawn for nothing.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || !target.hasAttribute("data-etag")) { return; }
    var etag = event.detail.xhr.getResponseHeader("ETag");
    if (etag && etag === target.getAttribute("data-etag")) {
      event.detail.shouldSwap = false;
    }
  });
})();
