"use strict";
// Archive: the sweeps retention archived; a sweep's records page by page
// (as `amends archive show`), one record's history, and the restore of the
// selected records (or the whole sweep) after a dry run, as `amends
// archive restore` does; operators only for the restore.
(() => {
  const { el, $, api, session, time, errorBox, ident, badge, confirmed, mark } = A;
  mark("archive");
  const PAGE = 100;
  let cursors = [];
  let current = ""; // the cursor of the page of records shown
  const selected = new Set();

  function params() { return new URLSearchParams(location.search); }
  function go(q) { history.replaceState(null, "", "/archive" + (q.toString() ? "?" + q : "")); }

  function renderSweeps(s, current) {
    A.fill($("#s-count"), s.sweeps.length + (s.sweeps.length === 1 ? " sweep" : " sweeps") + " in ", ident(s.archive));
    if (!s.sweeps.length) { A.fill($("#sweeps"), el("p", { class: "muted", id: "no-sweeps" }, "Nothing archived yet: retention archives a batch of finished records before it removes them.")); return; }
    const cols = [{ h: "Sweep", cls: "num" }, { h: "Written" }, { h: "Records", cls: "num" }, { h: "Streams", cls: "num" }, { h: "Size", cls: "num" }, { h: "Open" }];
    const rows = s.sweeps.slice().reverse().map(w => ({ attrs: { "data-sweep": String(w.sweep), class: w.sweep === current ? "target" : "" }, cells: [
      String(w.sweep), time(w.createdAt), String(w.records), String(w.streams), kb(w.bytes),
      w.error ? el("span", { class: "error" }, w.error) : el("a", { href: "?sweep=" + w.sweep, class: "open-sweep", onclick: ev => { ev.preventDefault(); open(w.sweep); } }, "Records…")] }));
    A.fill($("#sweeps"), el("div", { class: "table-wrap" }, A.table({ id: "sweeps-table" }, cols, rows)));
  }

  function kb(n) { return n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MB" : Math.ceil(n / 1024) + " KB"; }

  async function open(sweep) {
    const q = new URLSearchParams({ sweep: String(sweep) });
    go(q);
    cursors = [];
    selected.clear();
    await loadRecords(sweep, "");
    renderRestore(sweep);
    A.fill($("#history"), el("p", { class: "muted" }, "Choose a record of the sweep."));
  }

  async function loadRecords(sweep, cursor) { (await fetchRecords(sweep, cursor))(); }

  // fetchRecords returns what draws a page of sweep's records once it has
  // arrived.
  async function fetchRecords(sweep, cursor) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (cursor) q.set("cursor", cursor);
    let p;
    try { p = await api("GET", "/api/v1/archive/" + sweep + "?" + q); } catch (err) { return () => A.fill($("#records"), errorBox(err)); }
    return () => drawRecords(sweep, cursor, p);
  }

  function drawRecords(sweep, cursor, p) {
    current = cursor || "";
    $("#r-count").textContent = "sweep " + sweep + " · " + p.records.length + (p.records.length === 1 ? " record" : " records") + (cursors.length ? " · page " + (cursors.length + 1) : "");
    const cols = [{ h: "Select" }, { h: "Record" }, { h: "Function" }, { h: "Versions", cls: "num" }, { h: "Status" }, { h: "Last outcome" }, { h: "History" }];
    const rows = p.records.map(r => {
      const box = el("input", { type: "checkbox", class: "pick", "aria-label": "select record " + r.id, checked: selected.has(r.id) || undefined });
      box.addEventListener("change", () => { box.checked ? selected.add(r.id) : selected.delete(r.id); renderRestore(sweep); });
      return { attrs: { "data-record": r.id }, cells: [box, ident(r.id), ident(r.function.processorName + "." + r.function.name + "@" + r.function.contextName),
        String(r.versions), r.status ? badge("s", r.status) : "–", time(r.executeAt),
        el("a", { href: "?sweep=" + sweep + "&record=" + encodeURIComponent(r.id), class: "show-history", onclick: ev => { ev.preventDefault(); showHistory(sweep, r.id); } }, "History")] };
    });
    A.fill($("#records"), p.records.length ? el("div", { class: "table-wrap" }, A.table({ id: "records-table" }, cols, rows)) : el("p", { class: "muted" }, "The sweep holds no record."));
    $("#next").disabled = !p.next;
    $("#next").onclick = () => { cursors.push(cursor || ""); loadRecords(sweep, p.next); };
    $("#first").disabled = !cursors.length;
    $("#first").onclick = () => { cursors = []; loadRecords(sweep, ""); };
  }

  async function showHistory(sweep, id) {
    const q = new URLSearchParams({ sweep: String(sweep), record: id });
    go(q);
    (await fetchHistory(sweep, id))();
  }

  // fetchHistory returns what draws record id's archived history.
  async function fetchHistory(sweep, id) {
    let h;
    try { h = await api("GET", "/api/v1/archive/" + sweep + "/" + encodeURIComponent(id)); } catch (err) { return () => A.fill($("#history"), errorBox(err)); }
    const cols = [{ h: "Version", cls: "num" }, { h: "Time" }, { h: "Actor" }, { h: "Events" }];
    const rows = h.history.map(st => ({ cells: [String(st.version), time(st.createTime), (st.headers || {}).actor || "–",
      (st.events || []).map(e => e.name).join(", ")] }));
    return () => A.fill($("#history"), el("p", {}, el("strong", {}, "Record "), ident(h.record.id, { id: "history-record" }), " · ",
      el("a", { href: "/record?id=" + encodeURIComponent(h.record.id) }, "its live view, once restored")),
    el("div", { class: "table-wrap" }, A.table({ id: "history-table" }, cols, rows)));
  }

  function renderRestore(sweep) {
    const n = selected.size;
    const what = n ? n + (n === 1 ? " selected record" : " selected records") : "every record of sweep " + sweep;
    A.fill($("#restore"),
      el("p", { id: "restore-what" }, "Restores ", el("strong", {}, what), ": appends their archived histories to the event store again, so that they are queryable again. A record that failed again since its removal is left alone (diverged); one restored already is present."),
      confirmed({ id: "restore-action", label: "Restore", question: "Why restore them?", audited: "a restore is kept in the audit log.",
        act: (reason, dryRun) => api("POST", "/api/v1/archive/" + sweep + "/restore", n ? { reason, dryRun, records: [...selected] } : { reason, dryRun }),
        say: (res, dry) => {
          const counts = Object.entries(res.counts).map(([o, c]) => c + " " + o).join(", ") || "nothing";
          return (dry ? "would restore: " : "restored: ") + counts + (res.missing && res.missing.length ? "; not in this sweep: " + res.missing.join(", ") : "") + ".";
        },
        done: () => loadRecords(sweep, current) }));
  }

  // fetched returns what draws the page once the sweeps have arrived.
  async function fetched() {
    try {
      const s = await api("GET", "/api/v1/archive");
      return s;
    } catch (err) {
      return { err };
    }
  }

  async function start() {
    await session();
    const s = await fetched();
    if (s.err) {
      A.mount();
      const none = s.err.status === 404 && s.err.code === "NotConfigured";
      A.fill($("#sweeps"), none ? el("p", { class: "muted", id: "no-archive" }, "This server has no archive: serve archives removed records with --retention and --archive dir:/path or objectstore:BUCKET.") : errorBox(s.err));
      A.ready();
      return;
    }
    const q = params();
    const sweep = Number(q.get("sweep")) || 0;
    // Everything the address asks for arrives before the page is drawn,
    // so that nothing moves once it is shown.
    const [records, hist] = await Promise.all([sweep > 0 ? fetchRecords(sweep, "") : null, sweep > 0 && q.get("record") ? fetchHistory(sweep, q.get("record")) : null]);
    A.mount();
    renderSweeps(s, sweep);
    if (records) { records(); renderRestore(sweep); }
    if (hist) hist();
    A.ready();
  }
  start();
})();
