"use strict";
// Audit: the audit log, filtered and paged as `amends audit` does it
// (oldest first, a cursor to the next page); operators only.
(() => {
  const { el, $, api, session, time, errorBox, ident, mark } = A;
  mark("audit");
  const FIELDS = ["kind", "actor", "record", "from", "to"];
  let cursors = [];

  // toMs reads a datetime-local value as UTC.
  function toMs(v) { return v ? Date.parse(v + (v.length === 16 ? ":00" : "") + "Z") : 0; }
  function fromMs(ms) { return ms ? new Date(Number(ms)).toISOString().slice(0, 19) : ""; }

  function query(cursor) {
    const now = new URLSearchParams(location.search);
    const q = new URLSearchParams();
    for (const f of FIELDS) if (now.get(f)) q.set(f, now.get(f));
    q.set("limit", "100");
    if (cursor) q.set("cursor", cursor);
    return q;
  }

  function render(p) {
    $("#a-count").textContent = p.entries.length + (p.entries.length === 1 ? " entry" : " entries") + (cursors.length ? " · page " + (cursors.length + 1) : "") +
      (p.skipped ? " · " + p.skipped + " stored messages skipped (they do not decode; amends quarantine list)" : "");
    if (!p.entries.length) { A.fill($("#entries"), el("p", { class: "muted", id: "no-entries" }, "No entry matches.")); return; }
    const cols = [{ h: "At" }, { h: "Kind" }, { h: "Actor" }, { h: "Credential" }, { h: "Client" }, { h: "Route" }, { h: "Record or event" }, { h: "Reason" }];
    const rows = p.entries.map(e => ({ cells: [time(e.time), el("code", {}, e.kind), e.actor ? [ident(e.actor), e.role ? el("span", { class: "muted" }, " " + e.role) : null] : el("span", { class: "muted" }, "–"),
      e.credential ? el("code", {}, e.credential) : "–", e.client ? ident(e.client) : "–", e.route ? ident(e.route) : "–",
      e.record ? el("a", { href: "/record?id=" + encodeURIComponent(e.record) }, ident(e.record)) : (e.event ? ident(e.event) : "–"), e.reason || ""] }));
    A.fill($("#entries"), el("div", { class: "table-wrap" }, A.table({ id: "audit-table" }, cols, rows)));
  }

  async function load(cursor) { (await fetched(cursor))(); }

  // fetched returns what draws a page of entries once it has arrived.
  async function fetched(cursor) {
    let p;
    try { p = await api("GET", "/api/v1/audit?" + query(cursor)); } catch (err) { return () => refused(err); }
    return () => {
      render(p);
      $("#next").disabled = !p.next;
      $("#next").onclick = () => { cursors.push(cursor || ""); load(p.next); };
      $("#first").disabled = !cursors.length;
    };
  }

  function refused(err) {
    $("#next").disabled = true;
    A.fill($("#entries"), err.status === 403 ? el("p", { class: "muted", id: "operators-only" }, "The audit log names who did what from where: only operators may read it.")
      : err.status === 404 && err.code === "NotConfigured" ? el("p", { class: "muted" }, "This server keeps no audit log.") : errorBox(err));
  }

  async function start() {
    const form = $("#filters");
    const now = new URLSearchParams(location.search);
    for (const f of FIELDS) if (now.get(f)) form.elements[f].value = f === "from" || f === "to" ? fromMs(now.get(f)) : now.get(f);
    form.addEventListener("submit", ev => {
      ev.preventDefault();
      const n = new URLSearchParams();
      for (const f of FIELDS) {
        const v = form.elements[f].value.trim();
        if (v) n.set(f, f === "from" || f === "to" ? String(toMs(v)) : v);
      }
      history.replaceState(null, "", "/audit" + (n.toString() ? "?" + n : ""));
      cursors = [];
      load("");
    });
    await session();
    const first = await fetched("");
    A.mount();
    $("#first").addEventListener("click", () => { cursors = []; load(""); });
    first();
    A.ready();
  }
  start();
})();
