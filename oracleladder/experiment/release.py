"""The paper's audit and comparator tables rebuilt from the release's own files (its ``data/`` folder):
Table 17 (the MATH hard-100 score beside each model's diagnostic fingerprint), Tables 39 and 40 (the
two raters' audit, its validation pass and the post-repair triage) and Table 41 (the fingerprint of a
fresh oracle pass after repair, per rater category, beside the original triage).

Each file is read through its record model (`schemas.release`, `panels.PanelRecord`, `schemas.Family`):
a record that does not fit, or a family one file has and another lacks, is one `InputError` naming the
file (and line). The bookkeeping is the human audit's (`audit.human`): the same agreement, priority
rule, Table 39 and triage, so a release's files and a store's sheets give their tables one way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..audit import human as hum
from ..ladder.outcomes import Outcome, parent_outcome
from ..report.markdown import table
from ..report.stats import agreement
from ..report.tables import NOT_RUN
from ..schemas.jsonl import InputError, read_jsonl, read_unique
from ..schemas.models import Family
from ..schemas.release import ComparatorRecord, ConsensusLabel, RaterLabel
from .panels import PanelRecord

CONSENSUS, RATER_A, RATER_B = "audit_consensus.jsonl", "audit_rater_a.jsonl", "audit_rater_b.jsonl"
VALIDATION = "human_validation.jsonl"
LEAK_SAFE = "oracle_leak_safe_repair.jsonl"  # the fresh pass on the leak-safe regenerations
RERUN = "oracle_repaired.jsonl"  # the fresh pass on the rest (its decomposition repairs are the superseded leaky ones)
VERIFIER_REPAIRED = "repaired_verifier.jsonl"  # the families whose reference answer the verifier repair replaced
COMPARATOR = "math_hard100_panel*.jsonl"
ORACLE_PANEL = "oracle_panel_16k"
FINGERPRINT = (Outcome.DIRECT, Outcome.ROADMAP_NEEDED, Outcome.ANSWERS_NEEDED, Outcome.UNRECOVERED)


# ------------------------------------------------------------------ reading


def labels(path: Path, model: type[RaterLabel]) -> dict[str, RaterLabel]:
    """A label file by pid (a family labeled twice is an error naming both lines)."""
    return {r.pid: r for r in read_unique(path, model, hint="remove one")}


def fingerprint(records: Iterable[PanelRecord]) -> dict[str, Outcome]:
    """Each family's parent-probe outcome (Algorithm 3, tau 1) from its C1-C3 counts; controls ignored."""
    ladders: dict[str, dict[str, list[bool]]] = {}
    for r in records:
        if r.condition is not None and r.condition in hum.LADDER:
            ladders.setdefault(r.pid, {})[r.condition] = [True] * r.n_correct + [False] * (r.k - r.n_correct)
    return {pid: parent_outcome(ladder) for pid, ladder in ladders.items()}


def _same_families(path: Path, found: Iterable[str], expected: Sequence[str], of: Path) -> None:
    found = set(found)
    missing = [p for p in expected if p not in found]
    extra = sorted(found - set(expected))
    if missing:
        raise InputError(f"{path}: family '{missing[0]}' of {of.name} has no label"
                         + (f" ({len(missing) - 1} more)" if missing[1:] else ""))
    if extra:
        raise InputError(f"{path}: family '{extra[0]}' is not in {of.name}")


# ------------------------------------------------------------------ Table 17


def comparator_scores(records: Sequence[ComparatorRecord]) -> dict[str, dict]:
    """Per model: the mean single-attempt score (correct attempts / attempts) and pass@k (the share of
    problems with at least one correct attempt), as the paper's Table 17 defines them."""
    by_model: dict[str, list[ComparatorRecord]] = {}
    for r in records:
        by_model.setdefault(r.model, []).append(r)
    return {m: {"problems": len(rs), "k": max(r.k for r in rs),
                "score": sum(r.n_correct for r in rs) / sum(r.k for r in rs),
                "pass_at_k": sum(r.n_correct > 0 for r in rs) / len(rs)} for m, rs in by_model.items()}


def table17(comparators: Mapping[str, Sequence[ComparatorRecord]], panel: Sequence[PanelRecord]) -> list[dict]:
    """One row per model: its score and pass@k on each comparator file (by name), and its fingerprint on
    the oracle panel's families (Direct, Roadmap, Answers, Unrecovered, and any probe = the first three)."""
    scores = {name: comparator_scores(records) for name, records in comparators.items()}
    by_model: dict[str, list[PanelRecord]] = {}
    for r in panel:
        by_model.setdefault(r.model, []).append(r)
    models = list(dict.fromkeys([*by_model, *(m for s in scores.values() for m in s)]))
    rows = []
    for m in models:
        outcomes = Counter(fingerprint(by_model[m]).values()) if m in by_model else None
        counts = {o.value: outcomes[o] for o in FINGERPRINT} if outcomes is not None else None
        rows.append({"model": m, "comparator": {name: s.get(m) for name, s in scores.items()},
                     "fingerprint": counts,
                     "any_probe": None if counts is None else sum(counts[o.value] for o in FINGERPRINT[:3])})
    return rows


