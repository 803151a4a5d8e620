(function () {
  "use strict";
  var KEYS = ["id", "phase", "title", "agent", "score", "verdict"];
  var SEARCHED = [0, 1, 2, 3];
  var table = document.getElementById("cases");
  if (!table) { return; }
  var bodies = Array.prototype.slice.call(table.tBodies);
  var query = document.getElementById("q");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[name=verdict]"));
  var heads = Array.prototype.slice.call(table.tHead.querySelectorAll("th[data-key]"));
  var shown = document.getElementById("shown");
  var state = read();

  function read() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    var verdicts = null;
    params.getAll("verdict").forEach(function (value) {
      value.split(",").forEach(function (v) {
        v = v.trim().toUpperCase();
        if (v) { (verdicts = verdicts || []).push(v); }
      });
    });
    var sort = params.get("sort") || "";
    var desc = sort.charAt(0) === "-";
    if (desc) { sort = sort.slice(1); }
    if (KEYS.indexOf(sort) < 0) { sort = ""; desc = false; }
    return { q: params.get("q") || "", verdicts: verdicts, sort: sort, desc: desc };
  }

  function write() {
    var parts = [];
    if (state.verdicts) { parts.push("verdict=" + (state.verdicts.join(",") || "none")); }
    if (state.q) { parts.push("q=" + encodeURIComponent(state.q)); }
    if (state.sort) { parts.push("sort=" + (state.desc ? "-" : "") + state.sort); }
    var url = location.pathname + location.search + (parts.length ? "#" + parts.join("&") : "");
    try { history.replaceState(null, "", url); } catch (e) { /* some browsers refuse on file: */ }
  }

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function sortKey(body) {
    var cell = body.rows[0].cells[KEYS.indexOf(state.sort)];
    return state.sort === "score" ? parseFloat(cell.getAttribute("data-score")) : cell.textContent.trim();
  }

  function compare(x, y) {
    if (state.sort !== "score") { return state.desc ? collator.compare(y, x) : collator.compare(x, y); }
    if (isNaN(x) || isNaN(y)) { return (isNaN(x) ? 1 : 0) - (isNaN(y) ? 1 : 0); }  /* no score: last */
    return state.desc ? y - x : x - y;
  }

  function apply() {
    var needle = state.q.toLowerCase();
    var visible = 0;
    bodies.forEach(function (body) {
      var text = SEARCHED.map(function (i) { return body.rows[0].cells[i].textContent; });
      var hit = !needle || text.join("\n").toLowerCase().indexOf(needle) >= 0;
      var kept = !state.verdicts || state.verdicts.indexOf(body.getAttribute("data-verdict")) >= 0;
      body.hidden = !(hit && kept);
      if (!body.hidden) { visible += 1; }
    });
    var ordered = bodies.map(function (body, i) { return { body: body, i: i, key: state.sort && sortKey(body) }; });
    if (state.sort) {
      ordered.sort(function (a, b) { return compare(a.key, b.key) || a.i - b.i; });
    }
    ordered.forEach(function (o) { table.appendChild(o.body); });
    heads.forEach(function (th) {
      var key = th.getAttribute("data-key");
      if (key === state.sort) {
        th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
    if (query.value !== state.q) { query.value = state.q; }
    boxes.forEach(function (box) { box.checked = !state.verdicts || state.verdicts.indexOf(box.value) >= 0; });
    shown.textContent = visible + " of " + bodies.length;
  }

  query.addEventListener("input", function () { state.q = query.value; apply(); write(); });
  boxes.forEach(function (box) {
    box.addEventListener("change", function () {
      var checked = boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      state.verdicts = checked.length === boxes.length ? null : checked;
      apply(); write();
    });
  });
  heads.forEach(function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      apply(); write();
    });
  });
  window.addEventListener("hashchange", function () { state = read(); apply(); });
  document.getElementById("controls").hidden = false;
  apply();
})();
