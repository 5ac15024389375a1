// Times in the viewer's zone: each <time data-local> (from the `when` template filter) is
// rendered in UTC with "UTC" said, so it reads right without JavaScript; here it is rewritten
// in the browser's zone with that zone's abbreviation ("2026-11-20 09:00 GMT-3", "… CET").
// Forms with a [data-tz] hidden field send the browser's IANA zone, so a datetime-local the
// viewer typed is read in their zone; [data-tz-label] says which zone that is.
(function () {
  "use strict";

  var zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (e) {
    zone = "";
  }

  function parts(date, withSeconds) {
    var options = {
      year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short",
    };
    if (withSeconds) options.second = "2-digit";
    var out = {};
    new Intl.DateTimeFormat("en-US", options).formatToParts(date).forEach(function (p) {
      out[p.type] = p.value;
    });
    return out;
  }

  function local(date, style) {
    var p = parts(date, style === "seconds" || style === "clock" || style === "ago");
    var day = p.year + "-" + p.month + "-" + p.day;
    if (style === "date") return day;
    var clock = p.hour + ":" + p.minute + (p.second ? ":" + p.second : "");
    if (style === "clock") return clock + " " + p.timeZoneName;
    return day + " " + clock + " " + p.timeZoneName;
  }

  function zoneName() {
    return parts(new Date(), false).timeZoneName || zone;
  }

  function rewrite(root) {
    root.querySelectorAll("time[data-local]").forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) return;
      var style = el.getAttribute("data-local");
      if (style === "ago" || style === "clock") {
        if (style === "clock") el.textContent = local(date, style);
        el.setAttribute("title", local(date, "seconds"));
      } else {
        el.textContent = local(date, style);
        el.setAttribute("title", date.toISOString().replace(".000Z", "Z"));
      }
    });
    if (!zone) return;
    root.querySelectorAll("input[data-tz]").forEach(function (el) {
      el.value = zone;
    });
    root.querySelectorAll("[data-tz-label]").forEach(function (el) {
      el.textContent = "(your time, " + zoneName() + ")";
    });
  }

  function start() {
    rewrite(document);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  document.addEventListener("htmx:afterSwap", function (event) {
    rewrite(event.target);
  });
})();