# ------------------------------------------------------------------ Tables 39-41


def audit(consensus: Path, rater_a: Path, rater_b: Path, validation: Path | None) -> dict:
    """The two raters' labels against the consensus file: agreement and kappa, the disagreements and
    what they resolved to (Table 39's counts are the consensus file's), the families where the consensus
    departs from the paper's priority rule, and the validation pass against the consensus; in the shape
    of `audit.human.read_audit`'s result."""
    resolved = {p: r.category for p, r in labels(consensus, ConsensusLabel).items()}
    pids = list(resolved)
    la, lb = labels(rater_a, RaterLabel), labels(rater_b, RaterLabel)
    _same_families(rater_a, la, pids, consensus)
    _same_families(rater_b, lb, pids, consensus)
    a, b = [la[p].category for p in pids], [lb[p].category for p in pids]
    out = {"student": None, "source": None, "families": len(pids), "raters": ["A", "B"], "priority": list(hum.CATEGORIES),
           "agreement": agreement(a, b),
           "resolved_disagreements": dict(Counter(resolved[p] for p, x, y in zip(pids, a, b) if x != y)),
           "priority_exceptions": [p for p, x, y in zip(pids, a, b) if hum.resolve(x, y) != resolved[p]],
           "table39": hum.table39(resolved),
           "labels": {p: {"A": x, "B": y, "resolved": resolved[p]} for p, x, y in zip(pids, a, b)},
           "validation": None, "triage": None}
    if validation is not None:
        second = {p: r.category for p, r in labels(validation, RaterLabel).items()}
        unknown = [p for p in second if p not in resolved]
        if unknown:
            raise InputError(f"{validation}: family '{unknown[0]}' is not in {consensus.name}")
        checked = list(second)
        out["validation"] = {**agreement([resolved[p] for p in checked], [second[p] for p in checked]),
                             "primary": hum.table39(resolved), "validation": hum.table39(second),
                             "primary_n": len(pids), "validation_n": len(checked)}
    return out


def repair_outcomes(resolved: Mapping[str, str], verifier_repaired: Iterable[str], rerun: Mapping[str, Outcome],
                    leak_safe: Mapping[str, Outcome]) -> dict[str, str]:
    """Each repaired category's family -> unlocked, unrecovered or not_applicable (`audit.human.triage`'s
    outcomes): a Verifier_Artifact family with a verifier repair by its fresh pass (``rerun``), without one
    not applicable; a Decomposition_Incomplete family regenerated leak-safe by its fresh pass
    (``leak_safe``), otherwise not applicable (no regeneration passed the leak-safe filter)."""
    repaired = set(verifier_repaired)
    out = {}
    for p, c in resolved.items():
        if c == hum.VERIFIER_ARTIFACT:
            passed = rerun.get(p) if p in repaired else None
            if p in repaired and passed is None:
                raise InputError(f"{RERUN}: the verifier-repaired family '{p}' has no fresh oracle pass")
        elif c == hum.DECOMPOSITION_INCOMPLETE:
            passed = leak_safe.get(p)
        else:
            continue
        out[p] = "not_applicable" if passed is None else ("unrecovered" if passed is Outcome.UNRECOVERED else "unlocked")
    return out


def table41(resolved: Mapping[str, str], verifier_repaired: Iterable[str], rerun: Mapping[str, Outcome],
            leak_safe: Mapping[str, Outcome], original: Mapping[str, Outcome] | None) -> list[dict]:
    """Per rater category, the fingerprint of the fresh oracle pass after repair (the leak-safe
    regenerations, the verifier repairs, the kept categories re-run), each row beside the original triage
    of the same families (their outcome in the student's own panel; None without it); then, for
    transparency, the superseded natural repairs of decomposition-incomplete families (``rerun``'s)."""
    repaired = set(verifier_repaired)
    of = Counter(resolved.values())
    rows_def = [("Leak-safe decomposition repair", hum.DECOMPOSITION_INCOMPLETE, leak_safe, None),
                ("Verifier repair", hum.VERIFIER_ARTIFACT, rerun, repaired),
                ("Rater-confirmed genuine, re-run", hum.GENUINE_COMPOSITION, rerun, None),
                ("Kept beyond capability, re-run", hum.BEYOND_CAPABILITY, rerun, None),
                ("Kept not standalone, re-run", hum.NOT_STANDALONE, rerun, None),
                ("Natural repair, not leak-safe (superseded)", hum.DECOMPOSITION_INCOMPLETE, rerun, None)]
    rows = []
    for name, category, passes, only in rows_def:
        pids = [p for p, c in resolved.items() if c == category and p in passes and (only is None or p in only)]
        if not pids:
            continue
        after = Counter(passes[p] for p in pids)
        before = None if original is None else Counter(original[p] for p in pids if p in original)
        rows.append({"source": name, "category": category, "n": len(pids), "of": of[category],
                     "after": {o.value: after[o] for o in FINGERPRINT},
                     "original": None if before is None else {o.value: before[o] for o in FINGERPRINT}})
    return rows


