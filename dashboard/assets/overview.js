"use strict";
// Overview: the six views with live counts, the failure summary and the
// backlog trend. The view cards are in the page from the start and only
// their numbers change; the chart has a box of fixed proportions; the
// summary, whose length varies, is the last thing of the page on a narrow
// screen: nothing moves when the data arrives.
(() => {
  const { el, $, api, session, live, time, dur, errorBox, VIEWS, mark } = A;
  mark("overview");

  function renderCounts(c) {
    $("#total").textContent = "· " + c.total + " records";
    for (const [v, , , hint] of VIEWS) {
      const card = $("#view-" + v);
      card.querySelector(".n").textContent = String(c.views[v] || 0);
      card.title = hint;
    }
    $("#trend-now").textContent = "now: " + c.due + " due, oldest due for " + dur(c.oldestDueAge);
  }

  function groupQuery(g) {
    const q = new URLSearchParams({ functionContext: g.functionContext, processor: g.processor, function: g.function, errorCode: g.errorCode });
    return q.toString();
  }

  // openSpan is when a group's open failures happened: "5m ago" or
  // "1h ago – 5m ago".
  function openSpan(g) {
    if (!g.oldestFailureAt) return el("span", { class: "muted" }, "none open");
    if (g.oldestFailureAt === g.newestFailureAt) return time(g.oldestFailureAt);
    return el("span", { class: "nowrap" }, time(g.oldestFailureAt), " – ", time(g.newestFailureAt));
  }

  // renderSummary draws the failure groups the live counts carry (the
  // largest first), so the overview costs the server no query of its own.
  function renderSummary(c) {
    const box = $("#summary");
    if (!c.groups.length) { A.fill(box, el("p", { class: "muted" }, "No failures recorded.")); return; }
    const op = A.isOperator();
    const cols = [{ h: "Function" }, { h: "Error code" }, { h: "Total", cls: "num" },
      { h: "Under limit", cls: "num", title: "open records below their retry limit, whatever their recoverability (UNRECOVERABLE ones are never retried by the scheduler)" },
      { h: "Out of retries", cls: "num", title: "open records with every retry used: only an operator moves them on" },
      { h: "Replaying", cls: "num", title: "records with a replay prepared" },
      { h: "Open failures", title: "when the group's open failures last failed: oldest – newest" }];
    if (op) cols.push({ h: "Batch" });
    const rows = c.groups.map(g => ({ cells: [
      [el("a", { href: "/search?" + groupQuery(g) }, g.processor + "." + g.function), el("div", { class: "muted" }, g.functionContext)],
      el("code", {}, g.errorCode || "–"),
      String(g.total), String(g.retryable), String(g.exhausted), String(g.prepared),
      openSpan(g),
    ].concat(op ? [el("a", { href: "/search?" + groupQuery(g) + "#batch", title: "batch-prepare this group's records" }, "Batch…")] : []) }));
    A.fill(box, el("div", { class: "table-wrap" }, A.table({ id: "summary-table" }, cols, rows)),
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
    return el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "due records and oldest due age over the last hour, sampled every " + dur(periodMs) },
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
  }

  function renderTrend(b) {
    A.fill($("#trend"), chart(b.samples, b.periodMs));
    $("#trend-samples").textContent = b.samples.length + (b.samples.length === 1 ? " sample" : " samples") + ", one every " + dur(b.periodMs);
  }

  async function loadTrend() {
    try { renderTrend(await api("GET", "/ui/v1/backlog")); } catch (err) { A.fill($("#trend"), errorBox(err)); }
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
    // The session and the trend are asked for at once; the live stream's
    // first counts follow.
    const trend = api("GET", "/ui/v1/backlog").then(b => () => renderTrend(b), err => () => A.fill($("#trend"), errorBox(err)));
    await session();
    (await trend)();
    live({ counts: c => { renderCounts(c); renderSummary(c); A.ready(); } });
    setInterval(loadTrend, 60000);
    loadQuarantine();
    setInterval(loadQuarantine, 60000);
  }
  start();
})();
