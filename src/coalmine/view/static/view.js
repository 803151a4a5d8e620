// coalmine view: the one script of every page. It holds no run data; it reads the page.
(function () {
  "use strict";
  // A run in progress: poll its progress, reload when it ends.
  var progress = document.getElementById("progress");
  if (progress && progress.getAttribute("data-progress")) {
    var url = progress.getAttribute("data-progress");
    var tick = function () {
      fetch(url, { headers: { "Accept": "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (p) {
          progress.textContent = "Running: " + p.stored + " stored so far.";
          if (p.status !== "running") { location.reload(); } else { setTimeout(tick, 2000); }
        })
        .catch(function () { setTimeout(tick, 5000); });
    };
    setTimeout(tick, 2000);
  }
  var runs = document.getElementById("runs");
  if (runs && runs.getAttribute("data-live")) { setTimeout(function () { location.reload(); }, 5000); }
  // Compare: a changed case's diff is drawn by the server when it is first opened (the markup
  // comes from the same origin, its every text escaped there).
  Array.prototype.forEach.call(document.querySelectorAll("details.lazy-diff"), function (d) {
    d.addEventListener("toggle", function () {
      if (!d.open || d.getAttribute("data-loaded")) { return; }
      d.setAttribute("data-loaded", "1");
      fetch(d.getAttribute("data-src"))
        .then(function (r) { return r.text(); })
        .then(function (html) { d.querySelector("pre.diff").innerHTML = html; });
    });
  });
  // Labelling: p / f / u / s answer, n goes to the note, Escape leaves it.
  var form = document.getElementById("label-form");
  if (form) {
    var note = document.getElementById("note");
    document.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) { return; }
      if (document.activeElement === note) {
        if (e.key === "Escape") { note.blur(); }
        return;
      }
      if (e.key === "n") { e.preventDefault(); note.focus(); return; }
      var button = form.querySelector('button[data-key="' + e.key + '"]');
      if (button) { e.preventDefault(); button.click(); }
    });
  }
})();
