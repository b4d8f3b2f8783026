"use strict";
// Circuits: every stored circuit, those not closed first, each linked to
// its incident view; and the recovery drains, running ones first.
(() => {
  const { el, $, api, session, time, errorBox, ident, circuitHref, phaseBadge, incidentSince, nextProbe, mark } = A;
  mark("circuits");
  const ORDER = { OPEN: 0, HALF_OPEN: 1, CLOSED: 2 };

  function invalid(list) {
    return list.length ? el("p", { class: "error" }, list.length + " stored " + (list.length === 1 ? "entry does" : "entries do") + " not validate and " + (list.length === 1 ? "is" : "are") + " ignored: ",
      list.map((b, i) => [i ? "; " : "", ident(b.key), " (", b.reason, ")"])) : null;
  }

  function renderCircuits(l) {
    const cs = l.circuits.slice().sort((a, b) => ORDER[a.phase] - ORDER[b.phase] || b.updatedAt - a.updatedAt);
    const notClosed = cs.filter(c => c.phase !== "CLOSED").length;
    $("#c-count").textContent = cs.length + " stored · " + notClosed + " not closed";
    if (!cs.length) { A.fill($("#circuits"), el("p", { class: "muted", id: "no-circuits" }, "No circuit ever opened: every function is called."), invalid(l.invalid)); return; }
    const cols = [{ h: "Function" }, { h: "State" }, { h: "Incident began" }, { h: "Refused", cls: "num" }, { h: "Next probe" }, { h: "Last real failure" }];
    const rows = cs.map(c => ({ attrs: { "data-function": c.function }, cells: [
      el("a", { href: circuitHref(c.function) }, ident(c.function)), phaseBadge(c), incidentSince(c), String(c.refused || 0), nextProbe(c),
      c.last ? [el("code", {}, c.last.code), " ", el("span", { class: "sample" }, c.last.message)] : el("span", { class: "muted" }, "–")] }));
    A.fill($("#circuits"), el("div", { class: "table-wrap" }, A.table({ id: "circuits-table" }, cols, rows)), invalid(l.invalid));
  }

  function renderDrains(l) {
    const ds = l.drains.slice().sort((a, b) => (a.phase === "done") - (b.phase === "done") || b.updatedAt - a.updatedAt);
    $("#d-count").textContent = ds.filter(d => d.phase !== "done").length + " running";
    if (!ds.length) { A.fill($("#drains"), el("p", { class: "muted", id: "no-drains" }, "No drain yet: no circuit closed after an incident."), invalid(l.invalid)); return; }
    const cols = [{ h: "Function" }, { h: "Phase" }, { h: "Incident" }, { h: "Step", cls: "num" }, { h: "Done / size" }, { h: "Success" }, { h: "Note" }];
    const rows = ds.map(d => {
      const settled = (d.succeeded || 0) + (d.failed || 0);
      return { attrs: { "data-drain": d.function }, cells: [el("a", { href: circuitHref(d.function) }, ident(d.function)), el("code", {}, d.phase),
        [time(d.from), " – ", d.to ? time(d.to) : "ongoing"], String(d.steps), (d.released || 0) + " / " + (d.size || 0),
        settled ? Math.round(100 * (d.succeeded || 0) / settled) + "%" : "–", d.note || ""] };
    });
    A.fill($("#drains"), el("div", { class: "table-wrap" }, A.table({ id: "drains-table" }, cols, rows)), invalid(l.invalid));
  }

  // fetched returns what draws both lists once they have arrived.
  async function fetched() {
    const [c, d] = await Promise.allSettled([api("GET", "/api/v1/circuits"), api("GET", "/api/v1/drains")]);
    return () => draw(c, d);
  }

  async function load() { (await fetched())(); }

  function draw(c, d) {
    if (c.status === "fulfilled") renderCircuits(c.value);
    else A.fill($("#circuits"), c.reason.status === 404 ? el("p", { class: "muted" }, "This server keeps no circuits.") : errorBox(c.reason));
    if (d.status === "fulfilled") renderDrains(d.value);
    else A.fill($("#drains"), d.reason.status === 404 ? el("p", { class: "muted" }, "This server keeps no recovery drains.") : errorBox(d.reason));
  }

  async function start() {
    await session();
    const first = await fetched();
    A.mount();
    first();
    A.ready();
    setInterval(() => { if (!document.hidden) load(); }, 5000);
  }
  start();
})();
