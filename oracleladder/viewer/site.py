"""The HTML report: a static site (overview, one page per family) that opens from the file system.

Layout under the site folder: index.html, assets/ (app.js, style.css, the vendored KaTeX and markdown-it),
data/overview.js (the report, its provenance and a small index of every family: labels, milestone types,
problem text for the search) and data/f/<n>.js, one per family with every attempt. Each data file is a
script that hands its object to the page (a fetch() of a JSON file is refused under file://), and a
family's file is loaded only when its page is opened, so the first paint needs the overview alone.
`ladder compare --html` writes a site of the same layout whose overview carries the comparison and whose
pages put the problem's two roadmaps side by side; `ladder prim report --html` one whose overview carries
PRIM's report of a student and whose pages show a problem's primitives and what the student wrote.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from markdown_it import MarkdownIt

from ..clients.base import TRUNCATED
from ..ladder.outcomes import NOT_DETERMINED, FamilyResults, Gap, Outcome, known_outcome, milestone_test, outcome_label
from ..prim import palette as prim_palette
from ..prim.analysis import PrimReport
from ..prim.problems import SOLVED, UNKNOWN
from ..report.palette import FIGURES, FLAGGED, NOT_CLASSIFIED, colors
from ..report.tables import StudentReport, gap_label
from ..schemas.conditions import LADDER
from ..schemas.models import Family, Milestone, Rollout
from ..schemas.rubric import RubricLabel
from ..schemas.types import GradeStatus
from ..store.attempts import CompileAttempt
from ..store.sqlite import FailedJob, RunRecord, Store

STATIC = resources.files("oracleladder.viewer") / "static"
NOT_PROBED = "Not probed"  # a family another student has results on; in none of this student's counts


@dataclass
class StudentRecords:
    """What the store holds of one student on the roadmap set: its rollouts, the jobs whose call failed for
    good, the finish reason of each answered call (by call key), and its probe runs."""

    rollouts: list[Rollout]
    failed: list[FailedJob]
    finish: dict[str, str | None] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)


def reason_category(attempt: dict) -> str:
    """The filterable kind of an attempt's verdict: accepted, the verdict's reason without its detail
    ("parse error", "no boxed", ...), truncated, call failed, ungraded."""
    if attempt.get("failed") is not None:
        return "call failed"
    if attempt["status"] == GradeStatus.UNGRADED.value:
        return "ungraded"
    if attempt["finish"] in TRUNCATED and attempt["label"] != "ACCEPT":
        return "truncated"
    return "accepted" if attempt["label"] == "ACCEPT" else attempt["reason"].split(":")[0].strip()


def _attempts(rec: StudentRecords) -> dict[str, dict[str, list[dict]]]:
    """Every attempt of a student, by family and target (m<i> or condition), in k order; a failed job is
    an attempt with no answer and the call's failure as its reason. A later rollout of a (target, k) wins,
    as in the report's results."""
    by_pid: dict[str, dict[str, dict[int, dict]]] = {}
    for j in rec.failed:
        by_pid.setdefault(j.pid, {}).setdefault(j.target, {})[j.k] = {"k": j.k, "failed": j.reason}
    for r in rec.rollouts:
        v = r.verdict
        by_pid.setdefault(r.pid, {}).setdefault(r.target, {})[r.k] = {
            "k": r.k, "response": r.response, "label": v.label.value, "reason": v.reason,
            "extracted": v.extracted, "status": GradeStatus(v.status).value, "finish": rec.finish.get(r.call_key)}
    return {pid: {t: [a | {"category": reason_category(a)} for _, a in sorted(ks.items())]
                  for t, ks in targets.items()} for pid, targets in by_pid.items()}


def _rule(f: FamilyResults | None, tau: int) -> dict:
    """The family's labels under the strict and the fraction milestone test, and the facts that decide them."""
    if f is None:
        return {"gap": NOT_PROBED, "gap_fraction": NOT_PROBED, "outcome": NOT_PROBED,
                "rule": "no graded attempt on this family: it is in none of this student's counts"}
    out = known_outcome(f, tau)
    tested = {m: sum(r) for m, r in f.stage0.items() if r}
    ms = (f"milestone test: {sum(1 for c in tested.values() if c)} of {len(tested)} tested milestones solved "
          f"at least once (strict: {'pass' if milestone_test(f.stage0, 'strict') else 'fail'}, "
          f"fraction: {'pass' if milestone_test(f.stage0, 'fraction') else 'fail'})" if tested
          else "milestone test: Stage 0 not run")
    rungs = ", ".join(f"{c.short} {sum(f.ladder[c.name])} of {len(f.ladder[c.name])}"
                      for c in LADDER.rungs if f.ladder.get(c.name))
    help_ = (f"smallest help that solves the parent (tau = {tau}): {out.value}"
             if out else "parent outcome: a C1-C3 run it depends on is missing")
    return {"gap": gap_label(f, tau, "strict"), "gap_fraction": gap_label(f, tau, "fraction"),
            "outcome": outcome_label(f, tau),
            "rule": f"{ms}; {help_} ({rungs or 'no ladder rung run'})"}


