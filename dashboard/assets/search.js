"use strict";
// Search: a query bar of the common filters, the others behind "More
// filters"; the URL holds the query, so a view can be bookmarked and
// shared, and queries can be saved by name in this browser. Paging uses
// the API's cursors. The results, their count and (operators) the batch
// panel are drawn in one go when they have all arrived.
(() => {
  const { el, $, api, session, time, badge, errorBox, fnName, FILTERS, mark } = A;
  mark("search");
  const TIMES = ["executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo"];
  const BAR = ["view", "status", "processor", "function", "errorCode"];
  const SAVED = "amends.savedQueries";

  // The URL's query, as the API takes it.
  function urlQuery() { return new URLSearchParams(location.search); }

  // filterOf returns only the filter parameters of q.
  function filterOf(q) {
    const f = new URLSearchParams();
    for (const k of FILTERS) if (q.get(k)) f.set(k, q.get(k));
    return f;
  }

  // toLocalInput shows an RFC 3339 or epoch-ms time in a UTC
  // datetime-local input; fromLocalInput reads it back as RFC 3339.
  function toLocalInput(v) {
    const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
    return isNaN(ms) ? "" : new Date(ms).toISOString().slice(0, 19);
  }
  function fromLocalInput(v) { return v ? (v.length === 16 ? v + ":00" : v) + "Z" : ""; }

  function fillForm(q) {
    const form = $("#filters");
    let more = 0;
    for (const input of form.elements) {
      if (!input.name) continue;
      const v = q.get(input.name) || "";
      input.value = TIMES.includes(input.name) ? toLocalInput(v) : v;
      if (v && !BAR.includes(input.name)) more++;
    }
    // A query that uses the other filters shows them.
    $("#more-count").textContent = more ? "(" + more + " set)" : "";
    if (more) $("#more").open = true;
  }

  // formQuery is the form's query: times as RFC 3339, empty fields left
  // out, so the URL stays short and exact.
  function formQuery() {
    const q = new URLSearchParams();
    for (const input of $("#filters").elements) {
      if (!input.name || !input.value) continue;
      q.set(input.name, TIMES.includes(input.name) ? fromLocalInput(input.value) : input.value);
    }
    return q;
  }

  function onSubmit(ev) {
    ev.preventDefault();
    const q = formQuery();
    location.assign("/search" + (q.toString() ? "?" + q : ""));
  }

  // Saved queries: a name and a query string each, in local storage.
  function saved() {
    try { const v = JSON.parse(localStorage.getItem(SAVED) || "[]"); return Array.isArray(v) ? v.filter(x => x && typeof x.name === "string" && typeof x.query === "string") : []; }
    catch (_) { return []; }
  }
  function store(list) { try { localStorage.setItem(SAVED, JSON.stringify(list.slice(0, 50))); } catch (_) { /* storage full or off */ } }
  function renderSaved() {
    const list = saved();
    const box = $("#saved");
    A.fill(box, list.length ? el("span", { class: "muted" }, "Saved:") : null,
      list.map((s, i) => el("span", { class: "chip", "data-name": s.name },
        el("a", { href: "/search" + (s.query ? "?" + s.query : ""), title: s.query || "every record" }, s.name),
        el("button", { type: "button", "aria-label": "forget " + s.name, onclick: () => { const l = saved(); l.splice(i, 1); store(l); renderSaved(); } }, "×"))),
      el("button", { type: "button", id: "save-query", onclick: askName }, "Save this query"));
  }
  function askName() {
    const name = el("input", { id: "save-name", "aria-label": "name of the saved query", placeholder: "name", maxlength: "60" });
    const ok = el("button", { type: "submit", id: "save-ok" }, "Save");
    const form = el("form", { class: "row", id: "save-form" }, name, ok, el("button", { type: "button", onclick: renderSaved }, "Cancel"));
    form.addEventListener("submit", ev => {
      ev.preventDefault();
      const n = name.value.trim();
      if (!n) { name.focus(); return; }
      const q = urlQuery();
      q.delete("cursor");
      const list = saved().filter(s => s.name !== n);
      list.unshift({ name: n, query: q.toString() });
      store(list);
      renderSaved();
    });
    $("#save-query").replaceWith(form);
    name.focus();
  }

  function row(it) {
    return { cells: [
      el("a", { href: "/record?id=" + encodeURIComponent(it.id), class: "mono", title: it.id }, it.id.slice(0, 8) + "…"),
      [badge("s", it.status), " ", badge("r", it.recoverable)],
      fnName(it.function),
      el("code", {}, it.errorCode || "–"),
      it.aggregate.contextName + "." + it.aggregate.aggregateName + "/" + it.aggregate.aggregateId,
      it.retries + "/" + it.maxRetries,
      time(it.executeAt),
      A.willRetry(it.status, it.recoverable, it.retries, it.maxRetries) ? time(it.nextRetryAt) : el("span", { class: "muted", title: "not retried by the scheduler" }, "–"),
    ] };
  }

  function results(q, page, count) {
    const table = A.table({ id: "records-table" }, ["Record", "State", "Function", "Error code", "Aggregate", "Retries", "Last outcome", "Next retry"].map(h => ({ h, cls: h === "Retries" ? "num" : "" })), page.items.map(row));
    const pager = el("div", { class: "pager" });
    if (q.get("cursor")) pager.append(el("a", { href: "#", id: "prev", onclick: ev => { ev.preventDefault(); history.back(); } }, "← Previous page"));
    if (page.next) {
      const nq = new URLSearchParams(q);
      nq.set("cursor", page.next);
      pager.append(el("a", { href: "/search?" + nq, id: "next" }, "Next page →"));
    }
    pager.append(el("span", { class: "muted" }, page.items.length + " shown"));
    return [el("div", { class: "res-head" }, el("h2", { id: "res-h" }, "Records"), el("span", { class: "muted", id: "count" }, count.count + " matching records")),
      page.items.length ? el("div", { class: "table-wrap" }, table) : el("p", { class: "muted", id: "no-results" }, "No record matches."), pager];
  }

  async function fetchResults(q) {
    return Promise.all([api("GET", "/api/v1/records?" + q), api("GET", "/api/v1/count?" + filterOf(q))]);
  }

  async function load() {
    const q = urlQuery();
    const box = $("#results");
    try {
      const [page, count] = await fetchResults(q);
      A.fill(box, results(q, page, count));
    } catch (err) { A.fill(box, errorBox(err)); }
  }

  async function start() {
    const q = urlQuery();
    fillForm(q);
    renderSaved();
    $("#filters").addEventListener("submit", onSubmit);
    // The session and the results are asked for at once, drawn together.
    const res = fetchResults(q).then(v => ({ ok: true, v }), err => ({ ok: false, err }));
    await session();
    const r = await res;
    const batch = el("section", { class: "panel operator-only" + (A.isOperator() ? "" : " hidden"), id: "batch", "aria-labelledby": "batch-h" });
    A.fill($("#content"), batch, el("section", { class: "panel", id: "results", "aria-labelledby": "res-h" },
      r.ok ? results(q, r.v[0], r.v[1]) : errorBox(r.err)));
    if (A.isOperator()) Batch.mount(batch, filterOf(q), location.hash === "#batch");
    A.ready();
    // Live: reload the page of results when records change (at most every 2s).
    let pending = null;
    A.live({ records: () => { if (!pending) pending = setTimeout(() => { pending = null; load(); }, 2000); }, resync: () => load() });
  }
  start();
})();
