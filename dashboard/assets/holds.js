"use strict";
// Holds: the holds of Ordered functions, filtered as `amends holds list`
// filters them; a chosen hold's held events, its release and the skip of
// one event, each with a reason, a dry run and a confirmation.
(() => {
  const { el, $, api, session, time, errorBox, ident, circuitHref, fnKey, confirmed, mark } = A;
  mark("holds");
  const FIELDS = ["context", "processor", "function", "record", "limit"];

  function query() {
    const q = new URLSearchParams();
    const now = new URLSearchParams(location.search);
    for (const f of FIELDS) if (now.get(f)) q.set(f, now.get(f));
    return q;
  }

  function renderHolds(p, q) {
    $("#h-count").textContent = p.holds.length + (p.more ? "+ (more than shown: narrow the filters or show more)" : "") + (p.holds.length === 1 ? " hold" : " holds");
    if (!p.holds.length) { A.fill($("#holds"), el("p", { class: "muted", id: "no-holds" }, "No aggregate is held" + (q.toString() ? " that the filters select." : "."))); return; }
    const cols = [{ h: "Aggregate" }, { h: "Function" }, { h: "Held", cls: "num", title: "events waiting, and their versions" }, { h: "Since" }, { h: "Head record" }, { h: "Actions" }];
    const rows = p.holds.map(h => {
      const fn = fnKey(h.context, h.processor, h.function);
      return { attrs: { "data-key": h.key }, cells: [ident(h.aggregateType + "/" + h.aggregateId),
        el("a", { href: circuitHref(fn) }, ident(fn)),
        h.held + (h.held ? " (v" + h.oldestVersion + (h.newestVersion !== h.oldestVersion ? "–" + h.newestVersion : "") + ")" : ""),
        time(h.since),
        h.headRecord ? el("a", { href: "/record?id=" + encodeURIComponent(h.headRecord) }, ident(h.headRecord)) : el("span", { class: "muted", title: h.recovered || "" }, "unknown (recovered)"),
        [h.releasing ? el("span", { class: "badge s-PREPARED" }, "releasing") : null, " ",
          el("a", { href: "#manage", class: "manage", "data-key": h.key, onclick: ev => { ev.preventDefault(); manage(h.key); } }, "Release or skip…")]] };
    });
    A.fill($("#holds"), el("div", { class: "table-wrap" }, A.table({ id: "holds-table" }, cols, rows)));
  }

  async function manage(key) {
    A.fill($("#manage"), el("p", { class: "muted" }, "Loading…"));
    let h;
    try { h = await api("GET", "/api/v1/holds/" + encodeURIComponent(key)); } catch (err) { A.fill($("#manage"), errorBox(err)); return; }
    const held = h.held || [];
    const skip = el("select", { id: "skip-event", name: "event" }, held.map(e => el("option", { value: e.eventId }, "v" + e.version + " · " + e.eventId)));
    const base = "/api/v1/holds/" + encodeURIComponent(key);
    A.fill($("#manage"),
      el("p", {}, el("strong", {}, "Hold "), ident(key, { id: "manage-key" })),
      el("dl", { class: "kv" },
        el("dt", {}, "head record"), el("dd", {}, h.head.record ? el("a", { href: "/record?id=" + encodeURIComponent(h.head.record) }, ident(h.head.record)) : "unknown (recovered: " + (h.recovered ? h.recovered.reason : "") + ")"),
        el("dt", {}, "head version"), el("dd", {}, String(h.head.version)),
        el("dt", {}, "held events"), el("dd", {}, held.length ? held.map(e => "v" + e.version).join(", ") : "none"),
        (h.skipped || []).length ? [el("dt", {}, "skipped"), el("dd", {}, h.skipped.map(s => "v" + s.version + " by " + s.actor + " (" + s.reason + ")").join("; "))] : null),
      el("h3", {}, "Release"),
      el("p", { class: "muted" }, "Marks the head record resolved in its own history (no replay runs for it) and gives the held events to the function in order."),
      confirmed({ id: "release", label: "Release hold", question: "Why release it?", audited: "a release is kept in the head record's history.",
        act: (reason, dryRun) => api("POST", base + "/release", { reason, dryRun }),
        say: (plan, dry) => (dry ? "would release " : "released ") + (plan.hold.held || []).length + " held events in order; head record: " +
          (plan.commands.length ? plan.commands.join(" then ") : "nothing to send (it is " + (plan.headStatus || "missing") + ")") + ".",
        done: () => load() }),
      el("h3", {}, "Skip one event"),
      held.length ? [el("label", { for: "skip-event" }, "Held event to skip", skip),
        confirmed({ id: "skip", label: "Skip event", danger: true, question: "Why skip it?", audited: "a skip is kept on the hold.",
          act: (reason, dryRun) => api("POST", base + "/skip", { reason, dryRun, eventId: skip.value }),
          say: (after, dry) => (dry ? "would skip " : "skipped ") + "the event; " + (after.held || []).length + " events " + (dry ? "would stay" : "stay") + " held.",
          done: () => { load(); manage(key); } })] : el("p", { class: "muted" }, "No event is held."));
  }

  // fetched returns what draws the holds once they have arrived.
  async function fetched() {
    const q = query();
    try {
      const p = await api("GET", "/api/v1/holds?" + q);
      return () => renderHolds(p, q);
    } catch (err) {
      return () => A.fill($("#holds"), err.status === 404 && err.code === "NotConfigured" ? el("p", { class: "muted" }, "This server keeps no holds of Ordered functions.") : errorBox(err));
    }
  }

  async function load() { (await fetched())(); }

  async function start() {
    const form = $("#filters");
    const q = query();
    for (const f of FIELDS) if (q.get(f)) form.elements[f].value = q.get(f);
    form.addEventListener("submit", ev => {
      ev.preventDefault();
      const n = new URLSearchParams();
      for (const f of FIELDS) { const v = form.elements[f].value.trim(); if (v && !(f === "limit" && v === "100")) n.set(f, v); }
      history.replaceState(null, "", "/holds" + (n.toString() ? "?" + n : ""));
      load();
    });
    await session();
    const first = await fetched();
    A.mount();
    first();
    A.ready();
    setInterval(() => { if (!document.hidden) load(); }, 10000);
  }
  start();
})();
