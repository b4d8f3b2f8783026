"use strict";
// The record page: state, function, original event with its body, the
// last error with its stack trace, the computed schedule of the remaining
// retries, the attempt timeline, the history, and (operators) the actions.
(() => {
  const { el, $, api, session, time, abs, badge, errorBox, fnName, mark } = A;
  mark("search");
  const id = new URLSearchParams(location.search).get("id") || "";
  const enc = encodeURIComponent(id);
  let view = null;

  function kv(pairs) {
    return el("dl", { class: "kv" }, pairs.filter(Boolean).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  function renderState(v) {
    const s = v.state, rs = s.retryState, sp = s.retrySpec;
    A.fill($("#title"), "Record ", el("code", {}, s.id));
    A.fill($("#state"), kv([
      ["status", el("span", { id: "status" }, badge("s", s.status))],
      ["recoverable", el("span", { id: "recoverable" }, badge("r", s.recoverable))],
      ["version", el("span", { id: "version" }, String(v.version))],
      ["function", el("span", { id: "function" }, fnName(s.function), " ", el("span", { class: "muted" }, "(" + s.function.functionKind + ")"))],
      ["event", el("span", {}, el("code", {}, s.eventId.id), " of ", s.eventId.aggregateId.contextName + "." + s.eventId.aggregateId.aggregateName + "/",
        el("a", { href: "/search?aggregateId=" + encodeURIComponent(s.eventId.aggregateId.aggregateId) }, s.eventId.aggregateId.aggregateId),
        " · version " + s.eventId.version + " · sequence " + s.eventId.seq)],
      ["last outcome", time(s.executeAt)],
      ["retries", el("span", { id: "retries" }, rs.retries + " of " + sp.maxRetries)],
      ["retry spec", "maxRetries " + sp.maxRetries + ", minBackoff " + sp.minBackoff + "s, executionTimeout " + sp.executionTimeout + "s"],
      ["last prepared", rs.retries > 0 ? time(rs.retryAt) : "never"],
      ["times out", time(rs.timeoutAt)],
      ["next retry", A.willRetry(s.status, s.recoverable, rs.retries, sp.maxRetries) ? time(rs.nextRetryAt) : "– (not retried by the scheduler)"],
      ["updated", time(v.updatedAt)],
    ]));
    const e = s.error || {};
    A.fill($("#error"), 
      el("p", {}, el("code", { id: "error-code" }, e.errorCode || "–"), " ", el("span", { id: "error-msg" }, e.errorMsg || "")),
      e.stackTrace ? Stack.view(e.stackTrace) : el("p", { class: "muted" }, "No stack trace was recorded."));
  }

  function renderSchedule(box, sch, title) {
    const rows = sch.attempts.map(a => el("tr", {}, el("td", { class: "num" }, a.attempt), el("td", { class: "nowrap" }, short8601(a.at)), el("td", { class: "nowrap" }, time(a.at)), el("td", { class: "nowrap" }, short8601(a.timeoutAt))));
    A.fill(box, 
      title ? el("p", {}, el("strong", {}, title)) : null,
      el("p", { class: "muted" }, "Under maxRetries " + sch.spec.maxRetries + ", minBackoff " + sch.spec.minBackoff + "s, executionTimeout " + sch.spec.executionTimeout +
        "s; the earliest each retry is prepared, if every attempt fails at once."),
      sch.note ? el("p", { class: "notice" }, sch.note) : null,
      rows.length ? el("div", { class: "table-wrap" }, el("table", { class: "schedule" },
        el("thead", {}, el("tr", {}, ["Retry", "At (UTC)", "", "Times out (UTC)"].map(h => el("th", { scope: "col" }, h)))), el("tbody", {}, rows))) : null,
      sch.more ? el("p", { class: "muted" }, "and " + sch.more + " more") : null);
  }

  // short8601 is an absolute UTC time to the second.
  function short8601(ms) { return abs(ms).replace("T", " ").replace(/\.\d+Z$/, "Z"); }

  async function loadSchedule() {
    try { renderSchedule($("#schedule"), await api("GET", "/ui/v1/records/" + enc + "/schedule")); }
    catch (err) { A.fill($("#schedule"), errorBox(err)); }
  }

  async function loadEvent() {
    try {
      const o = await api("GET", "/ui/v1/records/" + enc + "/event");
      let body = "";
      try { body = JSON.stringify(o.event.body, null, 2); } catch (_) { body = String(o.event.body); }
      A.fill($("#event"), kv([
        ["event", el("code", {}, o.event.id)], ["name", o.event.name + (o.event.revision ? " (revision " + o.event.revision + ")" : "")],
        ["aggregate", o.aggregate.context + "." + o.aggregate.type + "/" + o.aggregate.id],
        ["version", String(o.version)], ["sequence", String(o.seq)], ["appended", time(o.createTime)],
        o.requestId ? ["request id", el("code", {}, o.requestId)] : null,
      ]), el("pre", { id: "event-body", tabindex: "0", "aria-label": "event body" }, body));
    } catch (err) { A.fill($("#event"), errorBox(err)); }
  }

  // changedFields names what a history entry's events changed.
  function changed(entry) {
    const out = [];
    for (const ev of entry.events) {
      const b = ev.body || {};
      const f = Object.keys(b).filter(k => !["eventId", "function"].includes(k) || ev.name === "function_changed");
      out.push(el("div", {}, el("code", {}, ev.name), f.length ? ": " + f.map(k => k + "=" + short(b[k])).join(", ") : ""));
    }
    return out;
  }
  function short(v) {
    const s = typeof v === "object" ? JSON.stringify(v) : String(v);
    return s.length > 120 ? s.slice(0, 120) + "…" : s;
  }

  async function loadHistory() {
    try {
      const h = await api("GET", "/api/v1/records/" + enc + "/history");
      A.fill($("#history"), el("table", { id: "history-table" },
        el("thead", {}, el("tr", {}, ["v", "Command", "Actor", "Reason", "Time", "Changed"].map(x => el("th", { scope: "col" }, x)))),
        el("tbody", {}, h.map(e => el("tr", {},
          el("td", { class: "num" }, e.version), el("td", {}, el("code", {}, e.command || "–")),
          el("td", {}, e.actor || el("span", { class: "muted" }, "–")), el("td", {}, e.reason || el("span", { class: "muted" }, "–")),
          el("td", { class: "nowrap" }, el("span", { title: abs(e.createTime) }, short8601(e.createTime))), el("td", {}, changed(e)))))));
    } catch (err) { A.fill($("#history"), errorBox(err)); }
  }

  // The attempt timeline: the first failure and each replay with when it
  // started, how long it ran, where and in which trace, its error, and
  // the point where no automatic retry was left.
  function duration(ms) {
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
  }
  function meta(label, value, cls) {
    return el("span", { class: "tl-meta" }, el("span", { class: "muted" }, label + " "), value ? el("code", { class: cls }, value) : el("span", { class: "muted" }, "–"));
  }
  function attemptItem(e, longest) {
    const start = e.startedAt || e.endedAt || e.preparedAt;
    const title = e.attempt === 0 ? "First failure" : "Replay " + e.attempt;
    return el("li", { class: "tl-item tl-" + e.outcome, "data-attempt": String(e.attempt), "data-outcome": e.outcome },
      el("div", { class: "tl-head" }, el("strong", {}, title), badge("s", e.outcome),
        start ? el("span", { class: "nowrap", title: abs(start) }, short8601(start)) : null,
        e.startedAt && e.endedAt ? el("span", { class: "tl-dur" }, duration(e.durationMs || 0)) : el("span", { class: "muted" }, "duration unknown")),
      e.startedAt && e.endedAt ? el("progress", { class: "tl-bar", max: String(longest), value: String(e.durationMs || 0), "aria-label": "duration of " + title.toLowerCase() }) : null,
      el("div", { class: "tl-line" }, meta("instance", e.instance, "tl-instance"), meta("build", e.build, "tl-build"), meta("trace", e.traceId, "tl-trace"),
        e.preparedAt ? el("span", { class: "tl-meta muted" }, "prepared " + short8601(e.preparedAt)) : null),
      e.error ? el("p", { class: "tl-error" }, el("code", {}, e.error.errorCode), " ", e.error.errorMsg || "") : null);
  }
  function finalItem(e) {
    return el("li", { class: "tl-item tl-final", "data-final": e.reason },
      el("div", { class: "tl-head" }, el("strong", {}, "Final failure"), el("span", { class: "badge s-FAILED" }, e.reason),
        e.endedAt ? el("span", { class: "nowrap", title: abs(e.endedAt) }, short8601(e.endedAt)) : null),
      el("p", { class: "muted" }, e.detail || ""));
  }
  async function loadAttempts() {
    try {
      const a = await api("GET", "/api/v1/records/" + enc + "/attempts");
      const longest = Math.max(1, ...a.timeline.map(e => e.durationMs || 0));
      A.fill($("#attempts"), a.timeline.length
        ? el("ol", { class: "timeline", id: "attempts-list" }, a.timeline.map(e => e.kind === "final_failure" ? finalItem(e) : attemptItem(e, longest)))
        : el("p", { class: "muted" }, "No attempt is recorded."));
    } catch (err) { A.fill($("#attempts"), errorBox(err)); }
  }

  async function loadRecord() {
    try {
      view = await api("GET", "/api/v1/records/" + enc);
      renderState(view);
      if (A.isOperator()) renderActions(view);
    } catch (err) {
      A.fill($("#banner"), errorBox(err));
      throw err;
    }
  }

  async function reload() {
    await loadRecord();
    loadSchedule();
    loadAttempts();
    loadHistory();
  }

  // send runs a command and shows the result or the aggregate's refusal.
  async function send(name, body, label) {
    const out = $("#action-result");
    A.fill(out, el("p", { class: "muted" }, label + "…"));
    try {
      const res = await api("POST", "/api/v1/records/" + enc + "/" + name, body);
      A.fill(out, el("div", { class: "ok-msg", id: "action-ok" }, label + " done: now " + res.state.status + ", version " + res.version + (res.duplicate ? " (already done)" : "")));
      await reload();
    } catch (err) {
      A.fill(out, errorBox(err));
    }
  }

  function action(title, ...children) {
    return el("div", { class: "action" }, el("h3", {}, title), ...children);
  }

  function renderActions(v) {
    $("#actions-panel").classList.remove("hidden");
    const s = v.state;
    const reasonFor = idp => el("input", { id: idp, placeholder: "reason (recorded)", "aria-label": "reason" });
    const prepR = reasonFor("prepare-reason");
    const forceR = el("input", { id: "force-reason", placeholder: "why (required)", "aria-label": "reason for force-prepare", required: true });
    const specIn = (n, val) => el("input", { id: "spec-" + n, name: n, type: "number", min: "0", value: String(val) });
    const mr = specIn("maxRetries", s.retrySpec.maxRetries), mb = specIn("minBackoff", s.retrySpec.minBackoff), et = specIn("executionTimeout", s.retrySpec.executionTimeout);
    const specR = reasonFor("spec-reason");
    const previewBox = el("div", { id: "spec-preview" });
    const recSel = el("select", { id: "recoverable-value", "aria-label": "recoverability" }, ["RECOVERABLE", "UNRECOVERABLE", "UNKNOWN"].map(x => el("option", { selected: x === s.recoverable || undefined }, x)));
    const recR = reasonFor("recoverable-reason");
    const f = s.function;
    const fk = el("select", { id: "fn-kind", "aria-label": "function kind" }, ["COMMAND", "SOURCING", "EVENT", "STATE_EVENT", "ERROR"].map(x => el("option", { selected: x === f.functionKind || undefined }, x)));
    const fc = el("input", { id: "fn-context", value: f.contextName, "aria-label": "context name" });
    const fp = el("input", { id: "fn-processor", value: f.processorName, "aria-label": "processor name" });
    const fnm = el("input", { id: "fn-name", value: f.name, "aria-label": "function name" });
    const fnR = el("input", { id: "fn-reason", placeholder: "why (required)", "aria-label": "reason for change function" });
    const reasonBody = input => input.value.trim() ? { reason: input.value.trim() } : {};

    let timer = null;
    const preview = () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const q = new URLSearchParams({ maxRetries: mr.value, minBackoff: mb.value, executionTimeout: et.value });
        try { renderSchedule(previewBox, await api("GET", "/ui/v1/records/" + enc + "/schedule?" + q), "Schedule under the new spec"); }
        catch (err) { A.fill(previewBox, errorBox(err)); }
      }, 200);
    };
    [mr, mb, et].forEach(i => i.addEventListener("input", preview));

    A.fill($("#actions"), 
      action("Prepare", el("p", { class: "muted" }, "Replay now, within the retry limits."), prepR,
        el("button", { type: "button", id: "do-prepare", onclick: () => send("prepare_compensation", reasonBody(prepR), "Prepare") }, "Prepare")),
      action("Force-prepare", el("p", { class: "muted" }, "Replay now, beyond the retry limits."), forceR,
        el("button", { type: "button", class: "danger", id: "do-force", onclick: () => {
          if (!forceR.value.trim()) { A.fill($("#action-result"), errorBox(new Error("A force-prepare needs a reason: say why it is safe to replay now."))); forceR.focus(); return; }
          send("force_prepare_compensation", reasonBody(forceR), "Force-prepare");
        } }, "Force-prepare")),
      action("Retry spec", el("div", { class: "row" }, el("label", {}, "maxRetries", mr), el("label", {}, "minBackoff (s)", mb), el("label", {}, "executionTimeout (s)", et)),
        el("button", { type: "button", id: "do-preview", onclick: preview }, "Preview schedule"), previewBox, specR,
        el("button", { type: "button", id: "do-spec", onclick: () => send("apply_retry_spec",
          Object.assign({ maxRetries: Number(mr.value), minBackoff: Number(mb.value), executionTimeout: Number(et.value) }, reasonBody(specR)), "Apply retry spec") }, "Apply retry spec")),
      action("Mark recoverable", recSel, recR,
        el("button", { type: "button", id: "do-recoverable", onclick: () => send("mark_recoverable", Object.assign({ recoverable: recSel.value }, reasonBody(recR)), "Mark recoverable") }, "Mark")),
      action("Change function", el("div", { class: "row" }, fk, fc, fp, fnm), fnR,
        el("button", { type: "button", id: "do-function", onclick: () => send("change_function",
          Object.assign({ functionKind: fk.value, contextName: fc.value, processorName: fp.value, name: fnm.value }, reasonBody(fnR)), "Change function") }, "Change function")));
  }

  async function start() {
    await session();
    if (!id) { A.fill($("#banner"), errorBox(new Error("No record id: open a record from the search page."))); return; }
    try { await reload(); } catch (_) { return; }
    loadEvent();
    // Live: reload when this record changes.
    A.live({ records: m => { if (m.records.some(r => r.id === id) || m.count > m.records.length) reload(); }, resync: reload });
  }
  start();
})();