def _milestone(m: Milestone, i: int | None) -> dict:
    return {"i": i, "type": m.type.value, "schema": m.answer_schema.value if m.answer_schema else None,
            "prompt": m.prompt, "answer": m.answer, "description": m.description}


def _problem(fam: Family) -> dict:
    return {"pid": fam.pid, "problem": fam.parent_prompt, "answer": fam.parent_answer,
            "answer_corrected": fam.parent_answer_corrected, "correction_note": fam.correction_note}


def _reviewed(labels: dict, review: Mapping[str, RubricLabel | None], pid: str) -> dict:
    """A family's labels with its rubric review (Table 42): ``review``, the reviewer's label (None: none, or
    no readable reply), and ``gap_corrected``, the gap with a flagged composition-gap family as FLAGGED."""
    label = review.get(pid)
    flagged = label is not None and label.flagged and labels["gap"] == Gap.COMPOSITION.value
    return labels | {"review": None if label is None else label.model_dump(),
                     "gap_corrected": FLAGGED if flagged else labels["gap"]}


def _roadmap(fam: Family, counted: dict[str, dict[str, FamilyResults]],
             every: dict[str, dict[str, dict[str, list[dict]]]], tau: int,
             reviews: Mapping[str, Mapping[str, RubricLabel | None]] | None = None) -> dict:
    """A family's roadmap with each student's labels (and the verdict reasons of its attempts, and its
    review where ``reviews`` has one) and attempts on it; ``counted`` and ``every`` are the students'
    results and attempts by pid."""
    labels = {s: _rule(c.get(fam.pid), tau) for s, c in counted.items()}
    attempts = {s: every[s].get(fam.pid, {}) for s in counted}
    for s in counted:
        labels[s]["reasons"] = sorted({a["category"] for rolls in attempts[s].values() for a in rolls})
        if reviews is not None:
            labels[s] = _reviewed(labels[s], reviews.get(s, {}), fam.pid)
    return {"milestones": [_milestone(m, i) for i, m in enumerate(fam.milestones)],
            "integrate": _milestone(fam.integrate, None) if fam.integrate else None,
            "labels": labels, "attempts": attempts}


def _provenance(report: dict, families: list[Family], records: dict[str, StudentRecords]) -> dict:
    meta = report["meta"]
    per_student = {}
    for s, rec in records.items():
        configs = [r.config for r in rec.runs if isinstance(r.config, dict)]
        per_student[s] = {
            "families": report["students"][s]["n"], "k": report["students"][s]["k"],
            "k_stage0": report["students"][s]["k_stage0"], "grader": meta["graders"].get(s),
            "settings": report["students"][s].get("settings"),  # what its results were made at (one setting)
            "max_tokens": sorted({c["max_tokens"] for c in configs if "max_tokens" in c}),
            "temperature": sorted({c["temperature"] for c in configs if "temperature" in c}),
            "grammar": bool((report["students"][s]["format"] or {}).get("grammars")),
            # what the runs that made its answers spent, as report.json says (`report.spent`)
            **report["students"][s]["spent"]}
    return {"roadmap_set": meta.get("roadmap_set"), "tau": meta["tau"], "taus": meta["taus"],
            "seed": meta["seed"], "n_resamples": meta["n_resamples"],
            "prompt_hashes": sorted({f.provenance.prompt_hash for f in families if f.provenance.prompt_hash}),
            "teachers": sorted({f.provenance.source for f in families}),
            "ungradable_reference": len(meta.get("ungradable_reference") or {}), "students": per_student}


def _script(path: Path, call: str, *args: object) -> None:
    # "</" never appears raw in the file's strings, so no answer text can close a tag early
    text = ", ".join(json.dumps(a, ensure_ascii=False) for a in args).replace("</", "<\\/")
    path.write_text(f"{call}({text});\n", encoding="utf-8")


