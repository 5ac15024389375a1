// Share links: a [data-copy-link] button copies an absolute link to this page, or to the
// position its value names ("?seq=12#seq-12"), and says so in the nearest .copy-status.
(function () {
  "use strict";

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    var field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.style.position = "fixed";
    field.style.opacity = "0";
    document.body.appendChild(field);
    field.select();
    var ok = document.execCommand("copy");
    document.body.removeChild(field);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-link]");
    if (!button) return;
    var target = button.getAttribute("data-copy-link");
    var url = new URL(target || window.location.href, window.location.href).href;
    var status = document.querySelector(".copy-status");
    if (!status) {
      status = document.createElement("span");
      status.className = "copy-status";
      status.setAttribute("role", "status");
      button.insertAdjacentElement("afterend", status);
    }
    button.setAttribute("data-copied-url", url);
    copy(url).then(
      function () { if (status) status.textContent = "Link copied: " + url; },
      function () { if (status) status.textContent = "Copy this link: " + url; }
    );
  });
})();
