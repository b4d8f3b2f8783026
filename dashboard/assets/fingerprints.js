"use strict";
// Fingerprints: the records grouped by failure fingerprint (the summary
// by=fingerprint of the API), the largest group first, each with its
// function and error code, a sample message, when it was seen, its
// records by status and how many retention removed, and links to its
// records and to a batch on them.
(() => {
  const { el, $, api, session, time, badge, errorBox, mark } = A;
  mark("fingerprints");
  const STATUSES = ["FAILED", "PREPARED", "SUCCEEDED"];

  function query() { return new URLSearchParams({ by: "fingerprint" }); }

  function render(sum, openOnly, op) {
    let groups = sum.fingerprints || [];
    if (openOnly) groups = groups.filter(g => ((g.byStatus || {}).FAILED || 0) + ((g.byStatus || {}).PREPARED || 0) > 0);
    $("#fp-count").textContent = groups.length + (groups.length === 1 ? " fingerprint" : " fingerprints");
    if (!groups.length) {
      A.fill($("#fingerprints"), el("p", { class: "muted", id: "no-fingerprints" }, openOnly ? "No open failure has a fingerprint." : "No record has a fingerprint."));
      return;
    }
    const cols = [{ h: "Fingerprint" }, { h: "Failure" }, { h: "Oldest outcome", title: "the earliest last outcome (latest failure, or success) of the group's records" },
      { h: "Latest outcome", title: "the latest last outcome (latest failure, or success) of the group's records" }, { h: "Records" }, { h: "Links" }];
    const rows = groups.map(g => {
      const q = new URLSearchParams({ fingerprint: g.fingerprint });
      const open = new URLSearchParams(q);
      if (openOnly) open.set("view", "to-retry");
      return { attrs: { id: g.fingerprint, "data-fingerprint": g.fingerprint }, cells: [
        A.ident(g.fingerprint),
        [el("div", {}, A.ident(g.processor + "." + g.function), " ", el("code", {}, g.errorCode || "–")), el("div", { class: "muted" }, g.functionContext),
          g.errorCode === "CircuitOpen" ? el("p", { class: "notice refused" }, el("strong", {}, "Refused by the circuit"), " in one incident: these events were never tried. The sample quotes the circuit's last real failure, of another event. ",
            el("a", { href: A.circuitHref(g.functionContext + "." + g.processor + "." + g.function) }, "Incident view →")) : null,
          el("p", { class: "sample mono", title: "a sample message of the group" }, g.sampleMessage || "")],
        time(g.firstSeen), time(g.lastSeen),
        [el("span", { class: "counts" }, String(g.total), " ", STATUSES.filter(s => (g.byStatus || {})[s]).map(s => [badge("s", s), " ", String(g.byStatus[s]), " "])),
          g.removed ? el("div", { class: "muted fp-removed", title: "finished records of this fingerprint that retention removed (counted, no longer listed)" }, String(g.removed) + " removed by retention") : null],
        [el("a", { href: "/search?" + q, class: "fp-records" }, "Records"), op ? [" · ", el("a", { href: "/search?" + q + "#batch", class: "fp-batch", title: "prepare or force-prepare this fingerprint's records, after a dry run" }, "Batch…")] : null],
      ] };
    });
    A.fill($("#fingerprints"), el("div", { class: "table-wrap" }, A.table({ id: "fingerprints-table" }, cols, rows)));
    const target = location.hash.slice(1) && document.getElementById(location.hash.slice(1));
    if (target) target.classList.add("target");
  }

  async function start() {
    const sel = $("#fp-status");
    const data = api("GET", "/api/v1/summary?" + query()).then(v => ({ ok: true, v }), err => ({ ok: false, err }));
    const me = await session();
    let last = await data;
    const draw = () => last.ok ? render(last.v, sel.value === "open", me.role === "operator") : A.fill($("#fingerprints"), errorBox(last.err));
    draw();
    A.ready();
    sel.addEventListener("change", draw);
    const reload = async () => {
      try { last = { ok: true, v: await api("GET", "/api/v1/summary?" + query()) }; } catch (err) { last = { ok: false, err }; }
      draw();
    };
    let pending = null;
    A.live({ records: () => { if (!pending) pending = setTimeout(() => { pending = null; reload(); }, 2000); }, resync: reload });
  }
  start();
})();
