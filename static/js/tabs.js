// Tabs over a page's sections ([data-tabs]): each [data-tab] link names its panel by its
// href ("#findings"). Without this script the links jump to panels that are all shown; with
// it one panel shows at a time (the first, unless the address names another or an element
// inside one), arrow keys move between tabs, and the chosen tab is kept in the address.
(function () {
  "use strict";

  function setUp(root) {
    var list = root.querySelector("[data-tablist]");
    var tabs = Array.prototype.slice.call(root.querySelectorAll("[data-tab]"));
    var panels = tabs.map(function (tab) {
      return document.getElementById(tab.getAttribute("href").slice(1));
    });
    if (!list || !tabs.length || panels.indexOf(null) !== -1) { return; }

    list.setAttribute("role", "tablist");
    tabs.forEach(function (tab, n) {
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", panels[n].id);
      panels[n].setAttribute("role", "tabpanel");
      panels[n].setAttribute("aria-labelledby", tab.id);
      panels[n].tabIndex = -1;
    });

    function select(index, remember) {
      tabs.forEach(function (tab, n) {
        var on = n === index;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
        panels[n].hidden = !on;
      });
      if (remember) {
        var hash = index === 0 ? " " : "#" + panels[index].id;
        history.replaceState(null, "", hash === " " ? window.location.pathname + window.location.search : hash);
      }
    }

    function holding(el) {
      for (var n = 0; n < panels.length; n++) {
        if (panels[n] === el || panels[n].contains(el)) { return n; }
      }
      return -1;
    }

    tabs.forEach(function (tab, n) {
      tab.addEventListener("click", function (event) {
        event.preventDefault();
        select(n, true);
      });
      tab.addEventListener("keydown", function (event) {
        var step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
        var to = event.key === "Home" ? 0 : event.key === "End" ? tabs.length - 1 :
          step ? (n + step + tabs.length) % tabs.length : -1;
        if (to < 0) { return; }
        event.preventDefault();
        select(to, true);
        tabs[to].focus();
      });
    });

    // Land on the panel the address points into (#findings, #comment-3, #seq-40), else the first.
    function land() {
      var id = decodeURIComponent(window.location.hash.slice(1));
      var target = id ? document.getElementById(id) : null;
      var index = target ? holding(target) : -1;
      select(index < 0 ? 0 : index, false);
      return target;
    }
    land();
    window.addEventListener("hashchange", function () {
      var target = land();
      if (target) { target.scrollIntoView({ block: "start" }); }
    });
  }

  document.querySelectorAll("[data-tabs]").forEach(setUp);
})();
