"use strict";
// Search: every filter and sort of the API; the URL holds the query, so a
// view can be bookmarked and shared. Paging uses the API's cursors.
(() => {
  const { el, $, api, session, time, badge, errorBox, fnName, FILTERS, mark } = A;
  mark("search");
  const TIMES = ["executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo"];

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
    for (const input of form.elements) {
      if (!input.name) continue;
      const v = q.get(input.name) || "";
      input.value = TIMES.includes(input.name) ? toLocalInput(v) : v;
    }
  }

  // The form submits as a GET to /search; times are rewritten to RFC 3339
  // and empty fields dropped, so the URL stays short and exact.
  function onSubmit(ev) {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const input of $("#filters").elements) {
      if (!input.name || !input.value) continue;
      q.set(input.name, TIMES.includes(input.name) ? fromLocalInput(input.value) : input.value);
    }
    location.assign("/search" + (q.toString() ? "?" + q : ""));
  }

  function row(it) {
    return el("tr", {},
      el("td", {}, el("a", { href: "/record?id=" + encodeURIComponent(it.id), class: "mono" }, it.id.slice(0, 8) + "…")),
      el("td", {}, badge("s", it.status), " ", badge("r", it.recoverable)),
      el("td", {}, fnName(it.function)),
      el("td", {}, el("code", {}, it.errorCode || "–")),
      el("td", {}, it.aggregate.contextName + "." + it.aggregate.aggregateName + "/" + it.aggregate.aggregateId),
      el("td", { class: "num" }, it.retries + "/" + it.maxRetries),
      el("td", {}, time(it.executeAt)),
      el("td", {}, A.willRetry(it.status, it.recoverable, it.retries, it.maxRetries) ? time(it.nextRetryAt) : el("span", { class: "muted", title: "not retried by the scheduler" }, "–")));
  }

  async function load() {
    const q = urlQuery();
    const box = $("#results");
    const listQ = new URLSearchParams(q);
    try {
      const [page, count] = await Promise.all([
        api("GET", "/api/v1/records?" + listQ),
        api("GET", "/api/v1/count?" + filterOf(q)),
      ]);
      $("#count").textContent = count.count + " matching records";
      const table = el("table", { id: "records-table" },
        el("thead", {}, el("tr", {}, ["Record", "State", "Function", "Error code", "Aggregate", "Retries", "Last outcome", "Next retry"].map(h => el("th", { scope: "col" }, h)))),
        el("tbody", {}, page.items.map(row)));
      const pager = el("div", { class: "pager" });
      if (q.get("cursor")) pager.append(el("a", { href: "#", id: "prev", onclick: ev => { ev.preventDefault(); history.back(); } }, "← Previous page"));
      if (page.next) {
        const nq = new URLSearchParams(q);
        nq.set("cursor", page.next);
        pager.append(el("a", { href: "/search?" + nq, id: "next" }, "Next page →"));
      }
      pager.append(el("span", { class: "muted" }, page.items.length + " shown"));
      A.fill(box, page.items.length ? table : el("p", { class: "muted", id: "no-results" }, "No record matches."), pager);
    } catch (err) {
      A.fill(box, errorBox(err));
    }
  }

  async function start() {
    await session();
    const q = urlQuery();
    fillForm(q);
    $("#filters").addEventListener("submit", onSubmit);
    load();
    if (A.isOperator()) {
      const panel = $("#batch");
      panel.classList.remove("hidden");
      Batch.mount(panel, filterOf(q), location.hash === "#batch");
    }
    // Live: reload the page of results when records change (at most every 2s).
    let pending = null;
    A.live({ records: () => { if (!pending) pending = setTimeout(() => { pending = null; load(); }, 2000); }, resync: () => load() });
  }
  start();
})();
