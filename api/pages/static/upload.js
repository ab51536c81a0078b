// The upload page: the files chosen or dropped wait for Upload; then each goes up on its own XMLHttpRequest (one at
// a time) to the project selected when Upload was clicked, its row showing the project, the upload's progress, then
// the recording's processing stage (polled as the recording page does) until it is completed or failed. Without
// script the form posts one file and the server answers with the recording's page.
"use strict";
(function () {
  var form = document.getElementById("upload-form");
  if (!form) return;
  var input = document.getElementById("u-file"), drop = document.getElementById("drop");
  var table = document.getElementById("uploads"), rows = table.querySelector("tbody");
  var queue = Promise.resolve();

  function cell(row, label) {
    var td = document.createElement("td");
    td.dataset.label = label;
    row.appendChild(td);
    return td;
  }

  function stage(row, status, text) {
    var badge = row.querySelector(".status");
    badge.className = "status status-" + status;
    badge.textContent = text || status;
    row.dataset.status = status;
  }

  function poll(row, state) {
    function later(ms) { setTimeout(function () { poll(row, state); }, ms); }
    fetch(state, {credentials: "same-origin", headers: {Accept: "application/json"}}).then(function (resp) {
      if (resp.status === 401) { stage(row, "failed", "signed out: sign in again"); return; }
      if (!resp.ok) { later(3000); return; }
      return resp.json().then(function (s) {
        var text = s.status === "processing" ? "processing · " + s.stage_name + " " + (s.progress || 0) + "%"
          : s.status === "failed" && s.status_reason ? "failed: " + s.status_reason : s.status;
        stage(row, s.status, text);
        if (s.status !== "completed" && s.status !== "failed") later(1000);
      });
    }).catch(function () { later(3000); });
  }

  function send(file, project, row) {
    return new Promise(function (done) {
      var bar = row.querySelector("progress"), said = row.querySelector(".pct");
      stage(row, "uploading");
      said.textContent = "0%";
      var body = new FormData();
      body.append("csrf", form.elements.csrf.value);  // before the file: refused before any audio is kept
      body.append("project_id", project);
      body.append("file", file, file.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", function (e) {
        if (!e.lengthComputable) return;
        var pct = Math.floor(e.loaded / e.total * 100);
        bar.value = pct;
        said.textContent = pct + "%";
      });
      xhr.addEventListener("load", function () {
        if (xhr.responseURL.indexOf("/sign-in") !== -1) {  // the session ended: the answer is the sign-in page
          stage(row, "failed", "signed out: sign in again");
          done();
          return;
        }
        var answer = {};
        try { answer = JSON.parse(xhr.responseText); } catch (e) { answer = {error: "Unexpected answer (" + xhr.status + ")"}; }
        if (xhr.status === 201 || xhr.status === 200) {
          bar.value = 100;
          said.textContent = "100%";
          var link = document.createElement("a");
          link.href = answer.url;
          link.textContent = file.name;
          var name = row.querySelector(".name");
          name.textContent = "";
          name.appendChild(link);
          stage(row, answer.status);
          poll(row, answer.state);
        } else {
          stage(row, "failed", "refused: " + (answer.error || xhr.status));
        }
        done();
      });
      xhr.addEventListener("error", function () { stage(row, "failed", "upload interrupted"); done(); });
      xhr.send(body);
    });
  }

  function add(file, project) {
    var row = document.createElement("tr");
    var name = cell(row, "File");
    name.className = "name";
    name.textContent = file.name;
    cell(row, "Project").textContent = project.name;
    var progress = cell(row, "Upload");
    progress.innerHTML = '<progress max="100" value="0"></progress> <span class="pct">waiting</span>';
    progress.querySelector("progress").setAttribute("aria-label", "Upload of " + file.name);
    cell(row, "Stage").innerHTML = '<span class="status">queued</span>';
    rows.appendChild(row);
    table.hidden = false;
    queue = queue.then(function () { return send(file, project.id, row); });
  }

  function addAll(files) {
    var select = form.elements.project_id;  // read at the click: a project changed after choosing counts
    var project = {id: select.value, name: select.options[select.selectedIndex].text};
    Array.prototype.forEach.call(files, function (file) { add(file, project); });
    input.value = "";
  }

  input.multiple = true;
  input.required = false;
  document.querySelectorAll(".js-only").forEach(function (el) { el.hidden = false; });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!input.files.length) { input.focus(); return; }
    addAll(input.files);
  });
  ["dragenter", "dragover"].forEach(function (type) {
    drop.addEventListener(type, function (event) { event.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    drop.addEventListener(type, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (event) {  // dropped files are chosen, as if picked: Upload sends them
    event.preventDefault();
    input.files = event.dataTransfer.files;
  });
})();
