// Reading aids: the span page's side-by-side tabs and raw-message links, and landing on a
// message (jump to seq, permalinks). No trace content is handled here: only ids and classes.
(function () {
  "use strict";

  function mark(el) {
    document.querySelectorAll(".is-target").forEach(function (old) { old.classList.remove("is-target"); });
    el.classList.add("is-target");
    el.scrollIntoView({ block: "center" });
    // Keyboard and screen reader users land where the eye does: focus follows the jump.
    if (!el.hasAttribute("tabindex")) { el.setAttribute("tabindex", "-1"); }
    el.focus({ preventScroll: true });
  }

  // --- Span page: summary / raw tabs on narrow screens ---------------------------------
  var reader = document.querySelector("[data-reader]");
  var tabs = reader ? Array.prototype.slice.call(reader.querySelectorAll("[role=tab]")) : [];

  function select(tab) {
    tabs.forEach(function (t) {
      var on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      var panel = document.getElementById(t.getAttribute("aria-controls"));
      if (panel) { panel.toggleAttribute("data-inactive", !on); }
    });
  }

  if (reader && tabs.length) {
    reader.querySelector("[role=tablist]").hidden = false;
    tabs.forEach(function (tab, n) {
      var panel = document.getElementById(tab.getAttribute("aria-controls"));
      if (panel) { panel.setAttribute("role", "tabpanel"); panel.setAttribute("aria-labelledby", tab.id); }
      tab.addEventListener("click", function () { select(tab); });
      tab.addEventListener("keydown", function (event) {
        var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
        if (!step) { return; }
        var next = tabs[(n + step + tabs.length) % tabs.length];
        select(next);
        next.focus();
      });
    });
    select(tabs[0]);
  }

  // --- Span page: a fact's "#seq" shows that raw message, loading the hidden middle ----
  function loadMiddle() {
    var more = document.querySelector("#middle-more button[hx-get]");
    if (!more || !window.htmx) { return Promise.resolve(); }
    return window.htmx.ajax("GET", more.getAttribute("hx-get"), { target: "#middle-more", swap: "outerHTML" });
  }

  function showRaw(seq, fallback) {
    var find = function () { return document.getElementById("raw-" + seq); };
    var found = find() ? Promise.resolve(find()) : loadMiddle().then(find);
    return found.then(function (el) {
      if (!el) {
        if (fallback) { window.location.href = fallback; }
        return;
      }
      var rawTab = document.getElementById("tab-raw");
      if (rawTab) { select(rawTab); }
      if (window.location.hash !== "#raw-" + seq) { history.pushState(null, "", "#raw-" + seq); }
      mark(el);
    });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.raw-link") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) { return; }
    event.preventDefault();
    showRaw(link.getAttribute("data-raw-seq"), link.getAttribute("data-fallback"));
  });

  // --- Span page: from a fact to where the summary says it, and from a mark to its fact ----
  // The target may sit in the column a phone hides behind the other tab: show that one first.
  function showInPage(id) {
    var el = document.getElementById(id);
    if (!el) { return false; }
    var folded = el.closest ? el.closest("details:not([open])") : null;
    if (folded) { folded.open = true; }
    var panel = el.closest ? el.closest("[role=tabpanel]") : null;
    var tab = panel ? document.getElementById(panel.getAttribute("aria-labelledby")) : null;
    if (tab) { select(tab); }
    if (window.location.hash !== "#" + id) { history.pushState(null, "", "#" + id); }
    mark(el);
    return true;
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.said-link, a.verdict-tag, a.said-fact") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) { return; }
    if (showInPage(decodeURIComponent(link.getAttribute("href").slice(1)))) { event.preventDefault(); }
  });

  // A link followed from elsewhere on the page, or back and forward, lands the same way.
  window.addEventListener("hashchange", function () {
    var moved = /^#raw-(\d+)$/.exec(window.location.hash);
    if (moved && reader) { showRaw(moved[1], null); }
    else if (window.location.hash.length > 1) { showInPage(decodeURIComponent(window.location.hash.slice(1))); }
  });

  // --- Landing: #raw-N on the span page, ?seq=N (jump to seq) on the session page -------
  var hash = window.location.hash;
  var raw = /^#raw-(\d+)$/.exec(hash);
  if (raw && reader) {
    showRaw(raw[1], null);
  } else if (hash.length > 1) {
    showInPage(decodeURIComponent(hash.slice(1)));
  } else {
    var seq = new URLSearchParams(window.location.search).get("seq");
    var msg = null;
    if (seq && /^\d+$/.test(seq)) {
      // The message itself, or (a seq the trace skipped) the first one after it on this page.
      msg = document.getElementById("seq-" + seq) ||
        Array.prototype.find.call(document.querySelectorAll("li.msg[id^='seq-']"), function (li) {
          return Number(li.id.slice(4)) >= Number(seq);
        }) || null;
    }
    if (msg) {
      window.location.replace("#" + msg.id);
      mark(msg);
    }
  }
})();