def _scaffold(out_dir: str | Path) -> Path:
    """The site folder with the page and its assets, and an empty data/f/ for the pages' files."""
    out = Path(out_dir)
    shutil.rmtree(out / "data", ignore_errors=True)  # a family page of an earlier report must not linger
    (out / "data" / "f").mkdir(parents=True)
    static = Path(str(STATIC))
    shutil.copytree(static, out / "assets", dirs_exist_ok=True, ignore=shutil.ignore_patterns("index.html"))
    shutil.copyfile(static / "index.html", out / "index.html")
    return out


def _shared(students: list[str], markdown: str) -> dict:
    """What every overview carries: the students, the tables of the Markdown report, the label names
    and their plot colours."""
    return {
        "students": students,
        "tables_html": MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown),
        "gaps": [g.value for g in Gap], "outcomes": [o.value for o in Outcome],
        "colors": colors(),
        "not_classified": NOT_CLASSIFIED, "not_determined": NOT_DETERMINED,
        "flagged": FLAGGED, "composition": Gap.COMPOSITION.value,
        "conditions": {c.name: c.short for c in LADDER}}


def _compile_attempt(a: CompileAttempt) -> dict:
    """A teacher's attempt as its family page lists it: the plan's milestones and the errors it got."""
    plan = a.plan.get("milestones") if isinstance(a.plan, dict) else None
    milestones = [{"type": m.get("type"), "description": m.get("description"), "answer": m.get("canonical_answer")}
                  for m in (plan if isinstance(plan, list) else []) if isinstance(m, dict)]
    errors = [{"check": e.get("check"), "milestone": e.get("milestone"), "reason": e.get("reason")}
              if isinstance(e, dict) else {"check": None, "milestone": None, "reason": str(e)} for e in a.errors]
    return {"attempt": a.attempt, "granularity": a.granularity, "passed": a.passed, "teacher": a.source,
            "milestones": milestones, "errors": errors}


def _warnings(report: dict) -> list[str]:
    """report.md's warnings of answers cut off or unreadable (`StudentReport.warnings`), one a line."""
    return [w for s, t in report["students"].items() for w in StudentReport.model_validate(t).warnings(s)]


def write_site(out_dir: str | Path, report: dict, report_md: str, families: list[Family],
               results: dict[str, list[FamilyResults]], records: dict[str, StudentRecords],
               figures_from: Path | None = None,
               reviews: Mapping[str, Mapping[str, RubricLabel | None]] | None = None,
               compile_attempts: Mapping[str, Sequence[CompileAttempt]] | None = None) -> Path:
    """Write the site for a report (write_report's result and its Markdown) into ``out_dir``; returns
    the path of index.html. ``results`` are the FamilyResults the report counted (families left out of
    the report are left out here too); ``records`` the stored attempts of each student; ``figures_from``,
    the folder of the report's PNG figures (`palette.FIGURES`), each copied into the site as a panel;
    ``reviews``, per student, its rubric review's labels by pid (the taxonomy chart's corrected view);
    ``compile_attempts``, the teacher's attempts at each family by pid (none for imported families)."""
    out = _scaffold(out_dir)
    figures = []
    for name, title in FIGURES.items():
        if figures_from is not None and (figures_from / name).is_file():
            (out / "figures").mkdir(exist_ok=True)
            shutil.copyfile(figures_from / name, out / "figures" / name)
            figures.append({"file": f"figures/{name}", "title": title})
    tau = report["meta"]["tau"]
    counted = {s: {f.pid: f for f in fs} for s, fs in results.items()}
    in_report = set().union(*(set(c) for c in counted.values())) if counted else set()
    every = {s: _attempts(records[s]) for s in results}
    index = []
    for n, fam in enumerate(f for f in families if f.pid in in_report):
        page = _problem(fam) | _roadmap(fam, counted, every, tau, reviews) | {
            "compile": [_compile_attempt(a) for a in (compile_attempts or {}).get(fam.pid, ())]}
        _script(out / "data" / "f" / f"{n}.js", "ladderFamily", n, page)
        index.append({"n": n, "pid": fam.pid, "problem": fam.parent_prompt,
                      "types": sorted({m.type.value for m in fam.milestones}),
                      "schemas": sorted({m.answer_schema.value for m in fam.milestones if m.answer_schema}),
                      "labels": page["labels"]})
    overview = {"report": report, "families": index, "provenance": _provenance(report, families, records),
                "figures": figures, "warnings": _warnings(report),
                **_shared(report["meta"]["students"], report_md)}
    _script(out / "data" / "overview.js", "ladderOverview", overview)
    return out / "index.html"


