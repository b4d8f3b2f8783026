"use strict";
// Overview: the six views with live counts, the failure summary and the
// backlog trend. The view cards are in the page from the start and only
// their numbers change; the chart has a box of fixed proportions; the
// summary, whose length varies, is the last thing of the page on a narrow
// screen: nothing moves when the data arrives.
(() => {
  const { el, $, api, session, live, time, dur, errorBox, VIEWS, mark } = A;
  // Overview: also each function's circuit (a column of the summary).
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

  // circuits are the functions' circuits by CONTEXT.PROCESSOR.NAME, read
  // every few seconds; null when the server keeps none.
  let circuits = new Map();
  let lastCounts = null;

  async function loadCircuits() {
    try {
      const l = await api("GET", "/api/v1/circuits");
      circuits = new Map(l.circuits.map(c => [c.function, c]));
    } catch (err) {
      if (err.status === 404) circuits = null;
      else return; // keep what we have; the next refresh tries again
    }
    if (lastCounts) renderSummary(lastCounts);
    renderIncidents();
  }

  const PHASE = A.PHASE;

  // renderIncidents fills the incidents strip: the circuits not closed,
  // how many FAILED records their functions have (they wait for the
  // circuit), the drains running and the aggregates held. A part the
  // server does not keep reads "–".
  async function renderIncidents() {
    const set = (id, n, tip) => {
      const a = $("#" + id);
      a.querySelector(".n").textContent = n === null ? "–" : String(n);
      a.classList.toggle("none", !n);
      if (tip) a.title = tip;
    };
    const open = circuits ? [...circuits.values()].filter(c => c.phase !== "CLOSED") : null;
    set("inc-open", open ? open.length : null, open ? open.map(c => c.function).join(", ") : "this server keeps no circuits");
    if (open) {
      const first = open.slice(0, 20);
      try {
        const counts = await Promise.all(first.map(c => api("GET", "/api/v1/count?" + new URLSearchParams({ functionContext: c.context, processor: c.processor, function: c.name, status: "FAILED" })).then(r => r.count)));
        const n = counts.reduce((a, b) => a + b, 0);
        set("inc-waiting", n, "FAILED records of the functions whose circuit is not closed" + (open.length > first.length ? " (the first 20 circuits)" : ""));
        if (open.length === 1) $("#inc-waiting").href = A.circuitHref(open[0].function);
      } catch (_) { /* the next refresh tries again */ }
    } else set("inc-waiting", null);
    const [d, h] = await Promise.allSettled([api("GET", "/api/v1/drains"), api("GET", "/api/v1/holds?limit=1000")]);
    set("inc-drains", d.status === "fulfilled" ? d.value.drains.filter(x => x.phase !== "done").length : null);
    if (h.status === "fulfilled") {
      set("inc-held", h.value.holds.length);
      if (h.value.more) $("#inc-held .n").textContent = h.value.holds.length + "+";
    } else set("inc-held", null);
  }

  // circuitCell shows a function's circuit: its state, since when it is
  // open and how many calls it refused, and, for an operator, a form to
  // open or close it with a reason.
  function circuitCell(g, op) {
    if (circuits === null) return el("span", { class: "muted" }, "–");
    const key = g.functionContext + "." + g.processor + "." + g.function;
    const c = circuits.get(key) || { function: key, phase: "CLOSED", refused: 0 };
    // Closed is the usual state: plain text; the others stand out.
    const out = [c.phase === "CLOSED"
      ? el("span", { class: "muted", "data-circuit": key }, PHASE[c.phase])
      : el("span", { class: "badge c-" + c.phase, "data-circuit": key, title: c.forced ? "opened by an operator: no probe closes it" : "" }, PHASE[c.phase] || c.phase)];
    if (c.phase !== "CLOSED") {
      out.push(el("div", { class: "muted" }, "since ", A.incidentSince(c)), el("div", { class: "muted" }, c.refused + " refused"),
        el("a", { href: A.circuitHref(key), class: "incident-link" }, "Incident…"));
    }
    if (!op) return out;
    const verb = c.phase === "CLOSED" ? "open" : "close";
    const reason = el("input", { class: "circuit-reason", placeholder: "why (required)", "aria-label": "reason to " + verb + " the circuit of " + key, required: true });
    const result = el("div", { class: "circuit-result" });
    const send = async () => {
      if (!reason.value.trim()) { A.fill(result, errorBox(new Error("Say why: opening and closing circuits is audited."))); reason.focus(); return; }
      try {
        const ch = await api("POST", "/api/v1/circuits/" + encodeURIComponent(key) + "/" + verb, { reason: reason.value.trim() });
        circuits.set(key, ch.circuit);
        A.fill(result, el("span", { class: "muted" }, ch.changed ? "now " + PHASE[ch.circuit.phase] : "already " + PHASE[ch.circuit.phase]));
        pending.delete(key);
        if (lastCounts) renderSummary(lastCounts);
      } catch (err) { A.fill(result, errorBox(err)); }
    };
    const form = el("details", { class: "circuit-act", "data-function": key },
      el("summary", {}, verb === "open" ? "Open…" : "Close…"),
      el("div", { class: "circuit-form" }, reason,
        el("button", { type: "button", class: verb === "open" ? "danger" : "primary", onclick: send },
          verb === "open" ? "Open circuit" : "Close circuit")), result);
    // An open form and a half-typed reason survive the refreshes.
    const kept = pending.get(key);
    if (kept && kept.verb === verb) { form.open = kept.open; reason.value = kept.reason; }
    form.addEventListener("toggle", () => remember(key, verb, form, reason));
    reason.addEventListener("input", () => remember(key, verb, form, reason));
    out.push(form);
    return out;
  }

  const pending = new Map();
  function remember(key, verb, form, reason) {
    if (form.open || reason.value) pending.set(key, { verb, open: form.open, reason: reason.value });
    else pending.delete(key);
  }

  // renderSummary draws the failure groups the live counts carry (the
  // largest first), so the overview costs the server no query of its own.
  function renderSummary(c) {
    lastCounts = c;
    const box = $("#summary");
    if (!c.groups.length) { A.fill(box, el("p", { class: "muted" }, "No failures recorded."), openWithoutGroups(c)); return; }
    const op = A.isOperator();
    const focused = document.activeElement && document.activeElement.classList.contains("circuit-reason") ? document.activeElement.getAttribute("aria-label") : "";
    const cols = [{ h: "Function" }, { h: "Error code" }, { h: "Circuit", cls: "circuit", title: "the function's circuit: closed (called), open (not called: its events are recorded at once with errorCode CircuitOpen), half-open (one probe call at a time)" }, { h: "Total", cls: "num" },
      { h: "Under limit", cls: "num", title: "open records below their retry limit, whatever their recoverability (UNRECOVERABLE ones are never retried by the scheduler)" },
      { h: "Out of retries", cls: "num", title: "open records with every retry used: only an operator moves them on" },
      { h: "Replaying", cls: "num", title: "records with a replay prepared" },
      { h: "Open failures", title: "when the group's open failures last failed: oldest – newest" }];
    if (op) cols.push({ h: "Batch" });
    // A function's circuit once per function: in its first (largest) group.
    const shown = new Set();
    const rows = c.groups.map(g => ({ cells: [
      [el("a", { href: "/search?" + groupQuery(g) }, A.ident(g.processor + "." + g.function)), el("div", { class: "muted" }, g.functionContext, " · ",
        el("a", { href: A.circuitHref(g.functionContext + "." + g.processor + "." + g.function), title: "the function's circuit, drain and holds" }, "incident view"))],
      el("code", {}, g.errorCode || "–"),
      (() => {
        const key = g.functionContext + "." + g.processor + "." + g.function;
        if (shown.has(key)) return el("span", { class: "muted", title: "see the function's first row" }, "↑");
        shown.add(key);
        return circuitCell(g, op);
      })(),
      String(g.total), String(g.retryable), String(g.exhausted), String(g.prepared),
      openSpan(g),
    ].concat(op ? [el("a", { href: "/search?" + groupQuery(g) + "#batch", title: "batch-prepare this group's records" }, "Batch…")] : []) }));
    A.fill(box, el("div", { class: "table-wrap" }, A.table({ id: "summary-table" }, cols, rows)),
      c.groupCount > c.groups.length ? el("p", { class: "muted" }, "The " + c.groups.length + " largest of " + c.groupCount + " groups; narrow them down on the ", el("a", { href: "/search" }, "search page"), ".") : null,
      openWithoutGroups(c));
    if (focused) { const again = box.querySelector('input[aria-label="' + CSS.escape(focused) + '"]'); if (again) again.focus(); }
  }

  // openWithoutGroups lists the circuits that are not closed for functions
  // the summary does not show (an operator opened one with no failure).
  function openWithoutGroups(c) {
    if (!circuits) return null;
    const inGroups = new Set(c.groups.map(g => g.functionContext + "." + g.processor + "." + g.function));
    const rest = [...circuits.values()].filter(x => x.phase !== "CLOSED" && !inGroups.has(x.function));
    if (!rest.length) return null;
    return el("p", { id: "circuits-elsewhere" }, "Circuits not closed: ",
      rest.map((x, i) => [i ? ", " : "", el("a", { href: A.circuitHref(x.function) }, A.ident(x.function)), " ", el("span", { class: "badge c-" + x.phase }, PHASE[x.phase] || x.phase)]),
      " (", el("code", {}, "amends circuits list"), ").");
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
    await loadCircuits();
    live({ counts: c => { renderCounts(c); renderSummary(c); A.ready(); } });
    setInterval(loadTrend, 60000);
    loadQuarantine();
    setInterval(loadQuarantine, 60000);
    setInterval(() => { if (!document.hidden) loadCircuits(); }, 5000);
  }
  start();
})();
