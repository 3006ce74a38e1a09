// pobo console: keeps the pages people wait on current without a reload. Served by the console itself (the page's
// Content-Security-Policy allows this script and no other). Every 2 s it asks /console/live how many measurements
// wait (the count in the navigation) and a version that changes when a query is asked, answered or corrected or a
// session opens or closes; on a change it fetches this page again and replaces each region marked data-live, keeping
// any row (data-key) in which the person has typed or that has the focus, so nothing typed is lost.
(function () {
  "use strict";
  var POLL_MS = 2000;
  var version = document.body.getAttribute("data-live-version");

  function busy(row) {
    if (row.contains(document.activeElement)) return true;
    return Array.prototype.some.call(row.querySelectorAll("input:not([type=hidden]), textarea"), function (input) {
      return input.type === "file" ? input.files.length > 0 : input.value !== "";
    });
  }

  function merge(region, fresh) {
    var kept = {};
    region.querySelectorAll("[data-key]").forEach(function (row) {
      if (busy(row)) kept[row.getAttribute("data-key")] = row;
    });
    var replacement = document.importNode(fresh, true);
    replacement.querySelectorAll("[data-key]").forEach(function (row) {
      var old = kept[row.getAttribute("data-key")];
      if (old) row.replaceWith(old);
    });
    region.replaceWith(replacement);
  }

  function refresh() {
    return fetch(window.location.href, {credentials: "same-origin"}).then(function (response) {
      if (!response.ok || response.redirected) return;
      return response.text().then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (region) {
          var fresh = page.querySelector('[data-live="' + region.getAttribute("data-live") + '"]');
          if (fresh) merge(region, fresh);
        });
      });
    });
  }

  function tick() {
    fetch("/console/live", {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) {
        var json = (response.headers.get("content-type") || "").indexOf("application/json") === 0;
        if (!response.ok || !json) return null;  // logged out: the next page view asks to log in
        return response.json();
      })
      .then(function (state) {
        if (!state) return;
        var count = document.getElementById("waiting-count");
        if (count) {
          count.textContent = String(state.waiting);
          count.classList.toggle("zero", state.waiting === 0);
        }
        if (state.version !== version) {
          version = state.version;
          if (document.querySelector("[data-live]")) return refresh();
        }
      })
      .catch(function () { /* the server is restarting or unreachable: try again at the next tick */ })
      .then(function () { window.setTimeout(tick, POLL_MS); });
  }

  window.setTimeout(tick, POLL_MS);
})();
