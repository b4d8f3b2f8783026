"use strict";
// The record page: state, function, original event with its body, the
// last error with its stack trace, the computed schedule of the remaining
// retries, the attempt timeline, the history, and (operators) the actions
// the aggregate would accept now. Everything the page needs is asked for
// at once and drawn in one go; a live change redraws only the panels whose
// data changed, so that nothing moves that did not change, an operator's
// half-typed reason survives, and open folds stay open.
(() => {
  const { el, $, api, session, time, abs, badge, errorBox, fnName, mark, value, short8601, COMMAND_LABELS } = A;
  mark("search");
  const id = new URLSearchParams(location.search).get("id") || "";
  const enc = encodeURIComponent(id);
  let view = null;
  // lastResult is the last command this page sent: the banner follows the
  // record from there.
  let lastResult = null;
  const drawn = {}; // the data each panel was last drawn from

  function kv(pairs) {
    return el("dl", { class: "kv" }, pairs.filter(Boolean).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  // panel is a section with a heading and a body of id.
  function panel(hid, title, bodyID, cls, ...extra) {
    return el("section", { class: "panel " + (cls || ""), "aria-labelledby": hid, id: bodyID + "-panel" },
      el("h2", { id: hid }, title), ...extra, el("div", { id: bodyID }));
  }

  // redraw draws box from data with fn unless it was drawn from the same
  // data already.
  function redraw(key, data, fn) {
    const s = JSON.stringify(data);
    if (drawn[key] === s) return;
    drawn[key] = s;
    fn();
  }

  function renderHead(v) {
    const s = v.state;
    A.fill($("#title"), "Record ", el("code", { title: s.id }, s.id));
    A.fill($("#head"), el("span", { id: "status" }, badge("s", s.status)), el("span", { id: "recoverable" }, badge("r", s.recoverable)),
      el("span", { class: "muted" }, fnName(s.function)), el("span", { class: "muted" }, "version " + v.version));
    document.title = "Record " + s.id.slice(0, 8) + " · " + s.status + " · amends";
  }

  function renderState(v) {
    const s = v.state, rs = s.retryState, sp = s.retrySpec;
    const running = s.status === "PREPARED";
    A.fill($("#state"), kv([
      ["status", el("span", { id: "state-status" }, s.status)],
      ["function", el("span", { id: "function" }, fnName(s.function), " ", el("span", { class: "muted" }, "(" + s.function.functionKind + ")"))],
      ["event", el("span", {}, el("code", {}, s.eventId.id), " of ", s.eventId.aggregateId.contextName + "." + s.eventId.aggregateId.aggregateName + "/",
        el("a", { href: "/search?aggregateId=" + encodeURIComponent(s.eventId.aggregateId.aggregateId) }, s.eventId.aggregateId.aggregateId),
        " · version " + s.eventId.version + " · sequence " + s.eventId.seq)],
      ["last outcome", time(s.executeAt)],
      ["retries", el("span", { id: "retries" }, rs.retries + " of " + sp.maxRetries)],
      ["retry spec", "maxRetries " + sp.maxRetries + ", minBackoff " + sp.minBackoff + " s, executionTimeout " + sp.executionTimeout + " s"],
      ["last prepared", rs.retries > 0 ? time(rs.retryAt) : "never"],
      // Only a running attempt times out; on a FAILED or SUCCEEDED record
      // the stored timeoutAt is that of an attempt long over.
      running ? ["times out", el("span", { id: "times-out" }, time(rs.timeoutAt))] : null,
      ["next retry", el("span", { id: "next-retry" }, A.willRetry(s.status, s.recoverable, rs.retries, sp.maxRetries) ? time(rs.nextRetryAt) : "– (not retried by the scheduler)")],
      s.error && s.error.fingerprint ? ["fingerprint", el("a", { href: "/fingerprints#" + s.error.fingerprint }, el("code", {}, s.error.fingerprint))] : null,
      ["updated", time(v.updatedAt)],
    ]));
  }

  function renderError(s) {
    const e = s.error || {};
    A.fill($("#error"),
      e.errorCode === "CircuitOpen" ? el("p", { class: "notice", id: "refused-by-circuit" }, el("strong", {}, "Refused by the circuit: "),
        "the function was not called for this event. The message below quotes the circuit's last real failure, of another event, as such.") : null,
      el("p", {}, el("code", { id: "error-code" }, e.errorCode || "–"), " ", el("span", { id: "error-msg" }, e.errorMsg || "")),
      e.stackTrace ? Stack.view(e.stackTrace) : el("p", { class: "muted" }, "No stack trace was recorded."));
  }

  function renderSchedule(box, sch, title) {
    const rows = sch.attempts.map(a => ({ cells: [String(a.attempt), el("span", { title: "times out at " + short8601(a.timeoutAt) }, short8601(a.at)), time(a.at)] }));
    A.fill(box,
      title ? el("p", {}, el("strong", {}, title)) : null,
      el("p", { class: "muted" }, "Under maxRetries " + sch.spec.maxRetries + ", minBackoff " + sch.spec.minBackoff + " s, executionTimeout " + sch.spec.executionTimeout +
        " s; the earliest each retry is prepared, if every attempt fails at once; each times out executionTimeout after it starts."),
      sch.note ? el("p", { class: "notice" }, sch.note) : null,
      rows.length ? el("div", { class: "table-wrap" }, A.table({ class: "cards schedule" },
        [{ h: "Retry", cls: "num" }, { h: "At (UTC)", cls: "nowrap" }, { h: "In", cls: "nowrap" }], rows)) : null,
      sch.more ? el("p", { class: "muted" }, "and " + sch.more + " more") : null);
  }

  function renderEvent(o) {
    let body = "";
    try { body = JSON.stringify(o.event.body, null, 2); } catch (_) { body = String(o.event.body); }
    A.fill($("#event"), kv([
      ["event", el("code", {}, o.event.id)], ["name", o.event.name + (o.event.revision ? " (revision " + o.event.revision + ")" : "")],
      ["aggregate", o.aggregate.context + "." + o.aggregate.type + "/" + o.aggregate.id],
      ["version", String(o.version)], ["sequence", String(o.seq)], ["appended", time(o.createTime)],
      o.requestId ? ["request id", el("code", {}, o.requestId)] : null,
    ]), el("pre", { id: "event-body", tabindex: "0", "aria-label": "event body" }, body));
  }

  // The history, as an event list: each command with its time, who sent
  // it and why, and what its events changed, field by field, with the
  // value before and after (times readable); the full fields fold out.
  const STATUS_AFTER = { execution_failed_created: "FAILED", compensation_prepared: "PREPARED", execution_failed_applied: "FAILED", execution_success_applied: "SUCCEEDED" };
  const HIDDEN = new Set(["eventId", "function"]); // repeated by every prepare, changed only by function_changed
  // PREFIX puts the fields of the events that carry one part of the state
  // flat where the creation has them nested.
  const PREFIX = { retry_spec_applied: "retrySpec.", function_changed: "function." };

  function flatten(obj, prefix, out) {
    for (const [k, v] of Object.entries(obj || {})) {
      if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) flatten(v, prefix + k + ".", out);
      else out[prefix + k] = v;
    }
    return out;
  }
  const leaf = path => path.slice(path.lastIndexOf(".") + 1);
  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

  // diffs returns, per entry (oldest first), each event's changes against
  // what the earlier events had set.
  function diffs(entries) {
    const known = {};
    return entries.map(e => e.events.map(ev => {
      let body = ev.body;
      if (typeof body === "string") { try { body = JSON.parse(body); } catch (_) { body = {}; } }
      const flat = {};
      if (STATUS_AFTER[ev.name]) flat.status = STATUS_AFTER[ev.name];
      for (const [k, v] of Object.entries(body || {})) {
        if (HIDDEN.has(k) && ev.name !== "function_changed") continue;
        const path = (PREFIX[ev.name] || "") + k;
        if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, path + ".", flat); else flat[path] = v;
      }
      const changes = [];
      for (const [path, v] of Object.entries(flat)) {
        const had = Object.prototype.hasOwnProperty.call(known, path);
        if (had && same(known[path], v)) continue;
        changes.push({ path, from: had ? known[path] : undefined, had, to: v });
        known[path] = v;
      }
      return { name: ev.name, body, changes };
    }));
  }

  function change(c) {
    return el("li", {}, el("span", { class: "path" }, c.path + " "),
      c.had ? [el("span", { class: "from" }, value(leaf(c.path), c.from)), " → "] : null, el("span", { class: "to" }, value(leaf(c.path), c.to)));
  }

  function renderHistory(h) {
    const entries = h.slice().sort((a, b) => a.version - b.version);
    const ds = diffs(entries);
    const rows = entries.map((e, i) => ({ attrs: { "data-version": String(e.version) }, cells: [
      String(e.version),
      el("span", { title: abs(e.createTime) }, short8601(e.createTime)),
      el("code", {}, e.command || "–"),
      [e.actor || el("span", { class: "muted" }, "–"), e.reason ? el("div", { class: "muted" }, e.reason) : null],
      ds[i].map(ev => {
        const head = ev.changes.filter(c => c.path !== "error.stackTrace").slice(0, 3);
        return el("details", { class: "hist-ev", "data-key": e.version + ":" + ev.name },
          el("summary", {}, el("code", {}, ev.name), head.length ? ": " : "", head.map((c, j) => [j ? ", " : "", leaf(c.path) + " ", c.had ? [value(leaf(c.path), c.from), " → "] : null, value(leaf(c.path), c.to)])),
          el("ul", { class: "diff" }, ev.changes.length ? ev.changes.map(change) : el("li", { class: "muted" }, "no field changed")),
          el("details", {}, el("summary", {}, "JSON"), el("pre", {}, JSON.stringify(ev.body, null, 2))));
      }),
    ] })).reverse();
    const open = new Set([...document.querySelectorAll("#history details.hist-ev[open]")].map(d => d.dataset.key));
    const t = A.table({ id: "history-table", class: "cards history" },
      [{ h: "v", cls: "num" }, { h: "Time (UTC)" }, { h: "Command" }, { h: "By" }, { h: "Changed" }], rows);
    t.prepend(el("colgroup", {}, el("col", { class: "c-v" }), el("col", { class: "c-time" }), el("col", { class: "c-cmd" }), el("col", { class: "c-by" }), el("col", {})));
    A.fill($("#history"), t);
    for (const d of document.querySelectorAll("#history details.hist-ev")) if (open.has(d.dataset.key)) d.open = true;
  }

  // The attempt timeline: the first failure and each replay with when it
  // started, how long it ran (a bar on a scale whose full width is the
  // longest attempt), where and in which trace, its error, and the point
  // where no automatic retry was left.
  function duration(ms) {
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
  }
  function meta(label, v, cls) {
    return el("span", { class: "tl-meta" }, el("span", { class: "muted" }, label + " "), v ? el("code", { class: cls }, v) : el("span", { class: "muted" }, "–"));
  }
  function attemptItem(e, longest) {
    const start = e.startedAt || e.endedAt || e.preparedAt;
    const title = e.attempt === 0 ? "First failure" : "Replay " + e.attempt;
    const timed = e.startedAt && e.endedAt;
    return el("li", { class: "tl-item tl-" + e.outcome, "data-attempt": String(e.attempt), "data-outcome": e.outcome },
      el("div", { class: "tl-head" }, el("strong", {}, title), badge("s", e.outcome),
        start ? el("span", { class: "nowrap", title: abs(start) }, short8601(start)) : null,
        timed ? el("span", { class: "tl-dur" }, "ran " + duration(e.durationMs || 0)) : el("span", { class: "muted" }, "duration unknown")),
      timed ? el("progress", { class: "tl-bar", max: String(longest), value: String(e.durationMs || 0),
        "aria-label": title.toLowerCase() + " ran " + duration(e.durationMs || 0) + " of the longest attempt's " + duration(longest) }) : null,
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
  function renderAttempts(a) {
    const timed = a.timeline.filter(e => e.kind !== "final_failure" && e.startedAt && e.endedAt);
    const longest = Math.max(1, ...timed.map(e => e.durationMs || 0));
    A.fill($("#attempts"), a.timeline.length ? [
      timed.length ? el("div", { class: "tl-scale", id: "tl-scale", title: "each bar is an attempt's run time on this scale" },
        el("span", {}, "0"), el("span", {}, "run time"), el("span", { id: "tl-scale-max" }, duration(longest) + " (longest)")) : null,
      el("ol", { class: "timeline", id: "attempts-list" }, a.timeline.map(e => e.kind === "final_failure" ? finalItem(e) : attemptItem(e, longest)))]
      : el("p", { class: "muted" }, "No attempt is recorded."));
  }

  // The banner of the last command follows the record: it says what the
  // command did and what the record is now, as the State panel does.
  function renderResult() {
    if (!lastResult || !view) return;
    const later = view.version > lastResult.version;
    A.fill($("#action-result"), el("div", { class: "ok-msg", id: "action-ok", "data-status": view.state.status },
      lastResult.label + " accepted at version " + lastResult.version + (lastResult.duplicate ? " (already done)" : "") + ". ",
      "The record is now ", el("strong", { id: "action-status" }, view.state.status),
      later ? " (version " + view.version + ")" : "", "."),
    el("button", { type: "button", class: "close", "aria-label": "dismiss", onclick: () => { lastResult = null; A.fill($("#action-result")); } }, "×"));
  }

  // send runs a command and shows the result or the aggregate's refusal.
  async function send(name, body, label) {
    const out = $("#action-result");
    lastResult = null;
    A.fill(out, el("p", { class: "muted" }, label + "…"));
    try {
      const res = await api("POST", "/api/v1/records/" + enc + "/" + name, body);
      lastResult = { label, version: res.version, duplicate: res.duplicate };
      await reload();
      renderResult();
    } catch (err) {
      A.fill(out, errorBox(err), el("button", { type: "button", class: "close", "aria-label": "dismiss", onclick: () => A.fill(out) }, "×"));
    }
  }

  function action(name, why, ...children) {
    return el("div", { class: "action", "data-action": name }, el("h3", {}, COMMAND_LABELS[name]), why ? el("p", { class: "muted why" }, why) : null, ...children);
  }

  // renderActions offers the commands the aggregate accepts now, and says
  // why the others are not there (and when time alone brings them back).
  // While the record waits for its circuit, the prepares are offered as
  // the circuit's probe (a plain one would be refused).
  let refreshAt = null;
  let circuitWait = null;
  function renderActions(v, acts) {
    $("#actions-panel").classList.remove("hidden");
    const s = v.state;
    const by = Object.fromEntries(acts.actions.map(a => [a.name, a]));
    const reasonFor = idp => el("input", { id: idp, placeholder: "reason (recorded)", "aria-label": "reason" });
    const reasonBody = input => input.value.trim() ? { reason: input.value.trim() } : {};
    const cards = [], settings = [];

    const probe = circuitWait && !circuitWait.forced;
    const probeBody = body => probe ? Object.assign({ probe: true }, body) : body;
    if (circuitWait && circuitWait.forced) {
      // Nothing can run: an operator opened the circuit.
    } else if (by.prepare_compensation && by.prepare_compensation.accepted) {
      const prepR = reasonFor("prepare-reason");
      const label = probe ? "Prepare as the circuit's probe" : "Prepare";
      cards.push(action("prepare_compensation", probe ? "The circuit is " + circuitWait.phase.toLowerCase().replace("_", "-") + ": this replay would be its probe; its success counts towards closing it." : by.prepare_compensation.why, prepR,
        el("button", { type: "button", class: "primary", id: "do-prepare", onclick: () => send("prepare_compensation", probeBody(reasonBody(prepR)), label) }, label)));
    }
    if (by.force_prepare_compensation && by.force_prepare_compensation.accepted && !(circuitWait && circuitWait.forced)) {
      const forceR = el("input", { id: "force-reason", placeholder: "why (required)", "aria-label": "reason for force-prepare", required: true });
      cards.push(action("force_prepare_compensation", by.force_prepare_compensation.why, forceR,
        el("button", { type: "button", class: "danger", id: "do-force", onclick: () => {
          if (!forceR.value.trim()) { A.fill($("#action-result"), errorBox(new Error("A force-prepare needs a reason: say why it is safe to replay now."))); forceR.focus(); return; }
          send("force_prepare_compensation", probeBody(reasonBody(forceR)), "Force-prepare");
        } }, "Force-prepare")));
    }
    if (by.apply_retry_spec && by.apply_retry_spec.accepted) {
      const specIn = (n, val) => el("input", { id: "spec-" + n, name: n, type: "number", min: "0", value: String(val) });
      const mr = specIn("maxRetries", s.retrySpec.maxRetries), mb = specIn("minBackoff", s.retrySpec.minBackoff), et = specIn("executionTimeout", s.retrySpec.executionTimeout);
      const specR = reasonFor("spec-reason");
      const previewBox = el("div", { id: "spec-preview" });
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
      settings.push(action("apply_retry_spec", by.apply_retry_spec.why,
        el("div", { class: "row" }, el("label", {}, "maxRetries", mr), el("label", {}, "minBackoff (s)", mb), el("label", {}, "executionTimeout (s)", et)),
        el("button", { type: "button", id: "do-preview", onclick: preview }, "Preview schedule"), previewBox, specR,
        el("button", { type: "button", id: "do-spec", onclick: () => send("apply_retry_spec",
          Object.assign({ maxRetries: Number(mr.value), minBackoff: Number(mb.value), executionTimeout: Number(et.value) }, reasonBody(specR)), "Apply retry spec") }, "Apply retry spec")));
    }
    if (by.mark_recoverable && by.mark_recoverable.accepted) {
      // Only the other classifications: marking the current one is refused.
      const recSel = el("select", { id: "recoverable-value", "aria-label": "recoverability" },
        ["RECOVERABLE", "UNRECOVERABLE", "UNKNOWN"].filter(x => x !== s.recoverable).map(x => el("option", {}, x)));
      const recR = reasonFor("recoverable-reason");
      settings.push(action("mark_recoverable", by.mark_recoverable.why || "now " + s.recoverable, recSel, recR,
        el("button", { type: "button", id: "do-recoverable", onclick: () => send("mark_recoverable", Object.assign({ recoverable: recSel.value }, reasonBody(recR)), "Mark recoverable") }, "Mark")));
    }
    if (by.change_function && by.change_function.accepted) {
      const f = s.function;
      const fk = el("select", { id: "fn-kind", "aria-label": "function kind" }, ["COMMAND", "SOURCING", "EVENT", "STATE_EVENT", "ERROR"].map(x => el("option", { selected: x === f.functionKind || undefined }, x)));
      const fc = el("input", { id: "fn-context", value: f.contextName, "aria-label": "context name" });
      const fp = el("input", { id: "fn-processor", value: f.processorName, "aria-label": "processor name" });
      const fnm = el("input", { id: "fn-name", value: f.name, "aria-label": "function name" });
      const fnR = el("input", { id: "fn-reason", placeholder: "why (required)", "aria-label": "reason for change function" });
      settings.push(action("change_function", by.change_function.why, el("div", { class: "row" }, fk, fc, fp, fnm), fnR,
        el("button", { type: "button", id: "do-function", onclick: () => send("change_function",
          Object.assign({ functionKind: fk.value, contextName: fc.value, processorName: fp.value, name: fnm.value }, reasonBody(fnR)), "Change function") }, "Change function")));
    }
    const refused = acts.actions.filter(a => !a.accepted);
    const finished = s.status === "SUCCEEDED";
    A.fill($("#actions"),
      cards.length ? el("div", { class: "actions", id: "replay-actions" }, cards) : el("p", { class: "muted", id: "no-replay" }, "No replay can be asked for now."),
      refused.length ? el("ul", { class: "unavailable", id: "unavailable" }, refused.map(a => el("li", { "data-action": a.name },
        el("strong", {}, COMMAND_LABELS[a.name]), " is not offered: ", a.why || "the aggregate would refuse it now",
        a.from ? [" (", time(a.from), ")"] : null))) : null,
      finished
        ? el("details", { class: "settings", id: "settings" }, el("summary", {}, "Settings (retry spec, recoverability, function)"), el("div", { class: "actions" }, settings))
        : el("div", { class: "actions", id: "settings" }, settings));
    // A command that time alone makes acceptable appears when it is.
    clearTimeout(refreshAt);
    const soon = Math.min(...refused.filter(a => a.from).map(a => a.from));
    if (isFinite(soon)) refreshAt = setTimeout(() => reload().catch(() => {}), Math.max(0, soon - Date.now()) + 50);
  }

  // load asks for everything the page shows at once.
  function load() {
    const get = path => api("GET", path).then(v => ({ ok: true, v }), err => ({ ok: false, err }));
    const record = get("/api/v1/records/" + enc);
    return {
      record,
      schedule: get("/ui/v1/records/" + enc + "/schedule"),
      attempts: get("/api/v1/records/" + enc + "/attempts"),
      history: get("/api/v1/records/" + enc + "/history"),
      actions: get("/ui/v1/records/" + enc + "/actions"),
      // The function's circuit comes once the record says which it is.
      circuit: record.then(r => {
        const f = r.ok && r.v.state.function;
        return f ? get("/api/v1/circuits/" + encodeURIComponent(f.contextName + "." + f.processorName + "." + f.name)) : { ok: false };
      }),
    };
  }

  // waiting is the circuit this record waits for: its function's, when it
  // is not closed and the record is not finished; null otherwise.
  function waiting(v, c) {
    return c && c.ok && c.v.phase !== "CLOSED" && v.state.status !== "SUCCEEDED" ? c.v : null;
  }

  // renderCircuit says that the record waits for its function's circuit,
  // since when, and what happens next.
  function renderCircuit(c) {
    // Its box is the first of the content, so that the content, drawn in
    // the same frame, does not move down under it.
    if (!c) { A.fill($("#circuit-box")); return; }
    const phase = c.phase === "HALF_OPEN" ? "half-open" : "open";
    A.fill($("#circuit-box"), el("div", { class: "notice", id: "circuit-wait", role: "status" },
      el("strong", {}, "Waiting for the circuit of " + c.function + ": "), phase, " since ", A.incidentSince(c),
      c.forced ? ", opened by an operator; nothing calls the function until an operator closes it." :
        [", its dependency failing (", String(c.refused || 0), " calls refused). The recovery drain prepares this record once the circuit closes; a prepare now would be refused, since its replay would be refused and cost a retry, unless it is the circuit's probe."],
      c.last && c.last.message ? el("p", { class: "muted" }, "The circuit's last real failure (of another event): ", c.last.message) : null,
      el("p", {}, el("a", { href: A.circuitHref(c.function), id: "incident-link" }, "The incident: circuit, drain, waiting records →"))));
  }

  // draw puts what load brought on the page, each panel only if its data
  // changed.
  async function draw(p) {
    const [record, schedule, attempts, history, actions, circ] = await Promise.all([p.record, p.schedule, p.attempts, p.history, p.actions, p.circuit]);
    if (!record.ok) { A.fill($("#banner"), errorBox(record.err)); $("#loading") && $("#loading").remove(); throw record.err; }
    view = record.v;
    circuitWait = waiting(view, circ);
    redraw("circuit", circuitWait, () => renderCircuit(circuitWait));
    const show = (key, r, box, fn) => redraw(key, r.ok ? r.v : String(r.err && r.err.message), () => r.ok ? fn(r.v) : A.fill($(box), errorBox(r.err)));
    redraw("head", [view.version, view.state.status, view.state.recoverable, view.state.function], () => renderHead(view));
    redraw("state", view, () => renderState(view));
    redraw("error", view.state.error, () => renderError(view.state));
    show("schedule", schedule, "#schedule", v => renderSchedule($("#schedule"), v));
    show("attempts", attempts, "#attempts", renderAttempts);
    show("history", history, "#history", renderHistory);
    if (A.isOperator()) {
      const s = view.state;
      if (actions.ok) redraw("actions", [actions.v.actions, s.retrySpec, s.recoverable, s.function, s.status, circuitWait && circuitWait.phase], () => renderActions(view, actions.v));
      else redraw("actions", String(actions.err.message), () => A.fill($("#actions"), errorBox(actions.err)));
    }
    renderResult();
  }

  async function reload() { await draw(load()); }

  function layout(operator) {
    A.fill($("#content"), el("div", { id: "circuit-box" }),
      el("div", { class: "grid2 record" },
        panel("state-h", "State", "state"),
        el("div", {},
          el("section", { class: "panel" + (operator ? "" : " hidden"), id: "actions-panel", "aria-labelledby": "act-h" }, el("h2", { id: "act-h" }, "Actions"), el("div", { id: "actions" })),
          panel("sched-h", "Remaining retries", "schedule"))),
      panel("err-h", "Last error", "error"),
      panel("att-h", "Attempts", "attempts"),
      panel("evt-h", "Original event", "event"),
      panel("hist-h", "History", "history", "", el("p", { class: "muted" }, "Newest first; open a command to see each field it changed, before → after.")));
  }

  async function start() {
    if (!id) { await session(); A.fill($("#banner"), errorBox(new Error("No record id: open a record from the search page."))); $("#loading").remove(); return; }
    A.fill($("#title"), "Record ", el("code", {}, id));
    // The session and every piece of the record are asked for at once.
    const p = load();
    const event = api("GET", "/ui/v1/records/" + enc + "/event").then(v => ({ ok: true, v }), err => ({ ok: false, err }));
    const me = await session();
    // Drawn in one go once everything has arrived, so nothing moves.
    await Promise.allSettled([p.record, p.schedule, p.attempts, p.history, p.actions, p.circuit, event]);
    const record = await p.record;
    if (record.ok) layout(me.role === "operator");
    try { await draw(p); } catch (_) { return; }
    const ev = await event;
    if (ev.ok) renderEvent(ev.v); else A.fill($("#event"), errorBox(ev.err));
    A.ready();
    // Live: redraw when this record changes.
    A.live({ records: m => { if (m.records.some(r => r.id === id) || m.count > m.records.length) reload().catch(() => {}); }, resync: () => reload().catch(() => {}) });
  }
  start();
})();
