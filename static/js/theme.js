// Dark mode: follows prefers-color-scheme until the person picks one with the toggle; the
// choice is kept in localStorage ("sawtooth-theme" = "light" | "dark"). Loaded in <head>
// without defer so the stored choice applies before the first paint.
(function () {
  "use strict";
  var KEY = "sawtooth-theme";
  var root = document.documentElement;
  // Scripts run: the phone layout may fold the menu and filters behind buttons (fold.js),
  // decided here, before the first paint, so nothing jumps. Without scripts they stay open.
  root.classList.add("js");

  function stored() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }
  }

  function current() {
    var chosen = root.getAttribute("data-theme");
    if (chosen === "light" || chosen === "dark") return chosen;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches
      ? "dark" : "light";
  }

  function label(button) {
    var dark = current() === "dark";
    button.setAttribute("aria-pressed", dark ? "true" : "false");
    button.textContent = dark ? "Light mode" : "Dark mode";
  }

  var saved = stored();
  if (saved === "light" || saved === "dark") root.setAttribute("data-theme", saved);

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-theme-toggle]").forEach(function (button) {
      label(button);
      button.hidden = false;
      button.addEventListener("click", function () {
        var next = current() === "dark" ? "light" : "dark";
        root.setAttribute("data-theme", next);
        try { window.localStorage.setItem(KEY, next); } catch (e) { /* private mode */ }
        label(button);
        document.dispatchEvent(new CustomEvent("theme:changed", { detail: next }));
      });
    });
  });

  window.sawtoothTheme = current;
})();
