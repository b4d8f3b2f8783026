"use strict";
// The stack trace viewer: the message and the first frames shown, the
// rest folded, runs of runtime/library frames folded, and a copy button.
const Stack = (() => {
  const { el } = A;
  const SHOWN = 8;

  // isLibrary reports frames of the runtime and of the standard library,
  // which rarely explain a failure.
  function isLibrary(line) {
    return /(^|\s)(runtime|testing|net\/http|reflect|internal\/|sync)\b|\/go\/src\/|GOROOT|java\.base\/|jdk\.internal|sun\.reflect/.test(line);
  }

  function copy(text, btn) {
    const ok = () => { btn.textContent = "Copied"; setTimeout(() => { btn.textContent = "Copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(ok, () => fallback(text, ok));
    } else fallback(text, ok);
  }
  function fallback(text, ok) {
    const ta = el("textarea", { class: "hidden-copy", readonly: true }, text);
    document.body.append(ta);
    ta.select();
    try { document.execCommand("copy"); ok(); } finally { ta.remove(); }
  }

  // view returns the viewer for trace.
  function view(trace) {
    const lines = trace.replace(/\r\n/g, "\n").split("\n");
    while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
    const pre = el("pre", { class: "stack", tabindex: "0", "aria-label": "stack trace" });
    const frame = (l, i) => el("span", { class: "frame" + (i === 0 ? " head" : "") }, l + "\n");
    lines.slice(0, SHOWN).forEach((l, i) => pre.append(frame(l, i)));
    // Fold the rest into groups: runs of library frames apart from the rest.
    let i = SHOWN;
    while (i < lines.length) {
      const lib = isLibrary(lines[i]);
      let j = i;
      while (j < lines.length && isLibrary(lines[j]) === lib) j++;
      const group = lines.slice(i, j);
      const d = el("details", {}, el("summary", {}, group.length + (lib ? " runtime/library lines" : " more lines")));
      group.forEach(l => d.append(frame(l, -1)));
      pre.append(d);
      i = j;
    }
    const btn = el("button", { type: "button", id: "copy-stack" }, "Copy");
    btn.addEventListener("click", () => copy(trace, btn));
    const expand = el("button", { type: "button", id: "expand-stack" }, "Expand all");
    expand.addEventListener("click", () => {
      const all = pre.querySelectorAll("details");
      const open = [...all].some(d => !d.open);
      all.forEach(d => { d.open = open; });
      expand.textContent = open ? "Collapse" : "Expand all";
    });
    return el("div", {}, el("div", { class: "row" }, btn, lines.length > SHOWN ? expand : null,
      el("span", { class: "muted" }, lines.length + " lines")), pre);
  }
  return { view };
})();