def read_release(folder: Path, student: str) -> dict:
    """The tables the release folder's files give (a table whose files are absent is None): Table 17
    from ``math_hard100_panel*.jsonl`` and ``oracle_panel_16k/``; Tables 39-41 from the audit files,
    the repairs' fresh oracle passes and ``student``'s panel (the audited model's: its original triage)."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder (give the release's data/ folder)")
    panel_files = sorted((folder / ORACLE_PANEL).glob("*.jsonl"))
    panel = [r for f in panel_files for r in read_jsonl(f, PanelRecord)]
    comparators = {f.stem: list(read_jsonl(f, ComparatorRecord)) for f in sorted(folder.glob(COMPARATOR))}
    out: dict = {"folder": str(folder), "student": student,
                 "table17": table17(comparators, panel) if comparators else None, "audit": None}
    if not (folder / CONSENSUS).is_file():
        return out
    result = audit(folder / CONSENSUS, folder / RATER_A, folder / RATER_B,
                   folder / VALIDATION if (folder / VALIDATION).is_file() else None)
    result["student"] = student
    resolved = {p: la["resolved"] for p, la in result["labels"].items()}
    mine = [r for r in panel if r.model == student]
    original = fingerprint(mine) if mine else None
    if (folder / LEAK_SAFE).is_file() and (folder / RERUN).is_file() and (folder / VERIFIER_REPAIRED).is_file():
        leak_safe = fingerprint(read_jsonl(folder / LEAK_SAFE, PanelRecord))
        rerun = fingerprint(read_jsonl(folder / RERUN, PanelRecord))
        verifier = [f.pid for f in read_unique(folder / VERIFIER_REPAIRED, Family, hint="remove one")]
        result["triage"] = hum.triage(resolved, repair_outcomes(resolved, verifier, rerun, leak_safe))
        result["table41"] = table41(resolved, verifier, rerun, leak_safe, original)
    out["audit"] = result
    return out


# ------------------------------------------------------------------ Markdown


def _score_cells(s: dict | None) -> tuple[str, str]:
    return (f"{s['score']:.2f}", f"{s['pass_at_k']:.2f}") if s else (NOT_RUN, NOT_RUN)


def markdown(result: dict) -> list[str]:
    """Table 17, then Tables 39-41 (those the folder's files give), as `ladder audit release` prints them."""
    L: list[str] = []
    t17 = result["table17"]
    if t17:
        names = list(t17[0]["comparator"])
        head = [f"{h} ({n})" for n in names for h in ("Score", "pass@k")]
        rows = []
        for r in t17:
            cells = [x for n in names for x in _score_cells(r["comparator"][n])]
            fp = r["fingerprint"]
            rows.append([r["model"], *cells, *([fp[o.value] for o in FINGERPRINT] if fp else [NOT_RUN] * 4),
                         NOT_RUN if r["any_probe"] is None else r["any_probe"]])
        L += ["## External comparator and diagnostic fingerprint (Table 17)", "",
              *table(["Model", *head, "Direct", "Roadmap", "Answers", "Unrec.", "Any probe"], rows), "",
              "Score: correct attempts / attempts on the comparator's problems; pass@k: the share of problems with "
              "at least one correct attempt. Fingerprint: the oracle panel's families (Any probe = Direct + "
              "Roadmap + Answers).", ""]
    a = result["audit"]
    if a is None:
        return L or [f"{result['folder']}: none of the release's comparator or audit files is here"]
    L += hum.markdown(a)
    if a["priority_exceptions"]:
        L += [f"The consensus departs from the priority rule on {len(a['priority_exceptions'])} families "
              f"({', '.join(a['priority_exceptions'][:5])}{', ...' if a['priority_exceptions'][5:] else ''}).", ""]
    if a.get("table41"):
        rows = [[f"{r['source']} ({r['n']}/{r['of']})", r["n"],
                 *(r["after"][o.value] for o in FINGERPRINT),
                 NOT_RUN if r["original"] is None else r["original"][Outcome.UNRECOVERED.value]] for r in a["table41"]]
        L += [f"## Oracle re-evaluation after repair, per rater category (Table 41): {a['student']}", "",
              *table(["Source", "n", "Direct (C1)", "Roadmap-Needed", "Answers-Needed", "Unrecovered",
                      "Originally unrecovered"], rows), "",
              f"Each row is a fresh oracle pass of its families (n of the category's); the last column is how many "
              f"of them the original triage ({a['student']}'s own panel) has Unrecovered.", ""]
    return L