def _tally(f: FamilyResults) -> dict:
    """Correct attempts of how many, per ladder rung and over the tested milestones (solved at least once)."""
    tested = [r for r in f.stage0.values() if r]
    return {"stage0": [sum(1 for r in tested if any(r)), len(tested)],
            **{c: [sum(f.ladder[c]), len(f.ladder[c])] for c in LADDER.parent_probes if f.ladder.get(c)}}


def write_compare_site(out_dir: str | Path, result: dict, compare_md: str, names: tuple[str, str], student: str,
                       families: tuple[list[Family], list[Family]],
                       results: tuple[list[FamilyResults], list[FamilyResults]],
                       records: tuple[StudentRecords, StudentRecords]) -> Path:
    """Write the site of a comparison (probe.compare's result and its Markdown) into ``out_dir``; returns
    the path of index.html. One page per compared problem with roadmap A and roadmap B side by side and
    the student's labels and attempts under each, at tau = 1 as in the comparison's tables."""
    out = _scaffold(out_dir)
    sides = [({f.pid: f for f in fams}, {student: {r.pid: r for r in res}}, {student: _attempts(rec)})
             for fams, res, rec in zip(families, results, records)]
    index = []
    for n, pid in enumerate(result["pids"]):
        roadmaps = [{"name": name, **_roadmap(fams[pid], counted, every, 1)}
                    for name, (fams, counted, every) in zip(names, sides)]
        fam = sides[0][0][pid]
        _script(out / "data" / "f" / f"{n}.js", "ladderFamily", n, _problem(fam) | {"sides": roadmaps})
        index.append({"n": n, "pid": pid, "problem": fam.parent_prompt,
                      "sides": [{"labels": r["labels"][student], "tally": _tally(counted[student][pid])}
                                for r, (_, counted, _) in zip(roadmaps, sides)]})
    overview = {"compare": {"names": list(names), "student": student, "k": result["k"], "n": result["n"],
                            "unrecovered": Outcome.UNRECOVERED.value},
                "families": index, **_shared([student], compare_md), "warnings": result["warnings"]}
    _script(out / "data" / "overview.js", "ladderOverview", overview)
    return out / "index.html"


def write_prim_site(out_dir: str | Path, report: PrimReport, report_md: str, families: list[Family],
                    rollouts: Sequence[Rollout]) -> Path:
    """Write the site of a PRIM report (`prim.analysis.prim_report` and its Markdown, `prim.markdown`) into ``out_dir``;
    returns the path of index.html. The overview carries the report without its families' details and
    lists each problem with PRIM's place beside the ladder's labels; a problem's page has its primitives
    by provenance and each primitive the student wrote, with the student's whole output (from
    ``rollouts``, the student's PRIM rollouts) and the judge's verdicts and evidence."""
    out = _scaffold(out_dir)
    prim = report.model_dump(mode="json")
    details = prim.pop("families")
    places = prim["side_by_side"]["families"]
    outputs = {(r.pid, r.target, r.k): r.response for r in rollouts}
    for pid, d in details.items():
        for w in d["written"]:
            w["response"] = outputs[(pid, w["target"], w["k"])]
    index = []
    for n, fam in enumerate(f for f in families if f.pid in details):
        page = _problem(fam) | details[fam.pid] | places[fam.pid]
        _script(out / "data" / "f" / f"{n}.js", "ladderFamily", n, page)
        index.append({"n": n, "pid": fam.pid, "problem": fam.parent_prompt, "family": details[fam.pid]["family"],
                      **places[fam.pid]})
    shared = _shared([report.student], report_md)
    overview = {"prim": prim, "families": index, "places": [SOLVED, *prim_palette.QUADRANT_COLORS, UNKNOWN], **shared,
                "warnings": report.warnings,
                "colors": shared["colors"] | prim_palette.colors()}
    _script(out / "data" / "overview.js", "ladderOverview", overview)
    return out / "index.html"


async def read_records(store: Store, picked: Mapping[str, tuple[Sequence[Rollout], Sequence[FailedJob]]],
                       ) -> dict[str, StudentRecords]:
    """Each report column's attempts (one group of a student's rollouts and failed jobs: see
    `experiment.selection`), the finish reason of every answered call and the probe runs that made them."""
    runs = {r.id: r for r in await store.runs("probe")}
    out = {}
    for s, (rollouts, failed) in picked.items():
        finish = {r.call_key: call.finish_reason for r in rollouts if (call := await store.get_call(r.call_key))}
        made_by = {r.run_id for r in rollouts} | {j.run_id for j in failed}
        out[s] = StudentRecords(list(rollouts), list(failed), finish, [runs[i] for i in sorted(made_by) if i in runs])
    return out
