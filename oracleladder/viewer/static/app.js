// The OracleLadder HTML report: an overview and one page per family, routed by the URL's hash
// (#/ and #/family/<n>). Data comes in script files (data/overview.js, data/f/<n>.js) that call
// ladderOverview / ladderFamily, since a page opened from the file system may not fetch() files.
"use strict";

let OV = null;                 // the overview: report, provenance, family index
const FAMILIES = new Map();    // family pages loaded so far, by number
const WAITING = new Map();     // family number -> callbacks waiting for its file
const FILTER = { student: "", gap: "", outcome: "", reason: "", type: "", schema: "", q: "" };
const PICKED = [];             // the students shown side by side on family pages
let shown = [];                // family numbers of the list as last filtered (for n / p)

window.ladderOverview = (data) => { OV = data; };
window.ladderFamily = (n, page) => {
  FAMILIES.set(n, page);
  (WAITING.get(n) || []).forEach((f) => f(page));
  WAITING.delete(n);
};

// ------------------------------------------------------------------ helpers

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const MATH_DELIMITERS = [
  { left: "$$", right: "$$", display: true }, { left: "\\[", right: "\\]", display: true },
  { left: "\\(", right: "\\)", display: false }, { left: "$", right: "$", display: false },
];

// LaTeX between the usual delimiters, typeset by the bundled KaTeX (a malformed formula is shown in red)
function math(node) {
  if (window.renderMathInElement) {
    window.renderMathInElement(node, { delimiters: MATH_DELIMITERS, throwOnError: false, strict: "ignore" });
  }
}

function text(s, cls = "text") {
  const d = el("div", { class: cls, text: s });
  math(d);
  return d;
}

// a gold answer is bare LaTeX: typeset it whole, and keep its source on hover
function tex(s) {
  const span = el("span", { class: "tex", title: s, text: s });
  if (window.katex) window.katex.render(s, span, { throwOnError: false, strict: "ignore" });
  return span;
}

function isLight(hex) {
  const n = parseInt(hex.slice(1), 16);
  return 0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255) > 150;
}

function chip(label) {
  const color = OV.colors[label];
  return el("span", { class: "label-chip" + (color ? (isLight(color) ? " light" : "") : " none"),
                      style: color ? `background:${color}` : null, text: label });
}

function students() { return OV.report.meta.students; }

// ------------------------------------------------------------------ overview

function matches(f) {
  const who = FILTER.student ? [FILTER.student] : students();
  const q = FILTER.q.trim().toLowerCase();
  if (q && !(f.problem.toLowerCase().includes(q) || f.pid.toLowerCase().includes(q))) return false;
  if (FILTER.type && !f.types.includes(FILTER.type)) return false;
  if (FILTER.schema && !f.schemas.includes(FILTER.schema)) return false;
  return who.some((s) => {
    const l = f.labels[s];
    return (!FILTER.gap || l.gap === FILTER.gap) && (!FILTER.outcome || l.outcome === FILTER.outcome)
      && (!FILTER.reason || l.reasons.includes(FILTER.reason));
  });
}

function chart(id, title, kind, keys, countOf, extra) {
  const rows = students().map((s) => {
    const r = OV.report.students[s];
    const denom = Math.max(r.n, 1);
    const segs = keys.concat([extra]).map((key) => {
      const count = countOf(r, key);
      if (!count) return null;
      const share = (100 * count) / denom;
      const color = OV.colors[key];
      const pressed = FILTER.student === s && FILTER[kind] === key;
      return el("button", {
        class: "seg" + (color ? (isLight(color) ? " light" : "") : " hatched"),
        style: `width:${share}%;` + (color ? `background:${color}` : ""),
        "data-student": s, "data-kind": kind, "data-value": key, "data-count": count,
        "aria-pressed": pressed ? "true" : "false",
        "aria-label": `${s}: ${key}, ${count} families (${share.toFixed(1)}%): list them`,
        title: `${key}: ${count} families (${share.toFixed(1)}%)`,
        text: share >= 4.5 ? String(count) : "",
        onclick: () => pickSegment(s, kind, key),
      });
    });
    return el("div", { class: "bar-row" }, el("div", { class: "bar-name", text: `${s} (n=${r.n})` }),
              el("div", { class: "bar", role: "group", "aria-label": `${title}: ${s}` }, segs));
  });
  const legend = el("div", { class: "legend" }, keys.concat([extra]).map((k) =>
    el("span", {}, el("span", { class: "swatch" + (OV.colors[k] ? "" : " hatched"),
                                style: OV.colors[k] ? `background:${OV.colors[k]}` : null }), k)));
  return el("section", { class: "chart", id }, el("h3", { text: title }), rows, legend);
}

