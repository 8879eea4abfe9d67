// The OracleLadder HTML report: an overview and one page per family, routed by the URL's hash
// (#/ and #/family/<n>). Data comes in script files (data/overview.js, data/f/<n>.js) that call
// ladderOverview / ladderFamily, since a page opened from the file system may not fetch() files.
// The site of `ladder compare --html` has the same layout: its overview carries `compare`, and each of
// its pages has the problem's two roadmaps (`sides`) in place of one. The site of `ladder prim report
// --html` carries `prim` (PRIM's report of one student), and each of its pages a problem's primitives
// and what the student wrote, with the judge's verdicts.
"use strict";

let OV = null;                 // the overview: report, provenance, family index
const FAMILIES = new Map();    // family pages loaded so far, by number
const WAITING = new Map();     // family number -> callbacks waiting for its file
const FILTER = { student: "", gap: "", outcome: "", reason: "", type: "", schema: "", q: "",
                 change: "", gap_a: "", gap_b: "", outcome_a: "", outcome_b: "",   // these five: compare
                 place: "", ladder_gap: "" };                                       // these two: PRIM
const PICKED = [];             // the students shown side by side on family pages
let TAXONOMY = "raw";          // the taxonomy's view: "raw", or "corrected" (Table 42: flagged families out of the gap)
let shown = [];                // family numbers of the list as last filtered (for n / p)
const CUT = "truncated";       // the verdict reason of a wrong answer cut off at the token budget (site.py)
const HATCH = "repeating-linear-gradient(45deg, transparent 0 4px, rgba(255,255,255,.75) 4px 7px)";

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

// a page's content in place of the old; a part left out (null, undefined, false) is left out, where
// replaceChildren itself would print it as the text "null"
function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
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

let MD = null;   // the bundled markdown-it, made when first needed (its script is deferred)

