"use strict";
// Overview: the six views with live counts, the failure summary and the
// backlog trend.
(() => {
  const { el, $, api, session, live, time, dur, errorBox, VIEWS, mark } = A;
  mark("overview");

  function renderCounts(c) {
    $("#total").textContent = "· " + c.total + " records";
    A.fill($("#views"), ...VIEWS.map(([v, label, tone]) =>
      el("a", { class: "view-card " + tone, href: "/search?view=" + v, id: "view-" + v, "aria-label": label + ": " + (c.views[v] || 0) + " records" },
        el("div", { class: "n", "data-view": v }, String(c.views[v] || 0)),
        el("div", { class: "label" }, label))));
    $("#trend-now").textContent = "now: " + c.due + " due, oldest due for " + dur(c.oldestDueAge);
  }

  function groupQuery(g) {
    const q = new URLSearchParams({ functionContext: g.functionContext, processor: g.processor, function: g.function, errorCode: g.errorCode });
    return q.toString();
  }

  // renderSummary draws the failure groups the live counts carry (the
  // largest first), so the overview costs the server no query of its own.
  function renderSummary(c) {
    const box = $("#summary");
    if (!c.groups.length) { A.fill(box, el("p", { class: "muted" }, "No failures recorded.")); return; }
    const op = A.isOperator();
    const rows = c.groups.map(g => el("tr", {},
      el("td", {}, el("a", { href: "/search?" + groupQuery(g) }, g.processor + "." + g.function), el("div", { class: "muted" }, g.functionContext)),
      el("td", {}, el("code", {}, g.errorCode || "–")),
      el("td", { class: "num" }, g.total), el("td", { class: "num" }, g.retryable),
      el("td", { class: "num" }, g.exhausted), el("td", { class: "num" }, g.prepared),
      el("td", { class: "nowrap" }, time(g.oldestFailureAt)), el("td", { class: "nowrap" }, time(g.newestFailureAt)),
      op ? el("td", {}, el("a", { href: "/search?" + groupQuery(g) + "#batch", title: "batch-prepare this group's records" }, "Batch…")) : null));
    A.fill(box, el("table", { id: "summary-table" },
      el("thead", {}, el("tr", {}, ["Function", "Error code", "Total", "Retryable", "Exhausted", "Prepared", "Oldest open", "Newest open"].map((h, i) =>
        el("th", { class: i >= 2 && i <= 5 ? "num" : "", scope: "col" }, h)), op ? el("th", { scope: "col" }, "Act") : null)),
      el("tbody", {}, rows)),
      c.groupCount > c.groups.length ? el("p", { class: "muted" }, "The " + c.groups.length + " largest of " + c.groupCount + " groups; narrow them down on the ", el("a", { href: "/search" }, "search page"), ".") : null);
  }

  // chart draws the samples as an inline SVG: due count (left scale) and
  // oldest due age (right scale).
  function chart(samples, periodMs) {
    const W = 520, H = 180, L = 40, R = 44, T = 10, B = 24;
    const now = Date.now(), from = now - 3600000;
    const pts = samples.filter(s => s.at >= from);
    const maxDue = Math.max(1, ...pts.map(s => s.due));
    const maxAge = Math.max(1000, ...pts.map(s => s.oldestDueAge));
    const x = t => L + (W - L - R) * (t - from) / 3600000;
    const yd = v => T + (H - T - B) * (1 - v / maxDue);
    const ya = v => T + (H - T - B) * (1 - v / maxAge);
    const line = (cls, f) => el("polyline", { class: cls, points: pts.map(s => x(s.at).toFixed(1) + "," + f(s).toFixed(1)).join(" ") });
    const svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "due records and oldest due age over the last hour, sampled every " + dur(periodMs) },
      el("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
      el("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
      el("text", { x: L - 4, y: T + 10, "text-anchor": "end" }, String(maxDue)),
      el("text", { x: L - 4, y: H - B, "text-anchor": "end" }, "0"),
      el("text", { x: W - R + 4, y: T + 10 }, dur(maxAge)),
      el("text", { x: L, y: H - 6 }, "-60m"), el("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "-30m"),
      el("text", { x: W - R, y: H - 6, "text-anchor": "end" }, "now"),
      pts.length ? line("due", s => yd(s.due)) : null,
      pts.length ? line("age", s => ya(s.oldestDueAge)) : null,
      pts.map(s => el("circle", { class: "due-pt", cx: x(s.at).toFixed(1), cy: yd(s.due).toFixed(1), r: 2.5 },
        el("title", {}, A.abs(s.at) + ": " + s.due + " due, oldest for " + dur(s.oldestDueAge)))),
      el("title", {}, pts.length + " samples"));
    return svg;
  }

  async function loadTrend() {
    try {
      const b = await api("GET", "/ui/v1/backlog");
      A.fill($("#trend"), chart(b.samples, b.periodMs),
        el("p", { class: "muted" }, b.samples.length + (b.samples.length === 1 ? " sample" : " samples") + ", one every " + dur(b.periodMs)));
    } catch (err) { A.fill($("#trend"), errorBox(err)); }
  }

  // loadQuarantine shows the newest quarantined messages and bucket
  // entries (the API lists them oldest first: the first page of 500 is
  // read and its end shown).
  async function loadQuarantine() {
    try {
      const p = await api("GET", "/api/v1/quarantine?limit=500");
      const entries = p.entries.slice(-20).reverse();
      $("#quar-n").textContent = "· " + p.entries.length + (p.next ? "+" : "") + " entries";
      if (!entries.length) { A.fill($("#quarantine"), el("p", { class: "muted" }, "Nothing quarantined.")); return; }
      const rows = entries.map(e => el("tr", {},
        el("td", { class: "nowrap" }, time(e.at)),
        el("td", {}, e.kind === "kv" ? "bucket " + e.bucket : e.consumer),
        el("td", {}, el("code", {}, e.reason)),
        el("td", {}, e.kind === "kv" ? el("code", {}, e.key) : el("code", {}, e.subject)),
        el("td", { class: "num" }, e.stream + " " + e.seq),
        el("td", {}, e.error)));
      A.fill($("#quarantine"), el("table", { id: "quarantine-table" },
        el("thead", {}, el("tr", {}, ["Quarantined", "Where", "Reason", "Key or subject", "Stream seq", "Why"].map(h => el("th", { scope: "col" }, h)))),
        el("tbody", {}, rows)));
    } catch (err) { A.fill($("#quarantine"), errorBox(err)); }
  }

  async function start() {
    await session();
    live({ counts: c => { renderCounts(c); renderSummary(c); } });
    loadTrend();
    setInterval(loadTrend, 60000);
    loadQuarantine();
    setInterval(loadQuarantine, 60000);
  }
  start();
})();
