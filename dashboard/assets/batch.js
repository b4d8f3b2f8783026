"use strict";
// Batch prepare / force-prepare of the records a filter selects: a dry run
// first, then confirm; the real run streams NDJSON outcomes into a
// progress bar and shows its request id.
const Batch = (() => {
  const { el, api, errorBox, newRequestId } = A;

  function filterBody(params) {
    const f = {};
    for (const [k, v] of params) f[k] = v;
    return f;
  }

  function describe(params) {
    const parts = [];
    for (const [k, v] of params) parts.push(k + "=" + v);
    return parts.length ? parts.join(", ") : "every record";
  }

  // groupReasons summarises would-reject outcomes by code and message.
  function reasons(records) {
    const m = new Map();
    for (const r of records) {
      if (r.outcome !== "would-reject" && r.outcome !== "rejected" && r.outcome !== "failed") continue;
      const k = (r.code || r.outcome) + ": " + (r.message || "");
      m.set(k, (m.get(k) || 0) + 1);
    }
    return [...m.entries()].sort((a, b) => b[1] - a[1]);
  }

  function mount(panel, params, open) {
    const out = el("div", { id: "batch-out", "aria-live": "polite" });
    // How many records the filter selects, before any dry run.
    const matched = el("span", { id: "batch-matched" }, "counting the records…");
    api("GET", "/api/v1/count?" + new URLSearchParams(params)).then(
      c => { matched.textContent = c.count + (c.count === 1 ? " record selected" : " records selected"); },
      () => { matched.textContent = "the count is not available"; });
    // The way back to the records the batch ran on, once it has run.
    const back = () => el("p", { id: "batch-after" },
      el("a", { href: "/search?" + new URLSearchParams(params), id: "batch-back" }, "Back to the selected records"), " · ",
      el("button", { type: "button", id: "batch-again", onclick: () => { A.fill(out); dry.focus(); } }, "New dry run"));
    const cmd = el("select", { id: "batch-command" },
      el("option", { value: "prepare_compensation" }, "prepare (within retry limits)"),
      el("option", { value: "force_prepare_compensation" }, "force-prepare (beyond retry limits)"));
    const reason = el("textarea", { id: "batch-reason", placeholder: "why (required for force-prepare; recorded on every command)" });
    const rate = el("input", { id: "batch-rate", type: "number", min: "1", max: "1000", value: "50" });
    const dry = el("button", { type: "button", class: "primary", id: "batch-dry" }, "Preview (dry run)");
    const details = el("details", { id: "batch-details", open: open || undefined },
      el("summary", {}, "Batch action on these ", el("strong", {}, "search results")),
      el("p", { class: "muted" }, "Filter: ", el("code", {}, describe(params)), " · ", matched),
      el("div", { class: "row" },
        el("label", {}, "Command", cmd),
        el("label", {}, "Records per second", rate)),
      el("label", {}, "Reason", reason),
      el("p", {}, dry),
      out);
    A.fill(panel, el("h2", { id: "batch-h" }, "Batch"), details);
    if (open) setTimeout(() => details.scrollIntoView({ block: "start" }), 0);

    dry.addEventListener("click", async () => {
      A.fill(out, el("p", { class: "muted" }, "Running a dry run…"));
      const body = { filter: filterBody(params), dryRun: true };
      if (reason.value.trim()) body.reason = reason.value.trim();
      try {
        const res = await api("POST", "/api/v1/batch/" + cmd.value, body);
        preview(res);
      } catch (err) { A.fill(out, errorBox(err)); }
    });

    function resume(expected, requestId) {
      return el("p", {}, el("button", { type: "button", id: "batch-resume", onclick: () => run(expected, requestId) }, "Resume this batch"));
    }

    function preview(res) {
      const would = res.counts["would-apply"] || 0, wouldNot = res.counts["would-reject"] || 0;
      const list = reasons(res.records);
      const confirm = el("button", { type: "button", class: "danger", id: "batch-confirm", disabled: would === 0 || undefined },
        "Apply to " + would + " records");
      confirm.addEventListener("click", () => run(would));
      A.fill(out, el("div", { class: "notice", id: "batch-preview" },
        el("p", {}, el("strong", {}, res.matched), " records match; ", el("strong", { id: "would-apply" }, would), " would be ",
          cmd.value === "force_prepare_compensation" ? "force-prepared" : "prepared", ", ", el("strong", { id: "would-reject" }, wouldNot), " would be rejected",
          res.matched > res.records.length ? " (only the first " + res.records.length + " are touched: the server's batch limit)" : "", "."),
        list.length ? el("ul", {}, list.map(([k, n]) => el("li", {}, n + " × " + k))) : null,
        el("p", {}, confirm, " ", el("button", { type: "button", onclick: () => A.fill(out) }, "Cancel"))));
      confirm.focus();
    }

    // run sends the batch; a run that stopped early (or lost its stream) is
    // resumed with the same request id, which never runs a record twice.
    async function run(expected, resumeId) {
      const requestId = resumeId || newRequestId();
      const bar = el("progress", { id: "batch-progress", max: String(Math.max(1, expected)), value: "0" });
      const status = el("p", { id: "batch-status" }, "Starting…");
      A.fill(out, el("div", { class: "notice" },
        el("p", {}, "Request id ", el("code", { id: "batch-request-id" }, requestId), " (sending it again resumes, never runs twice)"),
        bar, status));
      const body = { filter: filterBody(params), requestId, ratePerSecond: Number(rate.value) || 50 };
      if (reason.value.trim()) body.reason = reason.value.trim();
      const counts = {};
      let done = 0, total = expected;
      try {
        const res = await api("POST", "/api/v1/batch/" + cmd.value, body, { accept: "application/x-ndjson", raw: true, requestId });
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = "", result = null;
        for (;;) {
          const { value, done: end } = await reader.read();
          if (value) buf += dec.decode(value, { stream: true });
          let nl;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const msg = JSON.parse(line);
            if (msg.start) { total = msg.start.total; bar.max = Math.max(1, total); }
            if (msg.outcome) { done++; counts[msg.outcome.outcome] = (counts[msg.outcome.outcome] || 0) + 1; bar.value = done; }
            if (msg.result) result = msg.result;
            status.textContent = done + " of " + total + " · " + Object.entries(counts).map(([k, n]) => k + " " + n).join(", ");
          }
          if (end) break;
        }
        if (result) {
          bar.value = bar.max;
          const list = reasons(result.records);
          A.fill(status, el("span", { id: "batch-done" }, result.complete ? "Done" : "Stopped early (run it again to finish)"), ": ",
            Object.entries(result.counts).map(([k, n]) => k + " " + n).join(", "), result.replayed ? " (the stored result of an earlier run)" : "");
          if (list.length) status.after(el("ul", {}, list.map(([k, n]) => el("li", {}, n + " × " + k))));
          if (!result.complete) out.append(resume(expected, requestId));
          out.append(back());
        } else {
          out.append(el("p", {}, "The stream ended before the result."), resume(expected, requestId));
        }
      } catch (err) {
        out.append(errorBox(err), resume(expected, requestId));
      }
    }
  }
  return { mount };
})();