function markdown() {
  if (!MD) {
    // no raw HTML (it is shown escaped), no image (it would fetch from the network); markdown-it refuses
    // javascript:, vbscript:, file: and data: links by itself
    MD = window.markdownit({ html: false, linkify: false, breaks: true }).disable("image");
  }
  return MD;
}

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function escapeHtml(s) { return s.replace(/[&<>"']/g, (c) => ESCAPES[c]); }

// Math (between the delimiters above, or an escaped dollar) is set aside before the Markdown pass, so its
// _ * \\ are not read as Markdown, and put back as text after it for KaTeX; a lone $ does not reach past a
// blank line. U+E000/U+E001 (private use) mark the places; the text's own are replaced first.
//
// mathSpans reads what the regex /\\\$|\$\$[\s\S]+?\$\$|\\\[[\s\S]+?\\\]|\\\([\s\S]+?\\\)|\$(?:\\[\s\S]|(?!\n[ \t]*\n)[^$\\])+?\$/g
// matches, in one pass: that regex searched to the end of the text from every unclosed opener, and
// 100,000 unclosed \[ (200 KB) froze the tab for 3.4 s, 1 MB for minutes. Here a closer not found is not
// searched for again (none follows a later opener either), and where an inline $...$ ends is known for
// every place at once, read from the end of the text backwards.

// inlineEnds(s)[i]: where inline math ends (after its closing $) whose content stands at i, a piece read
// before it, or -1: a $ closes it; a backslash and the character after it are one piece; a blank line
// or the end of the text leaves it unclosed
function inlineEnds(s) {
  const n = s.length;
  const end = new Int32Array(n + 2).fill(-1);
  let next = n;   // the first character at or after i + 1 that is not a space or a tab
  for (let i = n - 1; i >= 0; i--) {
    const c = s[i];
    if (c === "$") end[i] = i + 1;
    else if (c === "\\") end[i] = i + 1 < n ? end[i + 2] : -1;
    else if (c === "\n" && s[next] === "\n") end[i] = -1;
    else end[i] = end[i + 1];
    if (c !== " " && c !== "\t") next = i;
  }
  return end;
}

// [start, end) of each math span of s, left to right
function mathSpans(s) {
  const spans = [];
  const unclosed = new Set();   // closers found nowhere after some opener: nowhere after a later one
  let inline = null;
  const close = (closer, from) => {
    if (unclosed.has(closer)) return -1;
    const at = s.indexOf(closer, from);
    if (at < 0) unclosed.add(closer);
    return at < 0 ? -1 : at + closer.length;
  };
  const inlineEnd = (i) => {   // $ at i: a first piece that is no $, then as inlineEnds says
    inline = inline || inlineEnds(s);
    return s[i + 1] === "$" ? -1 : inline[i + 1];
  };
  for (let i = 0; i < s.length;) {
    const c = s[i];
    let end = -1;
    if (c === "\\") {
      const d = s[i + 1];
      if (d === "$") end = i + 2;
      else if (d === "[") end = close("\\]", i + 3);
      else if (d === "(") end = close("\\)", i + 3);
    } else if (c === "$") {
      if (s[i + 1] === "$") end = close("$$", i + 3);
      if (end < 0) end = inlineEnd(i);
    }
    if (end < 0) {
      i += 1;
    } else {
      spans.push([i, end]);
      i = end;
    }
  }
  return spans;
}

// A word longer than FOLD characters gets a break opportunity (<wbr>) every FOLD characters. Where a word
// may break anywhere (overflow-wrap: anywhere, so that a long one wraps inside its column), the browser's
// line breaking is quadratic in the word's length when its characters come from several fonts: 100 KB of
// "aα" took 6 s to lay out, a megabyte minutes. In pieces of FOLD it is linear (a megabyte: 3 s); the text
// is unchanged (a <wbr> has none: copied, searched and read back the same).
const FOLD = 64;
const LONG_WORD = new RegExp(`\\S{${FOLD + 1},}`);

function fold(node) {
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT, { acceptNode: (t) =>
    !LONG_WORD.test(t.data) || t.parentElement.closest(".katex, pre") ? NodeFilter.FILTER_SKIP : NodeFilter.FILTER_ACCEPT });
  const long = [];
  for (let t = walker.nextNode(); t; t = walker.nextNode()) long.push(t);
  for (const t of long) {
    const pieces = [];
    for (const word of t.data.split(/(\s+)/)) {
      if (word.length <= FOLD) { pieces.push(word); continue; }
      for (let i = 0; i < word.length; i += FOLD) pieces.push(word.slice(i, i + FOLD), document.createElement("wbr"));
    }
    t.replaceWith(...pieces);
  }
}

// a response, problem or milestone text: Markdown, with its LaTeX typeset
function renderText(node, s) {
  const kept = [];
  const text = s.replace(/[\uE000\uE001]/g, "\uFFFD");
  let src = "", last = 0;
  for (const [start, end] of mathSpans(text)) {
    src += text.slice(last, start) + `\uE000${kept.push(text.slice(start, end)) - 1}\uE001`;
    last = end;
  }
  src += text.slice(last);
  node.innerHTML = markdown().render(src).replace(/\uE000(\d+)\uE001/g, (_, i) => escapeHtml(kept[i]));
  math(node);
  fold(node);
}

function text(s, cls = "") {
  const d = el("div", { class: `md ${cls}` });
  renderText(d, s);
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

function students() { return OV.students; }

// ------------------------------------------------------------------ overview

function found(f) {   // the search over problem text and pid
  const q = FILTER.q.trim().toLowerCase();
  return !q || f.problem.toLowerCase().includes(q) || f.pid.toLowerCase().includes(q);
}

function matches(f) {
  const who = FILTER.student ? [FILTER.student] : students();
  if (!found(f)) return false;
  if (FILTER.type && !f.types.includes(FILTER.type)) return false;
  if (FILTER.schema && !f.schemas.includes(FILTER.schema)) return false;
  return who.some((s) => {
    const l = f.labels[s];
    return (!FILTER.gap || gapOf(l) === FILTER.gap) && (!FILTER.outcome || l.outcome === FILTER.outcome)
      && (!FILTER.reason || l.reasons.includes(FILTER.reason));
  });
}

// the families of a student whose verdicts rest on answers cut off at the token budget, by label
function cutOff(s, kind) {
  const out = {};
  for (const f of OV.families) {
    const l = f.labels[s];
    if (!l || !l.reasons || !l.reasons.includes(CUT)) continue;
    const key = kind === "gap" ? gapOf(l) : l[kind];
    out[key] = (out[key] || 0) + 1;
  }
  return out;
}

// a family's gap in the taxonomy's view (the corrected one moves a flagged composition-gap family out)
function gapOf(l) { return TAXONOMY === "corrected" ? l.gap_corrected : l.gap; }

function gapKeys() { return OV.gaps.concat(TAXONOMY === "corrected" ? [OV.flagged] : []); }

// a student's families in a gap, in the taxonomy's view: Table 42's flagged count taken out of Composition-gap
function gapCount(r, k, s) {
  if (k === OV.not_classified) return r.taxonomy_not_classified;
  const row = TAXONOMY === "corrected" ? OV.report.review[s] : null;
  if (k === OV.flagged) return row ? row.flagged : 0;
  return row && k === OV.composition ? r.taxonomy[k] - row.flagged : r.taxonomy[k];
}

// the switch between the raw taxonomy and the corrected one, where a rubric review ran (else nothing)
function taxonomyView() {
  if (!OV.report.review) return null;
  const views = [["raw", "Raw taxonomy"], ["corrected", "Grading errors removed (Table 42)"]];
  return el("fieldset", { class: "view", id: "taxonomy-view" }, el("legend", { text: "Taxonomy" }),
    views.map(([v, text]) => el("label", {}, el("input", {
      type: "radio", name: "taxonomy-view", value: v, checked: TAXONOMY === v,
      onchange: () => { TAXONOMY = v; FILTER.gap = ""; renderOverview(); } }), " ", text)));
}

function chart(id, title, kind, keys, countOf, extra) {
  const rows = students().map((s) => {
    const r = OV.report.students[s];
    const denom = Math.max(r.n, 1);
    const cut = cutOff(s, kind);
    const segs = keys.concat([extra]).map((key) => {
      const count = countOf(r, key, s);
      if (!count) return null;
      const share = (100 * count) / denom;
      const color = OV.colors[key];
      const pressed = FILTER.student === s && FILTER[kind] === key;
      const c = Math.min(cut[key] || 0, count);
      const because = c ? `; ${c} of them rest on answers cut off at the token budget (hatched)` : "";
      return el("button", {
        class: "seg" + (color ? (isLight(color) ? " light" : "") : " hatched"),
        // the right-hand part of a segment is hatched in proportion to its families resting on cut-off answers
        style: `width:${share}%;` + (color ? `background-color:${color};` : "")
          + (c && color ? `background-image:${HATCH};background-size:${(100 * c) / count}% 100%;` : ""),
        "data-student": s, "data-kind": kind, "data-value": key, "data-count": count, "data-cut": c,
        "aria-pressed": pressed ? "true" : "false",
        "aria-label": `${s}: ${key}, ${count} families (${share.toFixed(1)}%)${because}: list them`,
        title: `${key}: ${count} families (${share.toFixed(1)}%)${because}`,
        text: share >= 4.5 ? String(count) : "",
        onclick: () => pickSegment(s, kind, key),
      });
    });
    return el("div", { class: "bar-row" }, el("div", { class: "bar-name", text: `${s} (n=${r.n})`, title: r.settings || "" }),
              el("div", { class: "bar", role: "group", "aria-label": `${title}: ${s}` }, segs));
  });
  const anyCut = students().some((s) => Object.keys(cutOff(s, kind)).length);
  const legend = el("div", { class: "legend" }, keys.concat([extra]).map((k) =>
    el("span", {}, el("span", { class: "swatch" + (OV.colors[k] ? "" : " hatched"),
                                style: OV.colors[k] ? `background:${OV.colors[k]}` : null }), k)),
    anyCut ? el("span", {}, el("span", { class: "swatch", style: `background-color:#777;background-image:${HATCH}` }),
                "white stripes: families whose verdicts rest on answers cut off at the token budget") : null);
  return el("section", { class: "chart", id }, el("h3", { text: title }), rows, legend);
}

function pickSegment(s, kind, key) {
  Object.assign(FILTER, { student: s, gap: "", outcome: "", reason: "", type: "", schema: "", q: "" });
  FILTER[kind] = key;
  renderOverview();
  document.getElementById("family-count").focus();
}

// options: values, or [value, text] pairs
function select(label, key, options, render = renderList) {
  const s = el("select", { id: `filter-${key}`, onchange: (e) => { FILTER[key] = e.target.value; render(); } },
    el("option", { value: "", text: "any" }),
    options.map((o) => (Array.isArray(o) ? o : [o, o])).map(([v, t]) => el("option", { value: v, text: t })));
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
    rows.push([`Student ${s}`, (x.settings ? `at ${x.settings}; ` : "") + `${x.families} families; K = ${x.k ?? "not run"} per condition`
      + (x.k_stage0 ? `, ${x.k_stage0} per milestone` : "") + `; grader ${x.grader || "—"}; max tokens `
      + `${x.max_tokens.join(", ") || "—"}; temperature ${x.temperature.join(", ") || "—"}; `
      + (x.grammar ? "decoding constrained by a grammar (GBNF: changes what the student can answer); " : "")
      + `${x.runs} probe runs, tokens ${x.tokens_in} in / ${x.tokens_out} out, cost ${cost}`
      + (x.reused ? `; ${x.reused} answers reused from the cache by ${x.reruns} later runs (paid once, counted once)` : "")]);
  }
  return el("dl", { class: "prov" }, rows.map(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}

// the report's PNG figures, each a panel with the settings its students' results were made at
function figures() {
  const at = Object.entries(OV.report.students).filter(([, t]) => t.settings).map(([s, t]) => `${s}: ${t.settings}`);
  return el("div", { class: "figures" }, OV.figures.map((f) => el("figure", { class: "figure" },
    el("img", { src: f.file, alt: f.title, loading: "lazy" }),
    el("figcaption", { text: f.title + (at.length ? `. At: ${at.join("; ")}.` : "") }))));
}

function searchBox(render) {
  return el("label", {}, "Search the problems", el("input", {
    type: "search", id: "search", value: FILTER.q, placeholder: "text or pid",
    oninput: (e) => { FILTER.q = e.target.value; render(); } }));
}

function clearButton() {
  return el("button", { type: "button", text: "Clear filters",
    onclick: () => { Object.keys(FILTER).forEach((k) => { FILTER[k] = ""; }); renderOverview(); } });
}

// a problem in the list: its first lines, its LaTeX typeset once the row scrolls into view (typesetting
// hundreds of problems up front would hold back the first paint)
const TYPESET = "IntersectionObserver" in window ? new IntersectionObserver((seen) => {
  for (const e of seen) {
    if (!e.isIntersecting) continue;
    TYPESET.unobserve(e.target);
    renderText(e.target, e.target.dataset.problem);
  }
}) : null;

function problemCell(f) {
  const d = el("div", { class: "clamp md", text: f.problem });
  fold(d);   // shown as text until it is typeset
  d.dataset.problem = f.problem;
  if (TYPESET) TYPESET.observe(d); else renderText(d, f.problem);
  return el("td", { class: "problem" }, d);
}

// The overview's warnings of answers cut off or unreadable (the report's, a comparison's, PRIM's), under
// ``title``; nothing when there are none.
function cutOffBanner(title) {
  return (OV.warnings || []).length ? el("div", { class: "banner", role: "alert", id: "cut-off-banner" },
    el("strong", { text: title }), el("ul", {}, OV.warnings.map((w) => el("li", { text: w })))) : null;
}

function renderOverview() {
  if (OV.compare) return renderCompareOverview();
  if (OV.prim) return renderPrimOverview();
  document.getElementById("crumb").textContent = "";
  document.title = "OracleLadder report";
  const all = OV.families;
  const main = document.getElementById("main");
  fill(main,
    el("h1", { text: "Diagnosis report" }),
    cutOffBanner("Answers cut off at the token budget: the charts partly measure the budget, not the student."),
    el("h2", { text: "Provenance" }), provenance(),
    el("h2", { text: "Charts (click a segment to list its families)" }),
    taxonomyView(),
    chart("taxonomy-chart", "Reasoning-gap taxonomy (strict milestone test"
          + (TAXONOMY === "corrected" ? "; grading errors flagged by the review removed)" : ")"), "gap", gapKeys(),
          gapCount, OV.not_classified),
    chart("outcome-chart", "Parent-probe outcome fingerprint", "outcome", OV.outcomes,
          (r, k) => (k === OV.not_determined ? r.outcome_undetermined : r.outcomes_known[k]), OV.not_determined),
    ...((OV.figures || []).length ? [el("h2", { id: "figures", text: "Figures" }), figures()] : []),
    el("h2", { id: "families", text: "Families" }),
    el("div", { class: "filters", role: "search" },
      select("Student", "student", students()),
      select("Gap", "gap", gapKeys().concat([OV.not_classified])),
      select("Outcome", "outcome", OV.outcomes.concat([OV.not_determined])),
      select("Verdict reason", "reason", uniq(all.flatMap((f) => Object.values(f.labels).flatMap((l) => l.reasons)))),
      select("Milestone type", "type", uniq(all.flatMap((f) => f.types))),
      select("Answer schema", "schema", uniq(all.flatMap((f) => f.schemas))),
      searchBox(renderList), clearButton()),
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
      problemCell(f),
      who.map((s) => el("td", {}, chip(gapOf(f.labels[s])), " ",
                        el("span", { class: "muted", text: f.labels[s].outcome })))))));
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
  const rows = page.milestones.map((m) => el("tr", { class: m.type === "INTEGRATE" ? "integrate" : null, "data-type": m.type },
    el("td", { text: `m${m.i}` }),
    el("td", {}, m.type, m.type === "INTEGRATE" ? el("span", { class: "badge", text: "not tested" }) : null),
    el("td", { text: m.schema || "—" }),
    el("td", {}, m.description ? text(m.description) : null,
       el("details", {}, el("summary", { text: "prompt" }), text(m.prompt))),
    el("td", {}, tex(m.answer))));
  if (page.integrate) {
    const m = page.integrate;
    rows.push(el("tr", { class: "integrate", "data-type": "INTEGRATE" }, el("td", { text: "—" }),
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
    el("div", { class: "response md" }));
  d.addEventListener("toggle", () => {   // the answer is laid out (and typeset) when first opened
    const r = d.querySelector(".response");
    if (d.open && !r.hasChildNodes()) renderText(r, a.response);
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
    l.review ? el("p", { class: "review", text: `Rubric review: ${l.review.category}`
      + (l.review.verifier_error ? ", verifier error" : "") + (l.review.format_error ? ", format error" : "")
      + `. ${l.review.evidence}` }) : null,
    el("h3", { text: "Stage 0 (milestones alone)" }),
    ms.length ? ms.map((m) => targetBlock({ id: `m${m.i}`, label: `m${m.i} ${m.type}` }, att[`m${m.i}`]))
      : el("p", { class: "muted", text: "not run" }),
    el("h3", { text: "Conditions" }),
    Object.entries(OV.conditions).filter(([c]) => att[c]).map(([c, short]) => targetBlock({ id: c, label: short }, att[c])),
    Object.keys(OV.conditions).some((c) => att[c]) ? null : el("p", { class: "muted", text: "not run" }));
}

function navLinks(n) {
  const at = shown.indexOf(n);
  return el("p", { class: "nav-links" }, el("a", { href: "#/", text: "← overview" }),
    at > 0 ? [" · ", el("a", { href: `#/family/${shown[at - 1]}`, text: "previous" })] : null,
    at >= 0 && at < shown.length - 1 ? [" · ", el("a", { href: `#/family/${shown[at + 1]}`, text: "next" })] : null);
}

function problemHead(page) {
  return [
    el("h2", { text: "Problem" }), text(page.problem, "problem-box"),
    el("p", {}, "Reference answer: ", tex(page.answer)),
    page.answer_corrected ? el("p", {}, "Corrected reference answer: ", tex(page.answer_corrected),
                               page.correction_note ? ` (${page.correction_note})` : "") : null];
}

// the teacher's attempts at compiling the family (`ladder attempts`): each plan and the errors it got
function compileAttempts(found) {
  if (!found.length) return [];
  return [el("h2", { text: "Compile attempts" }), el("ol", { class: "compile-attempts" }, found.map((a) =>
    el("li", { "data-passed": String(a.passed) },
      el("strong", { text: `${a.teacher}${a.granularity ? ` (${a.granularity})` : ""}, attempt ${a.attempt + 1}: `
                           + (a.passed ? "passed" : "failed") }),
      a.milestones.length ? el("ol", {}, a.milestones.map((m) =>
        el("li", {}, `${m.type}: `, m.description ? text(m.description) : "", " → ", tex(String(m.answer ?? ""))))) : null,
      a.errors.length ? el("ul", { class: "errors" }, a.errors.map((e) =>
        el("li", { text: `[${e.check ?? "error"}] ${e.milestone === null || e.milestone === undefined ? "plan"
                                                     : `milestone ${e.milestone + 1}`}: ${e.reason}` }))) : null)))];
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
  fill(document.getElementById("main"),
    navLinks(n),
    el("h1", { text: `Family ${page.pid}` }),
    el("p", { class: "muted", text: `Milestone types: ${f.types.join(", ")}; answer schemas: ${f.schemas.join(", ") || "—"}` }),
    ...problemHead(page),
    el("h2", { text: "Roadmap" }), roadmap(page),
    who.length > 2 ? pickers : null,
    el("div", { class: "columns" }, PICKED.map((s) => studentColumn(page, s))),
    ...compileAttempts(page.compile || []));
  performance.mark("ladder-family");
}

// ------------------------------------------------------------------ compare view (ladder compare --html)

// whether the student's rungs C1-C3 recover the parent; null when its outcome is not known
function recovered(l) { return OV.outcomes.includes(l.outcome) ? l.outcome !== OV.compare.unrecovered : null; }

// whether a rung recovers the parent (at least 1 of K correct); null when it was not run
function hit(t, c) { return t[c] ? t[c][0] >= 1 : null; }

// the "Change" filter: how the problem's outcome moves from roadmap A to roadmap B (a side whose outcome
// is not known is in neither direction, as in the tables)
function changes() {
  const [a, b] = OV.compare.names;
  const only = (test, i) => (p) => test(p.sides[i]) === true && test(p.sides[1 - i]) === false;
  const differs = (key) => (p) => p.sides[0].labels[key] !== p.sides[1].labels[key];
  return [
    ["solved-a", `solved (C1-C3) under ${a}, not under ${b}`, only((s) => recovered(s.labels), 0)],
    ["solved-b", `solved (C1-C3) under ${b}, not under ${a}`, only((s) => recovered(s.labels), 1)],
    ["c2-a", `C2 recovered under ${a} only`, only((s) => hit(s.tally, "C2_descriptions"), 0)],
    ["c2-b", `C2 recovered under ${b} only`, only((s) => hit(s.tally, "C2_descriptions"), 1)],
    ["c3-a", `C3 recovered under ${a} only`, only((s) => hit(s.tally, "C3_gold_answers"), 0)],
    ["c3-b", `C3 recovered under ${b} only`, only((s) => hit(s.tally, "C3_gold_answers"), 1)],
    ["gap", "label (strict) differs", differs("gap")],
    ["gap_fraction", "label (fraction) differs", differs("gap_fraction")],
    ["outcome", "outcome differs", differs("outcome")],
  ];
}

function pairMatches(p) {
  const [x, y] = p.sides.map((s) => s.labels);
  const change = changes().find(([id]) => id === FILTER.change);
  return found(p) && (!FILTER.gap_a || x.gap === FILTER.gap_a) && (!FILTER.gap_b || y.gap === FILTER.gap_b)
    && (!FILTER.outcome_a || x.outcome === FILTER.outcome_a) && (!FILTER.outcome_b || y.outcome === FILTER.outcome_b)
    && (!change || change[2](p));
}

function tallyText(t, c) { return t[c] ? `${t[c][0]} of ${t[c][1]}` : "not run"; }

function renderCompareOverview() {
  const [a, b] = OV.compare.names;
  document.getElementById("crumb").textContent = "";
  document.title = `${a} vs ${b} · OracleLadder comparison`;
  const gaps = OV.gaps.concat([OV.not_classified]);
  const outcomes = OV.outcomes.concat([OV.not_determined]);
  fill(document.getElementById("main"),
    cutOffBanner("Answers cut off or unreadable: the tables partly measure the budget, not the student."),
    Object.assign(el("section", { id: "tables" }), { innerHTML: OV.tables_html }),
    el("h2", { id: "families", text: "Problems" }),
    el("p", { class: "muted", text: `Labels at tau = 1 (solved: at least 1 of ${OV.compare.k} correct), as in the tables; `
      + `student ${OV.compare.student}.` }),
    el("div", { class: "filters", role: "search" },
      select("Change", "change", changes().map(([id, label]) => [id, label]), renderPairs),
      select(`Label under ${a}`, "gap_a", gaps, renderPairs), select(`Label under ${b}`, "gap_b", gaps, renderPairs),
      select(`Outcome under ${a}`, "outcome_a", outcomes, renderPairs),
      select(`Outcome under ${b}`, "outcome_b", outcomes, renderPairs),
      searchBox(renderPairs), clearButton()),
    el("p", { id: "family-count", tabindex: "-1", "aria-live": "polite" }),
    el("table", { id: "family-list" }));
  renderPairs();
  performance.mark("ladder-overview");
}

function renderPairs() {
  const rows = OV.families.filter(pairMatches);
  shown = rows.map((p) => p.n);
  const [a, b] = OV.compare.names;
  document.getElementById("family-count").textContent = `${rows.length} of ${OV.families.length} problems`;
  document.getElementById("family-list").replaceChildren(
    el("thead", {}, el("tr", {}, ["#", "Problem", "Text", a, b, `C2 (${a} / ${b})`, `C3 (${a} / ${b})`,
                                  `Stage 0 solved (${a} / ${b})`].map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((p) => el("tr", { "data-pid": p.pid },
      el("td", { text: String(p.n + 1) }),
      el("td", {}, el("a", { href: `#/family/${p.n}`, text: p.pid })),
      problemCell(p),
      p.sides.map((s) => el("td", { class: "side-label" }, chip(s.labels.gap), " ", el("span", { class: "muted", text: s.labels.outcome }))),
      ["C2_descriptions", "C3_gold_answers", "stage0"].map((c) => el("td", { class: `tally-${c}`,
        text: p.sides.map((s) => tallyText(s.tally, c)).join(" / ") }))))));
}

function renderPair(n, page) {
  const p = OV.families[n];
  const s = OV.compare.student;
  document.title = `${page.pid} · OracleLadder comparison`;
  document.getElementById("crumb").textContent = `problem ${n + 1}: ${page.pid}`;
  const sides = page.sides.map((side, i) => el("section", { class: "side", "data-side": "ab"[i], tabindex: "-1",
                                                            "aria-label": `Roadmap ${"AB"[i]}: ${side.name}` },
    el("h2", { text: `Roadmap ${"AB"[i]}: ${side.name}` }),
    el("p", { class: "muted", text: `Milestone types: ${uniq(side.milestones.map((m) => m.type)).join(", ")}; answer `
      + `schemas: ${uniq(side.milestones.map((m) => m.schema).filter(Boolean)).join(", ") || "—"}` }),
    roadmap(side), studentColumn(side, s)));
  const jump = (i) => el("a", { href: location.hash, text: "attempts",
    onclick: (e) => { e.preventDefault(); sides[i].scrollIntoView(); sides[i].focus(); } });
  const outcomes = el("table", { class: "outcomes" },
    el("thead", {}, el("tr", {}, ["Roadmap", "Taxonomy (strict)", "Fraction test", "Outcome", "Stage 0 solved",
      ...Object.values(OV.conditions).slice(0, 3), ""].map((h) => el("th", { text: h })))),
    el("tbody", {}, page.sides.map((side, i) => {
      const l = side.labels[s];
      const t = p.sides[i].tally;
      return el("tr", { "data-side": "ab"[i] }, el("td", { text: `${"AB"[i]}: ${side.name}` }),
        el("td", {}, chip(l.gap)), el("td", {}, chip(l.gap_fraction)), el("td", {}, chip(l.outcome)),
        el("td", { text: tallyText(t, "stage0") }),
        Object.keys(OV.conditions).slice(0, 3).map((c) => el("td", { text: tallyText(t, c) })),
        el("td", {}, jump(i)));
    })));
  fill(document.getElementById("main"),
    navLinks(n),
    el("h1", { text: `Problem ${page.pid}` }),
    el("p", { class: "muted", text: `${OV.compare.names.join(" vs ")}; student ${s}; labels at tau = 1, as in the tables` }),
    ...problemHead(page),
    el("h2", { text: "Outcomes" }), outcomes,
    el("div", { class: "columns sides" }, sides));
  performance.mark("ladder-family");
}

// ------------------------------------------------------------------ PRIM view (ladder prim report --html)

function pct(x) { return x === null || x === undefined ? "—" : `${x.toFixed(1)}%`; }

// one 100% bar of counts by key, in the label colours, with a legend (Figure 2, Figure 4)
function countBar(id, title, counts, note) {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const segs = Object.entries(counts).filter(([, c]) => c).map(([key, c]) => {
    const color = OV.colors[key];
    const share = (100 * c) / total;
    return el("span", { class: "seg" + (color ? (isLight(color) ? " light" : "") : " hatched"),
      style: `width:${share}%;` + (color ? `background:${color}` : ""), "data-value": key, "data-count": c,
      title: `${key}: ${c} (${share.toFixed(1)}%)`, text: share >= 4.5 ? String(c) : "" });
  });
  const legend = el("div", { class: "legend" }, Object.entries(counts).map(([k, c]) =>
    el("span", {}, el("span", { class: "swatch" + (OV.colors[k] ? "" : " hatched"),
                                style: OV.colors[k] ? `background:${OV.colors[k]}` : null }), `${k}: ${c}`)));
  return el("section", { class: "chart panel", id }, el("h3", { text: title }),
    el("div", { class: "bar-row" }, el("div", { class: "bar-name", text: `${OV.prim.student} (n=${total})` }),
       el("div", { class: "bar", role: "img", "aria-label": `${title}: ${Object.entries(counts).map(([k, c]) => `${k} ${c}`).join(", ")}` },
          total ? segs : el("span", { class: "muted", text: note }))),
    legend);
}

// Figure 3: the student's Discovery (x) against its Generation (y) on a square, with the diagonal
function discoveryPanel() {
  const d = OV.prim.table1.dimensions;
  const [x, y] = ["discovery", "generation"].map((k) => (d[k].interval ? 100 * d[k].interval.point : null));
  const plot = el("div", { class: "scatter", role: "img",
                           "aria-label": `Discovery ${pct(x)}, Generation ${pct(y)}` }, el("div", { class: "diagonal" }));
  if (x !== null && y !== null) {
    plot.append(el("span", { class: "dot", style: `left:${x}%;bottom:${y}%`, title: `${OV.prim.student}: Discovery ${pct(x)}, Generation ${pct(y)}` }));
  }
  return el("section", { class: "panel", id: "figure3" }, el("h3", { text: "Figure 3: Discovery against Generation" }),
    el("div", { class: "scatter-box" }, el("span", { class: "axis-y", text: "Generation" }), plot),
    el("div", { class: "axis-x", text: "Discovery" }),
    el("p", { class: "muted", text: `Discovery ${pct(x)} (x), Generation ${pct(y)} (y); the diagonal: as often discovered as solved` }));
}

// Figure 12: per dimension, right and wrong answers' output tokens, q1 to q3 with the median
function tokensPanel() {
  const rows = Object.entries(OV.prim.figure12).flatMap(([name, split]) =>
    ["right", "wrong"].filter((side) => split[side].n).map((side) => [name, side, split[side]]));
  const top = Math.max(1, ...rows.map(([, , t]) => t.q3));
  return el("section", { class: "panel", id: "figure12" },
    el("h3", { text: "Figure 12: output tokens, right against wrong answers (box: q1 to q3, line: median)" }),
    rows.length ? el("div", { class: "boxes" }, rows.map(([name, side, t]) => el("div", { class: "bar-row", "data-dimension": name, "data-side": side },
      el("div", { class: "bar-name", text: `${name}: ${side} (n=${t.n})` }),
      el("div", { class: "box-track", title: `q1 ${t.q1}, median ${t.median}, q3 ${t.q3}` },
        el("span", { class: `box ${side}`, style: `left:${(100 * t.q1) / top}%;width:${Math.max(0.5, (100 * (t.q3 - t.q1)) / top)}%` }),
        el("span", { class: "median", style: `left:${(100 * t.median) / top}%` }),
        el("span", { class: "box-text", text: `${Math.round(t.median)}` })))))
      : el("p", { class: "muted", text: "no answer with a verdict" }));
}

function primMatches(f) {
  return found(f) && (!FILTER.place || f.prim === FILTER.place) && (!FILTER.ladder_gap || f.ladder_gap === FILTER.ladder_gap);
}

function renderPrimOverview() {
  const r = OV.prim;
  document.getElementById("crumb").textContent = "";
  document.title = `${r.student} · PRIM report`;
  fill(document.getElementById("main"),
    el("h1", { text: `PRIM diagnosis: ${r.student} on ${r.roadmap_set}` }),
    el("p", { text: `${r.problems} problems with a gold primitive; judge ${r.judge}; a primitive is correct at `
      + `Score >= ${r.tau}; a problem passes a dimension with at least ${r.threshold} of its samples right; `
      + `${r.missing_scores} primitive scores missing (left out, never 0).` + (r.settings ? ` At: ${r.settings}.` : "") }),
    cutOffBanner("Answers cut off or unreadable: the dimensions partly measure the budget, not the student."),
    el("h2", { text: "Figures" }),
    el("div", { class: "panels" },
      countBar("figure2", "Figure 2: problems by Discovery (D) and Generation (G)", r.figure2, "no problem with both"),
      countBar("figure4", "Figure 4: Generation failures by Discovery (D) and Execution (E, gold)", r.table9, "no Generation failure"),
      discoveryPanel(), tokensPanel()),
    el("h2", { id: "families", text: "Problems: PRIM beside the ladder" }),
    el("div", { class: "filters", role: "search" },
      select("PRIM", "place", OV.places, renderPrimList),
      select("Ladder gap", "ladder_gap", uniq(OV.families.map((f) => f.ladder_gap)), renderPrimList),
      searchBox(renderPrimList), clearButton()),
    el("p", { id: "family-count", tabindex: "-1", "aria-live": "polite" }),
    el("table", { id: "family-list" }),
    el("h2", { text: "Tables (report.md)" }),
    Object.assign(el("section", { id: "tables" }), { innerHTML: OV.tables_html }));
  renderPrimList();
  performance.mark("ladder-overview");
}

function renderPrimList() {
  const rows = OV.families.filter(primMatches);
  shown = rows.map((f) => f.n);
  document.getElementById("family-count").textContent = `${rows.length} of ${OV.families.length} problems`;
  document.getElementById("family-list").replaceChildren(
    el("thead", {}, el("tr", {}, ["#", "Problem", "Text", "Primitive family", "PRIM", "Ladder gap", "Ladder outcome"]
      .map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((f) => el("tr", { "data-pid": f.pid },
      el("td", { text: String(f.n + 1) }), el("td", {}, el("a", { href: `#/family/${f.n}`, text: f.pid })),
      problemCell(f), el("td", { text: f.family || "—" }),
      el("td", { class: "prim-place" }, chip(f.prim)), el("td", { class: "ladder-gap" }, chip(f.ladder_gap)),
      el("td", { class: "ladder-outcome" }, chip(f.ladder_outcome))))));
}

const SIGMA = { 1: "match", 0.5: "partial", 0: "mismatch" };

// a primitive the student wrote, and the judge on it: V, the gate, the mechanism, the score and the evidence
function written(w) {
  const tau = OV.prim.tau;
  const verdict = w.status === null ? "not scored" : w.status === "missing" ? "missing score"
    : w.score >= tau ? "correct" : "incorrect";
  const facts = [
    ["V", w.validity === null ? "—" : w.validity ? "valid" : `invalid (${w.failure || "no reason"})`],
    ["gate", w.gate === null ? "—" : `${SIGMA[w.gate]} (${w.gate})`],
    ["mechanism", w.mechanism === null ? "—" : `${SIGMA[w.mechanism]} (${w.mechanism})`],
    ["Score", w.score === null ? "—" : `${w.score} (PrimitiveAcc at tau = ${tau}: ${w.score >= tau ? 1 : 0})`]];
  if (w.reason) facts.push(["note", w.reason]);
  const output = el("details", { class: "output" }, el("summary", { text: "the student's whole output" }),
                    el("div", { class: "response md" }));
  output.addEventListener("toggle", () => {   // laid out (and typeset) when first opened, as an attempt is
    const r = output.querySelector(".response");
    if (output.open && !r.hasChildNodes()) renderText(r, w.response);
  });
  return el("section", { class: "written", "data-target": w.target, "data-k": w.k, "data-verdict": verdict },
    el("h4", { text: `${w.target === "prim_discovery" ? "Discovery" : "Digestion"}, k=${w.k}: ${verdict}` }),
    w.primitive ? el("dl", { class: "fields" }, Object.entries(w.primitive).map(([k, v]) => [el("dt", { text: k }), el("dd", {}, text(v))]))
      : el("p", { class: "muted", text: "No readable primitive (no core_concept line): the student's failure, scored 0." }),
    el("table", { class: "verdicts" }, el("tbody", {}, facts.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))))),
    Object.keys(w.evidence).length ? el("dl", { class: "evidence" }, Object.entries(w.evidence).map(([k, v]) =>
      [el("dt", { text: `judge's evidence (${k})` }), el("dd", {}, text(v))])) : null,
    output);
}

function renderPrimFamily(n, page) {
  document.title = `${page.pid} · PRIM report`;
  document.getElementById("crumb").textContent = `problem ${n + 1}: ${page.pid}`;
  const byTarget = (t) => page.written.filter((w) => w.target === t).map(written);
  const column = (title, t) => el("section", { class: "student", "data-dimension": t }, el("h3", { text: title }),
    byTarget(t).length ? byTarget(t) : el("p", { class: "muted", text: "not probed" }));
  fill(document.getElementById("main"),
    navLinks(n),
    el("h1", { text: `Problem ${page.pid}` }),
    el("p", {}, `Student ${OV.prim.student}: PRIM `, chip(page.prim), " · ladder gap ", chip(page.ladder_gap),
       " · ladder outcome ", chip(page.ladder_outcome), ` · primitive family ${page.family || "—"}`),
    ...problemHead(page),
    el("h2", { text: "Primitives (by provenance)" }),
    Object.keys(page.primitives).length ? el("div", { class: "columns" }, Object.entries(page.primitives).map(([who, p]) =>
      el("section", { class: "primitive", "data-provenance": who }, el("h3", { text: who }), text(p))))
      : el("p", { class: "muted", text: "none" }),
    el("h2", { text: `What ${OV.prim.student} wrote, and the judge (${OV.prim.judge}) on it` }),
    el("div", { class: "columns" }, column("Discovery: from the problem alone", "prim_discovery"),
       column("Digestion: from the problem and its reference solution", "prim_digestion")));
  performance.mark("ladder-family");
}

// ------------------------------------------------------------------ routing and keys

function route() {
  const m = location.hash.match(/^#\/family\/(\d+)$/);
  if (!OV) { document.getElementById("main").textContent = "data/overview.js is missing: write the report again."; return; }
  if (m) {
    const n = Number(m[1]);
    if (!shown.length) shown = OV.families.map((f) => f.n);
    loadFamily(n, (page) => {
      (OV.compare ? renderPair : OV.prim ? renderPrimFamily : renderFamily)(n, page);
      fold(document.getElementById("main"));   // what is not Markdown too: an extracted answer, a reason
      document.getElementById("main").focus();
    });
  } else {
    renderOverview();
    fold(document.getElementById("main"));
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
