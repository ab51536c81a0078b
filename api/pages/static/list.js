// The recordings list: each call still waiting or being analysed says where its analysis is, polled from its
// recording page's state (as that page polls it), until it is completed or failed; no reload needed. On a phone the
// filters are folded (unless one is set), so the calls are on the first screen.
"use strict";
(function () {
  var filters = document.getElementById("filters-box");
  if (filters && window.matchMedia("(max-width: 600px)").matches && !filters.querySelector("summary .muted")) {
    filters.open = false;
  }
  var waiting = Array.prototype.slice.call(document.querySelectorAll(".status[data-state]"));
  if (!waiting.length) return;

  function show(badge, s) {
    badge.className = "status status-" + s.status;
    badge.textContent = s.status === "processing" ? "processing · " + s.stage_name + " " + (s.progress || 0) + "%"
      : s.status === "failed" && s.status_reason ? "failed: " + s.status_reason : s.status;
  }

  function poll() {
    waiting = waiting.filter(function (badge) { return badge.hasAttribute("data-state"); });
    if (!waiting.length) return;
    Promise.all(waiting.map(function (badge) {
      return fetch(badge.dataset.state, {credentials: "same-origin", headers: {Accept: "application/json"}})
        .then(function (resp) { return resp.ok ? resp.json() : null; })
        .then(function (s) {
          if (!s) return;
          show(badge, s);
          if (s.status === "completed" || s.status === "failed") badge.removeAttribute("data-state");
        }).catch(function () {});
    })).then(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 1500);
})();
