// The recording page: seek by segment, word, quote, timeline or a link's #t=SECONDS (which also marks the segment
// said then); follow and highlight the segment being played; search the transcript; while the analysis (or a
// re-analysis) runs, poll its state and swap in the page with the transcript once it is final, then the finished
// page (no reload). While the call is live, follow its
// events instead (the transcript growing, goals ticked, alerts, who is speaking); once it ends, poll the analysis as
// for a pending call.
"use strict";
(function () {
  var audio, segments, starts, current = -1, hits = [], hit = -1, polling = null, renewed = 0, source = null;

  function clock(ms) {
    var s = Math.floor(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    return (h ? h + ":" : "") + mm + ":" + String(r).padStart(2, "0");
  }

  function seek(ms) {
    if (!audio) return;
    audio.currentTime = ms / 1000;
    var playing = audio.play();
    if (playing && playing.catch) playing.catch(function () {});  // a browser may refuse to play; the seek stays
    show(ms);
  }

  // The index of the last segment starting at or before ms (binary search over the start times).
  function segmentAt(ms) {
    var lo = 0, hi = starts.length - 1, found = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (starts[mid] <= ms) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return found;
  }

  function show(ms) {
    var timeline = document.getElementById("timeline");
    if (timeline) {
      var duration = Number(timeline.dataset.duration) || 1;
      document.getElementById("playhead").style.left = Math.min(100, ms / duration * 100) + "%";
      timeline.setAttribute("aria-valuenow", String(Math.floor(ms / 1000)));
      timeline.setAttribute("aria-valuetext", clock(ms));
    }
    var i = segmentAt(ms);
    if (i >= 0 && ms > Number(segments[i].dataset.end) + 1500) i = -1;  // in a silence: nothing is highlighted
    if (i === current) return;
    if (current >= 0) { segments[current].classList.remove("current"); segments[current].removeAttribute("aria-current"); }
    current = i;
    if (i < 0) return;
    segments[i].classList.add("current");
    segments[i].setAttribute("aria-current", "true");
    var follow = document.getElementById("follow");
    if (follow && follow.checked) segments[i].scrollIntoView({block: "nearest", behavior: "smooth"});
  }

  function onClick(event) {
    var target = event.target.closest("[data-seek]");
    if (target) { seek(Number(target.dataset.seek)); return; }
    var word = event.target.closest(".seg .text span");
    if (word) {
      var seg = word.closest(".seg"), offsets = seg.dataset.w.split(",");
      var index = Array.prototype.indexOf.call(word.parentNode.children, word);
      seek(Number(seg.dataset.start) + Number(offsets[index] || 0));
      return;
    }
    var timeline = event.target.closest("#timeline");
    if (timeline) {
      var box = timeline.querySelector(".track").getBoundingClientRect();
      var fraction = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
      seek(fraction * Number(timeline.dataset.duration));
    }
  }

  function onKey(event) {
    if (event.target.id !== "timeline" || !audio) return;
    var step = {ArrowLeft: -5000, ArrowRight: 5000, PageDown: -30000, PageUp: 30000}[event.key];
    if (event.key === "Home") step = -audio.currentTime * 1000;
    if (step === undefined) return;
    event.preventDefault();
    seek(Math.max(0, audio.currentTime * 1000 + step));
  }

  function search() {
    var q = document.getElementById("search").value.trim().toLowerCase();
    hits = []; hit = -1;
    for (var i = 0; i < segments.length; i++) {
      var match = q !== "" && segments[i].querySelector(".text").textContent.toLowerCase().indexOf(q) >= 0;
      segments[i].classList.toggle("hit", match);
      segments[i].classList.toggle("dim", q !== "" && !match);
      if (match) hits.push(segments[i]);
    }
    document.getElementById("hits").textContent = q ? hits.length + (hits.length === 1 ? " match" : " matches") +
      (hits.length ? " · Enter for the next" : "") : "";
  }

  function nextHit(event) {
    if (event.key !== "Enter" || !hits.length) return;
    event.preventDefault();
    hit = (hit + (event.shiftKey ? hits.length - 1 : 1)) % hits.length;
    hits[hit].scrollIntoView({block: "center"});
    hits[hit].querySelector(".ts").focus({preventScroll: true});
  }

  function state() {
    var main = document.getElementById("main");
    return fetch(main.dataset.stateUrl, {credentials: "same-origin", cache: "no-store"}).then(function (r) {
      if (r.status === 401) { location.reload(); return null; }  // signed out or thrown out: the sign-in page
      return r.ok ? r.json() : null;
    });
  }

  // The audio URL expires (it is signed for a while): on an error, take a fresh one and carry on where it was.
  function renewAudio() {
    if (Date.now() - renewed < 10000) return;
    renewed = Date.now();
    var at = audio.currentTime, playing = !audio.paused;
    state().then(function (s) {
      if (!s || !s.audio_url) return;
      audio.src = s.audio_url;
      audio.addEventListener("loadedmetadata", function () {
        audio.currentTime = at;
        if (playing) audio.play().catch(function () {});
      }, {once: true});
    });
  }

  function poll() {
    state().then(function (state) {
      if (!state) return;
      var stage = document.getElementById("stage"), progress = document.getElementById("progress");
      if (stage) stage.textContent = state.stage_name;
      if (progress) { progress.value = state.progress || 0; progress.textContent = (state.progress || 0) + "%"; }
      document.getElementById("status-badge").textContent = state.status;
      var main = document.getElementById("main"), again = main.dataset.reanalysing === "true";
      if (again ? !state.reanalysing : state.status === "completed" || state.status === "failed") swapIn();
      else if (state.transcript_ready && main.dataset.draft !== "true") swapIn();  // the transcript before the rest
    }).catch(function () {});
  }

  // The finished page replaces this one's main part, in place.
  function swapIn() {
    clearInterval(polling); polling = null;
    fetch(location.href, {credentials: "same-origin", cache: "no-store"}).then(function (r) { return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        if (!fresh) return;
        var main = document.getElementById("main");
        main.replaceWith(document.importNode(fresh, true));
        init();
      });
  }

  // An action's outcome is said once: the address loses its `done` (a reload or the finished page fetched in
  // place does not say it again); a refused action's reason, beside its form, takes the focus.
  function actionsShown() {
    var url = new URL(location.href);
    if (url.searchParams.has("done")) {
      url.searchParams.delete("done");
      url.searchParams.delete("share");
      history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    }
    var problem = document.getElementById("action-problem");
    if (problem) problem.focus();
  }

  // A link to a moment of the call (a search hit's: #t=SECONDS) opens the page with the player there and the
  // segment said then marked, scrolled into view and its timestamp focused (Enter plays from it).
  function startAt() {
    var found = /^#t=(\d+(?:\.\d+)?)$/.exec(location.hash);
    if (!found) return;
    var ms = Math.round(Number(found[1]) * 1000);
    markMoment(ms);
    if (!audio) return;
    function go() { audio.currentTime = ms / 1000; show(ms); }
    if (audio.readyState >= 1) go(); else audio.addEventListener("loadedmetadata", go, {once: true});
  }

  function markMoment(ms) {
    var marked = document.querySelector("#segments .seg.moment");
    if (marked) marked.classList.remove("moment");
    var i = segmentAt(ms);
    if (i < 0) return;
    var segment = segments[i];
    segment.classList.add("moment");
    segment.scrollIntoView({block: "center"});
    segment.querySelector(".ts").focus({preventScroll: true});
    // the segments above it are drawn as they near the viewport (content-visibility), which moves it: again, once
    requestAnimationFrame(function () { segment.scrollIntoView({block: "center"}); });
  }

  // ----- a live call: its events (Server-Sent Events of /recordings/<id>/live) -----

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function speakerOf(label) {
    var li = document.querySelector('#speaking li[data-speaker="' + CSS.escape(label || "") + '"]');
    return li ? {title: li.dataset.title, index: li.dataset.index, li: li} : {title: label || "", index: "0", li: null};
  }

  function talking(label, on) {
    var who = speakerOf(label);
    if (!who.li) return;
    who.li.classList.toggle("talking", on);
    who.li.querySelector(".talk").textContent = on ? "speaking" : "silent";
  }

  // An utterance of the transcript: its start, its speaker, its words (filled in by the caller).
  function utterance(event, kind) {
    var who = speakerOf(event.speaker), li = el("li", "seg sp" + who.index + " " + kind);
    li.dataset.speaker = event.speaker;
    var head = el("div", "seg-head");
    head.appendChild(el("span", "ts", clock(event.start * 1000)));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "who", who.title));
    li.appendChild(head);
    li.appendChild(el("p", "text"));
    return li;
  }

  function said(li) {
    document.getElementById("live-empty").hidden = true;
    var follow = document.getElementById("follow");
    if (follow && follow.checked) li.scrollIntoView({block: "nearest"});
  }

  function partialOf(speaker) {
    return document.querySelector('#live-partials li[data-speaker="' + CSS.escape(speaker) + '"]');
  }

  var onLive = {
    // the words so far: the confirmed ones, then the rest, which may still change (shown as such)
    partial: function (e) {
      var li = partialOf(e.speaker);
      if (!li) { li = utterance(e, "partial"); document.getElementById("live-partials").appendChild(li); }
      var text = li.querySelector(".text"), rest = e.text.slice(e.stable.length).trim();
      text.textContent = e.stable;
      if (rest) text.appendChild(el("span", "tentative", (e.stable ? " " : "") + rest));
      talking(e.speaker, true);
      said(li);
    },
    // an utterance closed: it replaces its partial, never to change
    final: function (e) {
      var partial = partialOf(e.speaker);
      if (partial) partial.remove();
      var li = utterance(e, "final");
      li.querySelector(".text").textContent = e.text;
      document.getElementById("live-segments").appendChild(li);
      talking(e.speaker, false);
      said(li);
    },
    goal: function (e) {
      var li = document.querySelector('#live-goals li[data-goal-id="' + Number(e.goal_id) + '"]');
      if (!li) return;
      li.classList.remove("pending");
      li.classList.add("met");
      li.querySelector(".badge").textContent = "Met at " + clock(e.start * 1000);
      li.querySelector(".evidence").appendChild(el("li", "quote", "\u201c" + e.quote + "\u201d"));
    },
    alert: function (e) {
      var li = el("li", "card alert alert-" + e.kind);
      li.appendChild(el("h3", "", e.name));
      var what = e.kind === "silence"
        ? "nobody spoke for " + Math.round(e.seconds) + " s (over " + e.threshold + " s)"
        : speakerOf(e.speaker).title + (e.kind === "emotion" ? " sounded " + e.emotion + ": " : " said ")
          + "\u201c" + e.quote + "\u201d";
      li.appendChild(el("p", "", clock(e.start * 1000) + " \u00b7 " + what));
      document.getElementById("live-alerts").appendChild(li);
      document.getElementById("no-alerts").hidden = true;
    },
    // live recognition stopped (its worker lost, no room): the call goes on, analysed in full once it ends
    recognition_stopped: function (e) {
      document.getElementById("live-partials").textContent = "";
      document.getElementById("live-status").textContent = e.message;
    },
    end: function (e) {
      source.close();
      source = null;
      document.getElementById("live-partials").textContent = "";
      Array.prototype.forEach.call(document.querySelectorAll("#speaking li"), function (li) {
        talking(li.dataset.speaker, false);
      });
      document.getElementById("status-badge").textContent = "ended";
      document.getElementById("live-h").textContent = "This call has ended";
      var status = document.getElementById("live-status");
      if (!e.stored) { status.textContent = e.error || "Its recording was not stored."; return; }
      status.textContent = "Its recording is being analysed.";
      document.getElementById("after-call").hidden = false;
      if (!polling) polling = setInterval(poll, 2000);
    }
  };

  function followLive(main) {
    source = new EventSource(main.dataset.liveUrl);
    Object.keys(onLive).forEach(function (type) {
      source.addEventListener(type, function (message) {
        var event = JSON.parse(message.data);
        document.getElementById("live-length").textContent = clock(event.at * 1000);
        onLive[type](event);
      });
    });
    source.onerror = function () {  // the browser reconnects by itself unless the server refused (signed out)
      if (source && source.readyState === EventSource.CLOSED) {
        document.getElementById("live-status").textContent = "The call's events stopped coming: reload the page.";
      }
    };
  }

  function init() {
    var main = document.getElementById("main");
    audio = document.getElementById("audio");
    segments = Array.prototype.slice.call(document.querySelectorAll("#segments .seg"));
    starts = segments.map(function (s) { return Number(s.dataset.start); });
    current = -1;
    if (audio) {
      audio.addEventListener("timeupdate", function () { show(audio.currentTime * 1000); });
      audio.addEventListener("error", renewAudio);
      startAt();
    }
    var box = document.getElementById("search");
    if (box) { box.addEventListener("input", search); box.addEventListener("keydown", nextHit); }
    var status = main.dataset.status;
    if ((status === "pending" || status === "processing" || main.dataset.reanalysing === "true") && !polling) {
      polling = setInterval(poll, 2000);
    }
    actionsShown();
    if (status === "live" && !source) followLive(main);
    document.documentElement.dataset.ready = status;
    if (window.performance && performance.mark) performance.mark("callscope-ready");
  }

  document.addEventListener("click", onClick);
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", startAt);
  init();
})();
