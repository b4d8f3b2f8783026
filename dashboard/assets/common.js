// amends dashboard: shared helpers. Plain JavaScript, no library, no build.
"use strict";

const A = (() => {
  let csrf = "";
  let me = null;

  // el builds an element: el("a", {href: "/"}, "text", child...). Text is
  // always set as text, never parsed as HTML.
  function el(tag, attrs, ...children) {
    const svg = ["svg", "path", "line", "text", "g", "polyline", "rect", "title", "circle"].includes(tag);
    const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.setAttribute("class", v);
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "value" && !svg) e.value = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // fill replaces node's children, skipping null, undefined and false.
  function fill(node, ...kids) {
    node.replaceChildren(...kids.flat(Infinity).filter(k => k !== null && k !== undefined && k !== false));
    return node;
  }

  function $(sel, root) { return (root || document).querySelector(sel); }

  // ApiError is a refusal of the API: {code, message, details}, with the
  // status and request id.
  class ApiError extends Error {
    constructor(status, body, requestId) {
      super(body && body.message ? body.message : "the server answered " + status);
      this.status = status;
      this.code = body && body.code ? body.code : "HTTP" + status;
      this.details = body && body.details ? body.details : null;
      this.requestId = requestId || "";
    }
  }

  function newRequestId() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  }

  // api calls the JSON API. State-changing calls carry the session's CSRF
  // token and a request id; the cookie goes along (same origin only).
  async function api(method, path, body, opts) {
    opts = opts || {};
    const headers = { "Accept": opts.accept || "application/json" };
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";
      headers["X-CSRF-Token"] = csrf;
      headers["X-Request-Id"] = opts.requestId || newRequestId();
    }
    const res = await fetch(path, {
      method, headers, credentials: "same-origin", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (opts.raw && res.ok) return res;
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    if (!res.ok) {
      if (res.status === 401 && !opts.noRedirect) {
        toSignIn();
        await new Promise(() => {}); // the page is going away
      }
      throw new ApiError(res.status, data, headers["X-Request-Id"]);
    }
    return data;
  }

  // toSignIn leaves for the sign-in page once, however many requests were
  // refused: a second navigation would replace the page being shown.
  let leaving = false;
  function toSignIn() {
    if (leaving) return;
    leaving = true;
    const next = location.pathname + location.search;
    location.assign("/signin?next=" + encodeURIComponent(next));
  }

  // session loads who we are, fills the header and returns it.
  async function session() {
    me = await api("GET", "/ui/v1/session");
    csrf = me.csrf;
    document.body.classList.toggle("is-operator", me.role === "operator");
    const who = $("#who");
    if (who) {
      fill(who, 
        el("span", { class: "live-dot", id: "live-dot", title: "live updates" }),
        el("span", { id: "who-name", title: me.local ? "local (no tokens)" : me.name + " · " + me.role }, me.local ? "local (no tokens)" : me.name + " · " + me.role));
      if (!me.local) who.append(el("button", { type: "button", id: "signout", onclick: signOut }, "Sign out"));
    }
    return me;
  }

  async function signOut() {
    try { await api("DELETE", "/ui/v1/session", undefined, { noRedirect: true }); } catch (_) { /* signed out anyway */ }
    location.assign("/signin");
  }

  function isOperator() { return me && me.role === "operator"; }

  // live opens the event stream of counts and changed records. A browser
  // allows only six connections to a server over HTTP/1.1, and each open
  // stream holds one: the stream is closed while the page is hidden or
  // left (so background tabs and pages kept for the back button never
  // starve the requests of the page in front), and opened again, which
  // sends the counts afresh, when it is shown.
  function live(handlers) {
    const dot = () => $("#live-dot");
    let es = null, opened = 0;
    const open = () => {
      if (es) return;
      // What changed while the stream was closed is not replayed: a page
      // reloads its data (resync) when the stream is opened again.
      if (opened++ > 0 && handlers.resync) handlers.resync();
      es = new EventSource("/ui/v1/live");
      es.addEventListener("open", () => dot() && dot().classList.add("on"));
      es.addEventListener("error", () => dot() && dot().classList.remove("on"));
      if (handlers.counts) es.addEventListener("counts", ev => handlers.counts(JSON.parse(ev.data)));
      if (handlers.records) es.addEventListener("records", ev => handlers.records(JSON.parse(ev.data)));
    };
    const close = () => {
      if (!es) return;
      es.close();
      es = null;
      if (dot()) dot().classList.remove("on");
    };
    document.addEventListener("visibilitychange", () => (document.hidden ? close() : open()));
    addEventListener("pagehide", close);
    addEventListener("pageshow", () => { if (!document.hidden) open(); });
    if (!document.hidden) open();
    return { close };
  }

  // Times: absolute (UTC ISO) and relative to now.
  function rel(ms) {
    if (!ms) return "";
    const d = ms - Date.now(), a = Math.abs(d);
    const units = [["d", 86400000], ["h", 3600000], ["m", 60000], ["s", 1000]];
    let s = "now";
    for (const [u, n] of units) { if (a >= n) { s = Math.floor(a / n) + u; break; } }
    if (s === "now") return "now";
    return d < 0 ? s + " ago" : "in " + s;
  }
  function abs(ms) { return ms ? new Date(ms).toISOString().replace(".000Z", "Z") : ""; }
  function time(ms) {
    if (!ms) return el("span", { class: "muted" }, "–");
    return el("time", { datetime: abs(ms), title: abs(ms) }, rel(ms));
  }
  function dur(ms) {
    if (!ms) return "0s";
    const s = Math.round(ms / 1000);
    if (s < 120) return s + "s";
    if (s < 7200) return Math.round(s / 60) + "m";
    if (s < 172800) return Math.round(s / 3600) + "h";
    return Math.round(s / 86400) + "d";
  }

  function badge(kind, v) { return el("span", { class: "badge " + kind + "-" + v }, v); }

  // isTimeKey tells the fields that hold an epoch-ms time.
  function isTimeKey(k) { return /(At|Time|From|Seen)$/.test(k) || k === "at"; }

  // value formats a field's value for a reader: epoch-ms times as UTC and
  // relative to now, seconds of a retry spec with their unit, lists joined.
  function value(k, v) {
    if (v === null || v === undefined || v === "") return el("span", { class: "muted" }, "–");
    if (typeof v === "number" && isTimeKey(k) && v > 1e11) return el("span", { class: "nowrap" }, short8601(v), " ", el("span", { class: "muted" }, "(" + rel(v) + ")"));
    if (typeof v === "number" && /^(minBackoff|executionTimeout|maxBackoff)$/.test(k)) return v + " s";
    if (Array.isArray(v)) return v.length ? v.map(x => typeof x === "object" ? JSON.stringify(x) : String(x)).join(", ") : el("span", { class: "muted" }, "none");
    if (typeof v === "object") return el("code", {}, JSON.stringify(v));
    return String(v);
  }

  // COMMAND_LABELS are the operator commands as the pages name them.
  const COMMAND_LABELS = {
    prepare_compensation: "Prepare", force_prepare_compensation: "Force-prepare", apply_retry_spec: "Retry spec",
    mark_recoverable: "Mark recoverable", change_function: "Change function",
  };

  // errorBox shows a refusal with its code, message, readable details
  // and request id.
  function errorBox(err) {
    if (!(err instanceof ApiError)) return el("div", { class: "error", role: "alert" }, String(err && err.message || err));
    const d = err.details || {};
    const items = Object.entries(d).map(([k, v]) => k === "accepted"
      ? el("li", {}, "accepted now: ", v.length ? v.map(c => COMMAND_LABELS[c] || c).join(", ") : "no replay command")
      : el("li", {}, el("span", { class: "muted" }, k + ": "), value(k, v)));
    return el("div", { class: "error", role: "alert" },
      el("div", {}, el("span", { class: "code" }, err.code), " ", err.message),
      items.length ? el("ul", { class: "details" }, items) : null,
      err.requestId ? el("div", { class: "muted" }, "request id ", el("code", {}, err.requestId)) : null);
  }

  // short8601 is an absolute UTC time to the second.
  function short8601(ms) { return abs(ms).replace("T", " ").replace(/\.\d+Z$/, "Z"); }

  // table builds a table whose cells carry their column's name, so that a
  // narrow screen shows each row as a card (CSS: table.cards).
  function table(attrs, cols, rows) {
    return el("table", Object.assign({ class: "cards" }, attrs),
      el("thead", {}, el("tr", {}, cols.map(c => el("th", { scope: "col", class: c.cls || "", title: c.title || undefined }, c.h)))),
      el("tbody", {}, rows.map(r => el("tr", r.attrs || {}, r.cells.map((cell, i) => el("td", { class: cols[i].cls || "", "data-label": cols[i].h }, cell))))));
  }

  function fnName(f) { return f.processorName + "." + f.name + "@" + f.contextName; }

  // ident shows an identifier (a function, an id, a fingerprint) that may
  // break after its dots, slashes, dashes, underscores, colons and @s, a
  // <wbr> each, and nowhere else unless a part is wider than the line:
  // never one letter a line. Copying it copies the identifier unchanged.
  function ident(s, attrs) {
    const parts = String(s).split(/(?<=[./\-_:@])/);
    const kids = [];
    parts.forEach((p, i) => { if (i) kids.push(el("wbr")); kids.push(p); });
    return el("code", Object.assign({ class: "ident" }, attrs || {}), kids);
  }

  // fnKey is a function's circuit name, CONTEXT.PROCESSOR.NAME.
  function fnKey(context, processor, name) { return context + "." + processor + "." + name; }

  // circuitHref is the incident view of a function (CONTEXT.PROCESSOR.NAME).
  function circuitHref(fn) { return "/circuits/" + encodeURIComponent(fn); }

  // PHASE names a circuit's phase as the pages write it.
  const PHASE = { CLOSED: "closed", OPEN: "open", HALF_OPEN: "half-open" };

  // phaseBadge shows a circuit's phase: closed plainly, the others marked.
  function phaseBadge(c, attrs) {
    if (c.phase === "CLOSED") return el("span", Object.assign({ class: "muted" }, attrs || {}), PHASE.CLOSED);
    return el("span", Object.assign({ class: "badge c-" + c.phase, title: c.forced ? "opened by an operator: no probe closes it" : "" }, attrs || {}), PHASE[c.phase] || c.phase);
  }

  // incidentSince is since when a circuit's incident began (its first
  // opening, not its latest re-open) with its re-opens; for a closed
  // circuit, when it closed.
  function incidentSince(c) {
    if (c.phase === "CLOSED") {
      // No incident now: when the last one ended, and how long it lasted.
      if (!c.incidentFrom) return el("span", {}, "none: closed ", time(c.since));
      const to = c.incidentTo || c.since;
      return el("span", {}, "none now: the last ended ", time(to), el("span", { class: "muted" }, " · it lasted " + dur(Math.max(0, to - c.incidentFrom))));
    }
    if (!c.incidentFrom) return time(c.since);
    const re = (c.incidentOpens || 1) - 1;
    return el("span", {}, time(c.incidentFrom), re > 0 ? el("span", { class: "muted" }, " · " + re + (re === 1 ? " re-open" : " re-opens") + ", the latest ", time(c.since)) : null);
  }

  // nextProbe says when a circuit is probed next.
  function nextProbe(c) {
    if (c.phase === "OPEN" && c.forced) return "none: opened by an operator";
    if (c.phase === "OPEN") return el("span", {}, "not before ", time(c.until));
    if (c.phase === "HALF_OPEN") return (c.probe ? (c.probe.record ? "under way: the replay of a record" : "under way") : "the next call") +
      " (" + (c.successes || 0) + " succeeded, " + (c.probeFailures || 0) + " failed)";
    return "–";
  }

  // confirmed runs an operator's action as the CLI does: a reason, a dry
  // run that says what would change, then the action itself, confirmed by
  // a second button; a viewer sees it disabled with why. act(reason, dry)
  // returns the API's answer; say(answer, dry) what to show of it.
  function confirmed(o) {
    const id = o.id;
    const reason = el("input", { id: id + "-reason", name: "reason", required: true, maxlength: 1024, autocomplete: "off" });
    const result = el("div", { class: "confirm-result", id: id + "-result", "aria-live": "polite" });
    const dry = el("button", { type: "button", id: id + "-dry" }, "Dry run");
    const run = el("button", { type: "button", id: id + "-run", class: o.danger ? "danger" : "primary", disabled: true }, o.label);
    const back = el("button", { type: "button", id: id + "-back", class: "hidden" }, "Change the reason");
    const op = isOperator();
    if (!op) { reason.disabled = true; dry.disabled = true; }
    let planned = "";
    const check = () => {
      if (!reason.value.trim()) { fill(result, errorBox(new Error("Say why: " + o.audited))); reason.focus(); return false; }
      return true;
    };
    dry.addEventListener("click", async () => {
      if (!check()) return;
      try {
        const a = await o.act(reason.value.trim(), true);
        planned = reason.value;
        fill(result, el("div", { class: "notice", id: id + "-plan" }, "Dry run: ", o.say(a, true)));
        run.disabled = false;
      } catch (err) { fill(result, errorBox(err)); }
    });
    reason.addEventListener("input", () => { if (reason.value !== planned) run.disabled = true; });
    run.addEventListener("click", async () => {
      if (!check() || reason.value !== planned) return;
      run.disabled = true;
      try {
        const a = await o.act(reason.value.trim(), false);
        fill(result, el("div", { class: "ok-msg", id: id + "-done", role: "status" }, o.say(a, false)));
        back.classList.remove("hidden");
        if (o.done) o.done(a);
      } catch (err) { fill(result, errorBox(err)); }
    });
    back.addEventListener("click", () => { reason.value = ""; planned = ""; fill(result); back.classList.add("hidden"); reason.focus(); });
    return el("div", { class: "confirm", id: id },
      el("label", { for: id + "-reason" }, o.question + " (required, audited)", reason),
      el("div", { class: "row" }, dry, run, back),
      op ? el("p", { class: "muted" }, "The dry run says what would change; " + o.label + " does it.") :
        el("p", { class: "muted", id: id + "-viewer" }, "Only an operator can " + o.label.toLowerCase() + "; you are signed in as a viewer."),
      result);
  }

  // willRetry says whether the scheduler retries a record by itself, as
  // the aggregate's predicates do: not succeeded, below its retry limit,
  // and RECOVERABLE or UNKNOWN. Its next retry is shown only then.
  function willRetry(status, recoverable, retries, maxRetries) {
    return status !== "SUCCEEDED" && retries < maxRetries && (recoverable === "RECOVERABLE" || recoverable === "UNKNOWN");
  }

  // VIEWS are the six views: wire name, the name a reader can guess, the
  // tone and what they hold.
  const VIEWS = [
    ["to-retry", "Waiting to retry", "warn", "open, below their retry limit and auto-retried: the scheduler prepares each when its next retry is due"],
    ["executing", "Replaying", "info", "prepared, the attempt not yet timed out"],
    ["next-retry", "Due now", "warn", "waiting to retry and due now: what the scheduler prepares next"],
    ["non-retryable", "Out of retries", "bad", "every retry used: only an operator moves them on"],
    ["succeeded", "Succeeded", "ok", "a replay succeeded"],
    ["unrecoverable", "Unrecoverable", "bad", "open and classified UNRECOVERABLE: never retried by the scheduler"],
  ];
  const FILTERS = ["id", "eventId", "aggregateContext", "aggregateType", "aggregateId", "functionContext", "processor", "function",
    "functionKind", "status", "recoverable", "errorCode", "fingerprint", "executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo", "minRetries", "view"];

  // mount puts the page's panels (its <template id="panels">) in place of
  // its "Loading…" (#page) in one go, once their data has arrived: nothing
  // that was on the page moves, and what is new comes at once.
  function mount() {
    const t = $("#panels");
    if (t) fill($("#page"), t.content.cloneNode(true));
  }

  // ready marks the page as drawn with its first data (the browser tests
  // wait for it).
  function ready() { document.documentElement.dataset.ready = "true"; }

  function mark(nav) {
    for (const a of document.querySelectorAll("header.top nav a")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
    }
  }

  return { el, fill, $, api, ApiError, session, isOperator, live, rel, abs, time, dur, badge, errorBox, fnName, willRetry, newRequestId, VIEWS, FILTERS, mark, ready, toSignIn, value, isTimeKey, short8601, table, COMMAND_LABELS,
    ident, fnKey, circuitHref, PHASE, phaseBadge, incidentSince, nextProbe, confirmed, mount };
})();