function pickSegment(s, kind, key) {
  Object.assign(FILTER, { student: s, gap: "", outcome: "", reason: "", type: "", schema: "", q: "" });
  FILTER[kind] = key;
  renderOverview();
  document.getElementById("family-count").focus();
}

function select(label, key, options) {
  const s = el("select", { id: `filter-${key}`, onchange: (e) => { FILTER[key] = e.target.value; renderList(); } },
    el("option", { value: "", text: "any" }), options.map((o) => el("option", { value: o, text: o })));
  s.value = FILTER[key];
  return el("label", {}, label, s);
}

function uniq(xs) { return [...new Set(xs)].sort(); }

function provenance() {
  const p = OV.provenance;
  const rows = [["Roadmap set", p.roadmap_set || "—"],
    ["Teacher (family source)", p.teachers.join(", ") || "—"],
    ["Teacher prompt hashes", p.prompt_hashes.join(", ") || "not recorded (released families)"],
    ["Success threshold", `tau = ${p.tau} correct of K (sweep over ${p.taus.join(", ")})`],
    ["Bootstrap", `${p.n_resamples} family-level resamples, seed ${p.seed}`],
    ["Families left out (unusable reference answer)", String(p.ungradable_reference)]];
  for (const [s, x] of Object.entries(p.students)) {
    const cost = x.cost_usd === null ? "unknown" : `$${x.cost_usd.toFixed(4)}`;
    rows.push([`Student ${s}`, `${x.families} families; K = ${x.k ?? "not run"} per condition`
      + (x.k_stage0 ? `, ${x.k_stage0} per milestone` : "") + `; grader ${x.grader || "—"}; max tokens `
      + `${x.max_tokens.join(", ") || "—"}; temperature ${x.temperature.join(", ") || "—"}; `
      + `${x.runs} probe runs, tokens ${x.tokens_in} in / ${x.tokens_out} out, cost ${cost}`]);
  }
  return el("dl", { class: "prov" }, rows.map(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}

function renderOverview() {
  document.getElementById("crumb").textContent = "";
  document.title = "OracleLadder report";
  const all = OV.families;
  const main = document.getElementById("main");
  main.replaceChildren(
    el("h1", { text: "Diagnosis report" }),
    el("h2", { text: "Provenance" }), provenance(),
    el("h2", { text: "Charts (click a segment to list its families)" }),
    chart("taxonomy-chart", "Reasoning-gap taxonomy (strict milestone test)", "gap", OV.gaps,
          (r, k) => (k === OV.not_classified ? r.taxonomy_not_classified : r.taxonomy[k]), OV.not_classified),
    chart("outcome-chart", "Parent-probe outcome fingerprint", "outcome", OV.outcomes,
          (r, k) => (k === OV.not_determined ? r.outcome_undetermined : r.outcomes_known[k]), OV.not_determined),
    el("h2", { id: "families", text: "Families" }),
    el("div", { class: "filters", role: "search" },
      select("Student", "student", students()),
      select("Gap", "gap", OV.gaps.concat([OV.not_classified])),
      select("Outcome", "outcome", OV.outcomes.concat([OV.not_determined])),
      select("Verdict reason", "reason", uniq(all.flatMap((f) => Object.values(f.labels).flatMap((l) => l.reasons)))),
      select("Milestone type", "type", uniq(all.flatMap((f) => f.types))),
      select("Answer schema", "schema", uniq(all.flatMap((f) => f.schemas))),
      el("label", {}, "Search the problems", el("input", {
        type: "search", id: "search", value: FILTER.q, placeholder: "text or pid",
        oninput: (e) => { FILTER.q = e.target.value; renderList(); } })),
      el("button", { type: "button", onclick: () => { Object.keys(FILTER).forEach((k) => { FILTER[k] = ""; }); renderOverview(); },
                     text: "Clear filters" })),
    el("p", { id: "family-count", tabindex: "-1", "aria-live": "polite" }),
    el("table", { id: "family-list" }),
    el("h2", { text: "Tables (report.md)" }),
    Object.assign(el("section", { id: "tables" }), { innerHTML: OV.tables_html }),
  );
  renderList();
  performance.mark("ladder-overview");
}

function renderList() {
  const rows = OV.families.filter(matches);
  shown = rows.map((f) => f.n);
  const who = students();
  document.getElementById("family-count").textContent = `${rows.length} of ${OV.families.length} families`;
  document.getElementById("family-list").replaceChildren(
    el("thead", {}, el("tr", {}, el("th", { text: "#" }), el("th", { text: "Family" }), el("th", { text: "Problem" }),
                       who.map((s) => el("th", { text: s })))),
    el("tbody", {}, rows.map((f) => el("tr", { "data-pid": f.pid },
      el("td", { text: String(f.n + 1) }),
      el("td", {}, el("a", { href: `#/family/${f.n}`, text: f.pid })),
      el("td", { class: "problem", text: f.problem.length > 220 ? f.problem.slice(0, 220) + "…" : f.problem }),
      who.map((s) => el("td", {}, chip(f.labels[s].gap), " ", el("span", { class: "muted", text: f.labels[s].outcome })))))));
}

// ------------------------------------------------------------------ family page

function loadFamily(n, then) {
  if (FAMILIES.has(n)) return then(FAMILIES.get(n));
  if (!WAITING.has(n)) {
    WAITING.set(n, []);
    document.head.append(el("script", { src: `data/f/${n}.js`,
      onerror: () => { document.getElementById("main").textContent = `No page for family ${n + 1}.`; } }));
  }
  WAITING.get(n).push(then);
}

function roadmap(page) {
  const rows = page.milestones.map((m) => el("tr", { class: m.type === "INTEGRATE" ? "integrate" : null },
    el("td", { text: `m${m.i}` }),
    el("td", {}, m.type, m.type === "INTEGRATE" ? el("span", { class: "badge", text: "not tested" }) : null),
    el("td", { text: m.schema || "—" }),
    el("td", {}, m.description ? text(m.description) : null,
       el("details", {}, el("summary", { text: "prompt" }), text(m.prompt))),
    el("td", {}, tex(m.answer))));
  if (page.integrate) {
    const m = page.integrate;
    rows.push(el("tr", { class: "integrate" }, el("td", { text: "—" }),
      el("td", {}, "INTEGRATE", el("span", { class: "badge", text: "private: never shown to students" })),
      el("td", { text: m.schema || "—" }), el("td", {}, text(m.description || m.prompt)), el("td", {}, tex(m.answer))));
  }
  return el("table", { class: "roadmap" }, el("thead", {}, el("tr", {},
    ["#", "Type", "Answer schema", "Milestone", "Gold answer"].map((h) => el("th", { text: h })))), el("tbody", {}, rows));
}

function attempt(a) {
  if (a.failed !== undefined) {
    return el("details", { class: "attempt", "data-verdict": "failed" },
      el("summary", {}, `k=${a.k} · `, el("span", { class: "failed-call", text: "call failed" }), `: ${a.failed}`),
      el("p", { class: "muted", text: "No answer: the call failed for good, so there is no verdict; a rerun asks again." }));
  }
  const verdict = a.status === "ungraded" ? "ungraded" : a.label;
  const d = el("details", { class: "attempt", "data-verdict": verdict, "data-k": a.k },
    el("summary", {}, `k=${a.k} · `,
       el("span", { class: "verdict", text: a.status === "ungraded" ? "UNGRADED (grading failed)" : (a.label === "ACCEPT" ? "✓ ACCEPT" : "✗ NOT_ACCEPT") }),
       ` · ${a.reason}`, a.status === "limit" ? " (grader limit)" : "",
       " · extracted: ", a.extracted === null ? el("span", { class: "muted", text: "none" }) : el("code", { text: a.extracted }),
       a.finish === "length" ? el("span", { class: "truncated", text: " · truncated at max tokens" }) : null),
    el("div", { class: "response text" }));
  d.addEventListener("toggle", () => {   // the answer is laid out (and typeset) when first opened
    const r = d.querySelector(".response");
    if (d.open && !r.hasChildNodes()) { r.textContent = a.response; math(r); }
  });
  return d;
}

function targetBlock(name, attempts) {
  const graded = attempts.filter((a) => a.failed === undefined && a.status !== "ungraded");
  const ok = graded.filter((a) => a.label === "ACCEPT").length;
  return el("div", { class: "target-block", "data-target": name.id },
    el("div", { class: "target", text: `${name.label}: ${ok} of ${graded.length} correct`
      + (graded.length < attempts.length ? ` (${attempts.length - graded.length} without a verdict)` : "") }),
    attempts.map(attempt));
}

function studentColumn(page, s) {
  const l = page.labels[s];
  const att = page.attempts[s] || {};
  const ms = page.milestones.filter((m) => att[`m${m.i}`]);
  return el("section", { class: "student", "data-student": s, "aria-label": `Student ${s}` },
    el("h2", { text: s }),
    el("p", {}, "Taxonomy (strict): ", chip(l.gap), " · fraction test: ", chip(l.gap_fraction),
       " · outcome: ", chip(l.outcome)),
    el("p", { class: "rule", text: `Rule: ${l.rule}.` }),
    el("h3", { text: "Stage 0 (milestones alone)" }),
    ms.length ? ms.map((m) => targetBlock({ id: `m${m.i}`, label: `m${m.i} ${m.type}` }, att[`m${m.i}`]))
      : el("p", { class: "muted", text: "not run" }),
    el("h3", { text: "Conditions" }),
    Object.entries(OV.conditions).filter(([c]) => att[c]).map(([c, short]) => targetBlock({ id: c, label: short }, att[c])),
    Object.keys(OV.conditions).some((c) => att[c]) ? null : el("p", { class: "muted", text: "not run" }));
}

function renderFamily(n, page) {
  const f = OV.families[n];
  document.title = `${page.pid} · OracleLadder report`;
  document.getElementById("crumb").textContent = `family ${n + 1}: ${page.pid}`;
  const who = students();
  while (PICKED.length < Math.min(2, who.length)) PICKED.push(who.find((s) => !PICKED.includes(s)));
  const pickers = el("div", { class: "pickers" }, PICKED.map((cur, i) => {
    const s = el("select", { id: `pick-${i}`, onchange: (e) => { PICKED[i] = e.target.value; renderFamily(n, page); } },
      who.map((w) => el("option", { value: w, text: w })));
    s.value = cur;
    return el("label", {}, `Student ${i + 1} `, s);
  }));
  const at = shown.indexOf(n);
  document.getElementById("main").replaceChildren(...[
    el("p", { class: "nav-links" }, el("a", { href: "#/", text: "← overview" }),
       at > 0 ? [" · ", el("a", { href: `#/family/${shown[at - 1]}`, text: "previous" })] : null,
       at >= 0 && at < shown.length - 1 ? [" · ", el("a", { href: `#/family/${shown[at + 1]}`, text: "next" })] : null),
    el("h1", { text: `Family ${page.pid}` }),
    el("p", { class: "muted", text: `Milestone types: ${f.types.join(", ")}; answer schemas: ${f.schemas.join(", ") || "—"}` }),
    el("h2", { text: "Problem" }), text(page.problem, "text problem-box"),
    el("p", {}, "Reference answer: ", tex(page.answer)),
    page.answer_corrected ? el("p", {}, "Corrected reference answer: ", tex(page.answer_corrected),
                               page.correction_note ? ` (${page.correction_note})` : "") : null,
    el("h2", { text: "Roadmap" }), roadmap(page),
    who.length > 2 ? pickers : null,
    el("div", { class: "columns" }, PICKED.map((s) => studentColumn(page, s)))].filter(Boolean));
  performance.mark("ladder-family");
}

// ------------------------------------------------------------------ routing and keys

function route() {
  const m = location.hash.match(/^#\/family\/(\d+)$/);
  if (!OV) { document.getElementById("main").textContent = "data/overview.js is missing: write the report again."; return; }
  if (m) {
    const n = Number(m[1]);
    if (!shown.length) shown = OV.families.map((f) => f.n);
    loadFamily(n, (page) => { renderFamily(n, page); document.getElementById("main").focus(); });
  } else {
    renderOverview();
  }
}

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || /INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) return;
  const m = location.hash.match(/^#\/family\/(\d+)$/);
  if (e.key === "o") location.hash = "#/";
  else if (e.key === "/") {
    e.preventDefault();
    if (m) location.hash = "#/";
    setTimeout(() => document.getElementById("search").focus(), 0);
  } else if (m && (e.key === "n" || e.key === "p")) {
    const at = shown.indexOf(Number(m[1])) + (e.key === "n" ? 1 : -1);
    if (at >= 0 && at < shown.length) location.hash = `#/family/${shown[at]}`;
  }
});
window.addEventListener("beforeprint", () => {   // a printed family page shows every answer
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
});
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);   // after the deferred KaTeX scripts have run
