"use strict";
// The incident view of one function (/circuits/CONTEXT.PROCESSOR.NAME):
// its circuit (state, since when the incident began, re-opens, calls
// refused, last real failure, next probe), the open and close actions, the
// recovery drain as a live chart, the function's records by status (those
// the circuit refused apart), its ordered holds and the transitions. Every
// panel has its place from the start; only their contents change.
(() => {
  const { el, $, api, session, time, dur, errorBox, ident, PHASE, phaseBadge, incidentSince, nextProbe, confirmed, mark } = A;
  mark("circuits");
  const fn = decodeURIComponent(location.pathname.slice("/circuits/".length));
  const [context, processor, name] = fn.split(".");
  const select = new URLSearchParams({ functionContext: context || "", processor: processor || "", function: name || "" });

  let circuit = null;
  // samples are the drain's progress as this page saw it, for the chart.
  const samples = [];

  function renderCircuit(c) {
    circuit = c;
    A.fill($("#title"), "Circuit of ", ident(fn));
    document.title = "Incident " + fn + " · amends";
    A.fill($("#f-state"), phaseBadge(c, { id: "state" }), c.forced ? el("span", { class: "muted" }, " by an operator") : null);
    A.fill($("#f-since"), c.stored ? el("span", { id: "since" }, incidentSince(c)) : el("span", { class: "muted", id: "since" }, "never opened"));
    A.fill($("#f-refused"), el("span", { id: "refused" }, String(c.refused || 0)), el("span", { class: "muted" }, " in this incident, " + (c.refusedTotal || 0) + " in all"));
    A.fill($("#f-probe"), el("span", { id: "probe" }, nextProbe(c)));
    A.fill($("#last"), c.last ? el("p", { id: "last-failure" }, el("strong", {}, "Last real failure "), "(of another event; the records the circuit refused carry it as such): ",
      el("code", {}, c.last.code), " ", c.last.message, " ", el("span", { class: "muted" }, time(c.last.at)),
      c.last.fingerprint ? [" · ", el("a", { href: "/fingerprints#" + c.last.fingerprint }, "fingerprint ", ident(c.last.fingerprint))] : null)
      : el("p", { class: "muted" }, c.stored ? "No real failure is kept." : "This function's circuit never opened, or the name is misspelt: every call goes through."));
    A.fill($("#banner"), c.phase === "CLOSED" ? null : el("div", { class: "notice", id: "incident-banner", role: "status" },
      el("strong", {}, "The circuit is " + PHASE[c.phase] + ": "),
      c.forced ? "an operator opened it; nothing calls the function until an operator closes it." :
        "the function's events are recorded at once (error code CircuitOpen) without a call; after the cool-down one call probes the dependency. The recovery drain prepares the records once it closes."));
    renderTransitions(c);
  }

  // numbers says what a transition counted: the failures of the calls
  // weighed, or the probes that succeeded.
  function numbers(t) {
    if (!t.calls) return "–";
    return t.failures ? t.failures + " failed of " + t.calls : t.calls + (t.calls === 1 ? " succeeded" : " succeeded, none failed");
  }

  function renderTransitions(c) {
    if (!c.transitions.length) { A.fill($("#transitions"), el("p", { class: "muted" }, "No transition yet.")); return; }
    const cols = [{ h: "#", cls: "num" }, { h: "At" }, { h: "Change" }, { h: "Cause" }, { h: "Numbers" }, { h: "Cool-down" }, { h: "By" }, { h: "Reason" }];
    const rows = c.transitions.slice().reverse().map(t => ({ cells: [String(t.seq), time(t.at),
      [el("span", { class: "badge c-" + t.from }, PHASE[t.from] || t.from), " → ", el("span", { class: "badge c-" + t.to }, PHASE[t.to] || t.to)],
      el("code", {}, t.cause), numbers(t), t.coolDownMs ? dur(t.coolDownMs) : "–",
      t.actor ? ident(t.actor) : (t.instance ? el("span", { class: "muted" }, "instance ", ident(t.instance)) : "–"), t.reason || ""] }));
    A.fill($("#transitions"), A.table({ id: "transitions-table" }, cols, rows));
  }

  function renderActions() {
    const c = circuit;
    const verb = c.phase === "CLOSED" ? "open" : "close";
    const say = (a, dry) => fn + "'s circuit " + (dry ? (a.changed ? "would become " : "would stay ") : (a.changed ? "is now " : "was already ")) + PHASE[a.circuit.phase] +
      (verb === "close" && a.changed ? (dry ? "; the recovery drain would then prepare its records" : "; the recovery drain prepares its records") : "") + ".";
    A.fill($("#act"),
      el("p", { class: "muted" }, verb === "open"
        ? "Opening it stops every call of the function until an operator closes it: its events are recorded at once, to be drained later."
        : "Closing it calls the function again and starts the recovery drain of the incident's records, a canary first."),
      confirmed({ id: "circuit-" + verb, label: verb === "open" ? "Open circuit" : "Close circuit", danger: verb === "open",
        question: "Why " + (verb === "open" ? "open" : "close") + " it?", audited: "opening and closing circuits is audited.",
        act: (reason, dryRun) => api("POST", "/api/v1/circuits/" + encodeURIComponent(fn) + "/" + verb, { reason, dryRun }),
        say, done: a => { renderCircuit(a.circuit); setTimeout(renderActions, 0); } }));
  }

  // drainChart draws the drain's released records and those that failed
  // again, as this page sampled them, against its size.
  function drainChart(d) {
    const W = 520, H = 120, L = 40, R = 10, T = 8, B = 20;
    const pts = samples;
    const max = Math.max(1, d ? d.size || 0 : 0, ...pts.map(s => s.released));
    const t0 = pts.length ? pts[0].at : Date.now(), t1 = Math.max(t0 + 1000, pts.length ? pts[pts.length - 1].at : t0);
    const x = t => L + (W - L - R) * (t - t0) / (t1 - t0);
    const y = v => T + (H - T - B) * (1 - v / max);
    const line = (cls, f) => el("polyline", { class: cls, points: pts.map(s => x(s.at).toFixed(1) + "," + y(f(s)).toFixed(1)).join(" ") });
    return el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "records the drain released and those that failed again, since this page opened" },
      el("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }), el("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
      el("text", { x: L - 4, y: T + 10, "text-anchor": "end" }, String(max)), el("text", { x: L - 4, y: H - B, "text-anchor": "end" }, "0"),
      el("text", { x: L, y: H - 4 }, pts.length ? A.short8601(t0).slice(11) : ""), el("text", { x: W - R, y: H - 4, "text-anchor": "end" }, "now"),
      pts.length > 1 ? line("done", s => s.released) : null, pts.length > 1 ? line("failed", s => s.failed) : null);
  }

  function renderDrain(d) {
    if (d) samples.push({ at: Date.now(), released: d.released || 0, failed: d.failed || 0 });
    if (samples.length > 300) samples.shift();
    A.fill($("#drain-chart"), drainChart(d));
    if (!d) { A.fill($("#drain"), el("p", { class: "muted", id: "no-drain" }, "No recovery drain: the circuit has not closed after an incident yet.")); return; }
    const settled = (d.succeeded || 0) + (d.failed || 0);
    const left = Math.max(0, (d.size || 0) - (d.released || 0));
    A.fill($("#drain"), el("dl", { class: "kv", id: "drain-facts" },
      el("dt", {}, "phase"), el("dd", { id: "drain-phase" }, d.phase),
      el("dt", {}, "incident"), el("dd", {}, time(d.from), " – ", d.to ? time(d.to) : "ongoing"),
      el("dt", {}, "step"), el("dd", {}, String(d.steps) + (d.inFlight ? " (" + d.inFlight + " records under way)" : "")),
      el("dt", {}, "rate"), el("dd", {}, d.rate ? d.rate + " records/s at most" : "–"),
      el("dt", {}, "done / left"), el("dd", { id: "drain-done" }, (d.released || 0) + " released / " + left + " left of " + (d.size || 0)),
      el("dt", {}, "success ratio"), el("dd", { id: "drain-ratio" }, settled ? Math.round(100 * (d.succeeded || 0) / settled) + "% (" + (d.succeeded || 0) + " succeeded, " + (d.failed || 0) + " failed)" : "–"),
      d.note ? [el("dt", {}, "note"), el("dd", {}, d.note)] : null));
  }

  // The loaders fetch a panel's data and return what draws it, so that
  // the first drawing comes in one go and the refreshes panel by panel.
  async function loadDrain() {
    try {
      const l = await api("GET", "/api/v1/drains");
      const d = l.drains.find(d => d.function === fn) || null;
      return () => renderDrain(d);
    } catch (err) {
      return () => A.fill($("#drain"), err.status === 404 ? el("p", { class: "muted" }, "This server keeps no recovery drains.") : errorBox(err));
    }
  }

  async function loadRecords() {
    const count = q => api("GET", "/api/v1/count?" + q).then(r => r.count);
    const by = s => { const q = new URLSearchParams(select); q.set("status", s); return q; };
    const refusedQ = by("FAILED"); refusedQ.set("errorCode", "CircuitOpen");
    try {
      const [failed, prepared, succeeded, refused] = await Promise.all([count(by("FAILED")), count(by("PREPARED")), count(by("SUCCEEDED")), count(refusedQ)]);
      const link = (q, n, label, id) => el("li", {}, el("a", { href: "/search?" + q, id }, String(n) + " " + label));
      return () => A.fill($("#records"), el("ul", { class: "strip", id: "waiting" },
        link(by("FAILED"), failed, "failed, waiting to be retried or drained", "rec-failed"),
        link(refusedQ, refused, "of them refused by the circuit (never tried)", "rec-refused"),
        link(by("PREPARED"), prepared, "replaying", "rec-prepared"),
        link(by("SUCCEEDED"), succeeded, "succeeded", "rec-succeeded")));
    } catch (err) { return () => A.fill($("#records"), errorBox(err)); }
  }

  async function loadHolds() {
    const q = new URLSearchParams({ context, processor, function: name, limit: "20" });
    try {
      const p = await api("GET", "/api/v1/holds?" + q);
      if (!p.holds.length) return () => A.fill($("#holds"), el("p", { class: "muted", id: "no-holds" }, "No aggregate is held for this function."));
      const rows = p.holds.map(h => ({ cells: [ident(h.aggregateType + "/" + h.aggregateId), String(h.held), time(h.since),
        h.headRecord ? el("a", { href: "/record?id=" + encodeURIComponent(h.headRecord) }, ident(h.headRecord)) : el("span", { class: "muted" }, "unknown (recovered)")] }));
      return () => A.fill($("#holds"), el("div", { class: "table-wrap" }, A.table({ id: "holds-table" }, [{ h: "Aggregate" }, { h: "Held events", cls: "num" }, { h: "Since" }, { h: "Head record" }], rows)),
        el("p", {}, el("a", { href: "/holds?" + q, id: "holds-link" }, p.more ? "More holds, with release and skip →" : "Release or skip on the holds page →")));
    } catch (err) {
      return () => A.fill($("#holds"), err.status === 404 ? el("p", { class: "muted" }, "This server keeps no holds of Ordered functions.") : errorBox(err));
    }
  }

  async function loadCircuit() {
    try {
      const c = await api("GET", "/api/v1/circuits/" + encodeURIComponent(fn));
      return () => { renderCircuit(c); return true; };
    } catch (err) {
      return () => { A.fill($("#facts"), errorBox(err)); A.fill($("#act")); return false; };
    }
  }

  async function start() {
    await session();
    const draws = await Promise.all([loadCircuit(), loadDrain(), loadRecords(), loadHolds()]);
    A.mount();
    const ok = draws[0]();
    if (ok) renderActions();
    draws.slice(1).forEach(d => d());
    A.ready();
    if (!ok) return;
    setInterval(async () => {
      if (document.hidden) return;
      const phase = circuit && circuit.phase;
      (await loadCircuit())();
      if (circuit && circuit.phase !== phase) renderActions();
      (await loadDrain())();
    }, 2000);
    setInterval(async () => { if (!document.hidden) { (await loadRecords())(); (await loadHolds())(); } }, 10000);
  }
  start();
})();
