"""The human audit of unrecovered families (paper Appendix S, Tables 39-40, Figure 9).

Each rater gets a grader-blind sheet (CSV, the families in an order of the rater's own, drawn from the
seed and the rater's name): the problem, its reference answer, the roadmap with the milestone answers
and the end of the student's first attempt under C1, C2 and C3; no model name and no verdict unless
asked (``show_grader``). A rater writes one of the rubric's five categories per family (and a reason).
Read back, the two raters' labels give the raw agreement and Cohen's kappa; the disagreements are
resolved by the fixed priority rule (the paper's order, favouring data-quality explanations, or the
user's), which gives Table 39. A validation sheet of a second sample is compared with the resolved
labels the same way. With each repair's outcome (the verifier repair of a Verifier_Artifact family,
the leak-safe regeneration of a Decomposition_Incomplete one), the post-repair triage and its bounds
give Table 40 and Figure 9. Against the automated review's labels of the same student (`audit.review`),
the resolved labels give the review's agreement on the verifier-or-format verdict (the paper's 69%,
kappa 0.14).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from .._lazy import lazy_module
from ..domains.math.prompts import description, roadmap_text
from ..ladder.outcomes import FamilyResults, Outcome, parent_outcome
from ..report.markdown import pct, table
from ..report.stats import agreement
from ..schemas.conditions import LADDER
from ..schemas.models import Family, Rollout
from ..schemas.rubric import CATEGORIES, RubricLabel
from ..schemas.sheets import BlindSheet, SheetError, read_key, read_numbered

if TYPE_CHECKING:
    from ..report import plots as _plots
else:  # matplotlib: loaded when Figure 9 is drawn
    _plots = lazy_module("oracleladder.report.plots")

# The rubric's categories in the paper's priority order (schemas.rubric, shared with the LLM review): a
# disagreement resolves to the first of the two labels, favouring data-quality explanations.
VERIFIER_ARTIFACT, BEYOND_CAPABILITY, NOT_STANDALONE, DECOMPOSITION_INCOMPLETE, GENUINE_COMPOSITION = CATEGORIES
# Table 39's rows: the category as the paper names it, its repair action and whether that repair is leak-safe
TABLE39 = {DECOMPOSITION_INCOMPLETE: ("Decomposition incomplete", "Regenerate, leak-safe filter", "Yes"),
           VERIFIER_ARTIFACT: ("Verifier artifact (bad canonical)", "Re-solve + replace canonical", "Yes"),
           GENUINE_COMPOSITION: ("Genuine composition failure", "Keep as-is", "—"),
           BEYOND_CAPABILITY: ("Beyond model capability", "Keep as-is", "—"),
           NOT_STANDALONE: ("Milestone not standalone", "Keep as-is", "—")}
REPAIRED = (VERIFIER_ARTIFACT, DECOMPOSITION_INCOMPLETE)  # the categories a repair is attempted on
REPAIR_OUTCOMES = ("unlocked", "unrecovered", "not_applicable")  # after the repair's fresh oracle pass
TAIL_CHARS = 3_000  # what a rater reads of an attempt: its end, where the answer is
COLUMNS = ("family", "problem", "reference_answer", "roadmap", "attempt_c1", "attempt_c2", "attempt_c3")
GRADER_COLUMNS = ("student", "grader")  # only with show_grader
LABEL_COLUMNS = ("category", "reason")
KEY = "audit.key.json"


class _Validation(BaseModel):
    sheet: str
    families: list[str]


class _Key(BaseModel):
    """What `read_audit` reads of the key file."""

    families: list[str]
    raters: dict[str, str]
    validation: _Validation | None = None


# ------------------------------------------------------------------ statistics


def review_agreement(resolved: Mapping[str, str], review: Mapping[str, RubricLabel | None]) -> dict | None:
    """The automated review against the raters' resolved labels, on the families both cover (the review's
    label read, not unreviewed): the same verifier-or-format verdict (the review's flag, the raters'
    Verifier_Artifact) as raw agreement and Cohen's kappa (the paper's 51 of 74, 69%, kappa 0.14), and the
    raters' Verifier_Artifact families the review flags (its 6 of 20). None: no family in both."""
    both = {p: label for p in resolved if (label := review.get(p)) is not None}
    if not both:
        return None
    flagged = [label.flagged for label in both.values()]
    human = [resolved[p] == VERIFIER_ARTIFACT for p in both]
    return {**agreement(flagged, human), "human_flagged": sum(human),
            "both_flagged": sum(f and h for f, h in zip(flagged, human))}


def resolve(a: str, b: str, priority: Sequence[str] = CATEGORIES) -> str:
    """The resolved label of two raters' labels: theirs where they agree, else the one first in ``priority``."""
    return min(a, b, key=priority.index)


def parse_priority(text: str) -> tuple[str, ...]:
    """A priority order given as a comma list of all five categories (any case)."""
    order = tuple(category(c) for c in text.split(",") if c.strip())
    if sorted(order) != sorted(CATEGORIES):
        raise ValueError(f"a priority names each of {', '.join(CATEGORIES)} once; got '{text}'")
    return order


def category(text: str) -> str:
    """A rater's category as the rubric spells it ("genuine composition" -> Genuine_Composition)."""
    key = text.strip().lower().replace(" ", "_").replace("-", "_")
    found = next((c for c in CATEGORIES if c.lower() == key), None)
    if found is None:
        raise ValueError(f"category '{text.strip()}' is not one of {', '.join(CATEGORIES)}")
    return found


def table39(labels: Mapping[str, str]) -> dict[str, int]:
    """Resolved labels -> the count of each category (Table 39), in the table's order."""
    counts = Counter(labels.values())
    return {c: counts[c] for c in TABLE39}


def triage(labels: Mapping[str, str], repairs: Mapping[str, str]) -> dict:
    """The post-repair triage (Table 40) of resolved labels and each repaired family's outcome
    (``repairs``: pid -> unlocked, unrecovered, not_applicable; a family of REPAIRED categories each).

    Artifact: a verifier repair or a leak-safe regeneration unlocked it, or its verifier artifact was not
    repairable by the pipeline (the raters' reading stands). Composition-related or unresolved: the
    raters' genuine composition failures, the regenerations that left the family unrecovered or could
    not be made leak-safe, the verifier repairs that left it unrecovered. The bounds on composition-
    related failures: the raters' genuine ones (lower), the composition-related or unresolved ones
    (middle), and those with every leak-safe regeneration that unlocked a family counted as suspect
    (pessimistic upper: a regenerated milestone may still leak the answer in part)."""
    outcome = Counter((labels[p], repairs[p]) for p in labels if labels[p] in REPAIRED)
    counts = Counter(labels.values())
    va, di = VERIFIER_ARTIFACT, DECOMPOSITION_INCOMPLETE
    rows = {
        "verifier_repaired": outcome[va, "unlocked"],
        "decomposition_repaired": outcome[di, "unlocked"],
        "verifier_not_applicable": outcome[va, "not_applicable"],
        "genuine_composition": counts[GENUINE_COMPOSITION],
        "decomposition_unrecovered": outcome[di, "unrecovered"] + outcome[di, "not_applicable"],
        "verifier_unrecovered": outcome[va, "unrecovered"],
        "beyond_capability": counts[BEYOND_CAPABILITY],
        "not_standalone": counts[NOT_STANDALONE],
    }
    artifact = rows["verifier_repaired"] + rows["decomposition_repaired"] + rows["verifier_not_applicable"]
    composition = rows["genuine_composition"] + rows["decomposition_unrecovered"] + rows["verifier_unrecovered"]
    return {**rows, "artifact": artifact, "composition_or_unresolved": composition, "total": len(labels),
            "verifier_attempted": outcome[va, "unlocked"] + outcome[va, "unrecovered"],
            "decomposition_attempted": outcome[di, "unlocked"] + outcome[di, "unrecovered"],
            "bounds": {"lower": rows["genuine_composition"], "middle": composition,
                       "upper": composition + rows["decomposition_repaired"]}}


# ------------------------------------------------------------------ sheets


def unrecovered(results: Iterable[FamilyResults]) -> list[str]:
    """The pids no parent probe recovered (C1, C2, C3 all without a correct attempt)."""
    return [r.pid for r in results if parent_outcome(r.ladder) is Outcome.UNRECOVERED]


def roadmap(family: Family) -> str:
    """The roadmap with the milestone answers, as C3 shows it to the student."""
    tested = [m for _, m in family.tested()]
    return roadmap_text([description(m) for m in tested], [m.answer for m in tested])


def _first(rollouts: Sequence[Rollout], target: str) -> Rollout | None:
    return min((r for r in rollouts if r.target == target), key=lambda r: r.k, default=None)


def _grader_note(family: Family, rollouts: Sequence[Rollout]) -> str:
    """What the grader said: each rung's first attempt's verdict and extracted answer, and the Stage 0
    solves per milestone."""
    parts = []
    for target in LADDER.parent_probes:
        r = _first(rollouts, target)
        if r is not None:
            parts.append(f"{target.split('_')[0]}: {r.verdict.label.value} ({r.verdict.reason}), "
                         f"extracted {r.verdict.extracted!r}")
    for n, (i, _) in enumerate(family.tested(), 1):
        mine = [r for r in rollouts if r.target == f"m{i}" and r.verdict.graded]
        if mine:
            parts.append(f"milestone {n}: {sum(r.verdict.accepted for r in mine)}/{len(mine)} alone")
    return "; ".join(parts)


def sheet_rows(families: Sequence[Family], rollouts: Sequence[Rollout], student: str,
               show_grader: bool) -> list[list[str]]:
    """One row per family: what a rater reads, and empty label columns."""
    by_pid: dict[str, list[Rollout]] = {}
    for r in rollouts:
        by_pid.setdefault(r.pid, []).append(r)
    rows = []
    for f in families:
        mine = by_pid.get(f.pid, [])
        attempts = [(a.response[-TAIL_CHARS:] if (a := _first(mine, t)) else "") for t in LADDER.parent_probes]
        grader = [student, _grader_note(f, mine)] if show_grader else []
        rows.append([f.pid, f.parent_prompt, f.parent_answer, roadmap(f), *attempts, *grader,
                     *([""] * len(LABEL_COLUMNS))])
    return rows


def write_sheets(folder: Path, families: Sequence[Family], rollouts: Sequence[Rollout], *, raters: Sequence[str],
                 validation: int, seed: int, show_grader: bool, meta: dict) -> dict:
    """A sheet per rater (every family, in the rater's own seeded order), a validation sheet of
    ``validation`` of them (a seeded second sample; none for 0) and the key; returns the key."""
    if (folder / KEY).exists():  # its sheets may hold a person's labels
        raise FileExistsError(f"{folder / KEY} exists; an audit's sheets are never overwritten: give another folder")
    folder.mkdir(parents=True, exist_ok=True)
    header = (*COLUMNS, *(GRADER_COLUMNS if show_grader else ()), *LABEL_COLUMNS)
    rows = {row[0]: row for row in sheet_rows(families, rollouts, meta.get("student", ""), show_grader)}
    pids = sorted(rows)
    checked = sorted(random.Random(f"{seed}:validation").sample(pids, min(validation, len(pids)))) if validation else []
    sheets = {name: f"rater-{name}.csv" for name in raters}
    for name, file, order in [*((name, file, pids) for name, file in sheets.items()),
                              *([("validation", "validation.csv", checked)] if checked else [])]:
        shuffled = random.Random(f"{seed}:{name}").sample(order, len(order))
        _blind(folder, file).write(header, (rows[p] for p in shuffled), None)  # one key, the folder's
    key = {**meta, "seed": seed, "show_grader": show_grader, "families": pids, "raters": sheets,
           "validation": {"sheet": "validation.csv", "families": checked} if checked else None}
    (folder / KEY).write_text(json.dumps(key, indent=2))
    return key


def _blind(folder: Path, sheet: str) -> BlindSheet:
    return BlindSheet(folder / sheet, "family", "category", folder / KEY)


def read_labels(folder: Path, sheet: str, families: Sequence[str]) -> dict[str, str]:
    """A filled-in sheet -> pid -> category; a SheetError naming file and row (the spreadsheet's row
    number, the header being row 1) for a family not in the audit, a family twice, a missing or unknown
    category, and naming the file and family for a family without a row."""
    return {pid: label for pid, (label, _) in _blind(folder, sheet).labels(families, category, every=True).items()}


def read_repairs(path: Path, labels: Mapping[str, str]) -> dict[str, str]:
    """A repairs file (CSV: family, outcome) -> pid -> outcome, one for each family whose resolved
    category has a repair (REPAIRED); a SheetError naming file and row otherwise."""
    out: dict[str, str] = {}
    for n, row in read_numbered(path, ("family", "outcome")):
        pid, outcome = (row.get("family") or "").strip(), (row.get("outcome") or "").strip().lower()
        if pid not in labels:
            raise SheetError(f"{path}:{n}: family '{pid}' is not in this audit")
        if labels[pid] not in REPAIRED:
            raise SheetError(f"{path}:{n}: family '{pid}' is {labels[pid]}, kept as-is: it has no repair")
        if outcome not in REPAIR_OUTCOMES:
            raise SheetError(f"{path}:{n}: outcome '{outcome}' is not one of {', '.join(REPAIR_OUTCOMES)}")
        out[pid] = outcome
    missing = [p for p, c in labels.items() if c in REPAIRED and p not in out]
    if missing:
        raise SheetError(f"{path}: family '{missing[0]}' ({labels[missing[0]]}) has no repair outcome"
                         + (f" ({len(missing) - 1} more)" if missing[1:] else ""))
    return out


def read_audit(folder: Path, *, priority: Sequence[str] = CATEGORIES, repairs: Path | None = None) -> dict:
    """The raters' sheets of ``folder`` (and its validation sheet, and ``repairs``) -> agreement and
    kappa, the resolved labels and Table 39, the validation pass, and with repairs Table 40."""
    key = read_key(folder / KEY, _Key)
    pids = key["families"]
    by_rater = {name: read_labels(folder, file, pids) for name, file in key["raters"].items()}
    if len(by_rater) != 2:
        raise SheetError(f"{folder / KEY}: an audit has two raters; this one has {len(by_rater)}")
    (a, la), (b, lb) = by_rater.items()
    resolved = {p: resolve(la[p], lb[p], priority) for p in pids}
    disagreements = Counter(resolved[p] for p in pids if la[p] != lb[p])
    out = {"student": key.get("student"), "source": key.get("source"), "families": len(pids),
           "raters": [a, b], "priority": list(priority),
           "agreement": agreement([la[p] for p in pids], [lb[p] for p in pids]),
           "resolved_disagreements": {c: disagreements[c] for c in CATEGORIES if disagreements[c]},
           "table39": table39(resolved), "labels": {p: {a: la[p], b: lb[p], "resolved": resolved[p]} for p in pids},
           "validation": None, "triage": None}
    if key.get("validation"):
        checked = key["validation"]["families"]
        second = read_labels(folder, key["validation"]["sheet"], checked)
        out["validation"] = {**agreement([resolved[p] for p in checked], [second[p] for p in checked]),
                             "primary": table39(resolved), "validation": table39(second),
                             "primary_n": len(pids), "validation_n": len(checked)}
    if repairs is not None:
        out["triage"] = triage(resolved, read_repairs(repairs, resolved))
    return out


# ------------------------------------------------------------------ tables and Figure 9


def markdown(result: dict) -> list[str]:
    """Tables 39 and 40 with the agreement statistics and the bounds."""
    ag, n = result["agreement"], result["families"]
    a, b = result["raters"]
    resolved = ", ".join(f"{k} to {c}" for c, k in result["resolved_disagreements"].items()) or "none"
    rows = [[TABLE39[c][0], k, pct(k, n), *TABLE39[c][1:]] for c, k in result["table39"].items()]
    L = [f"## Human audit of {n} unrecovered families: {result['student']} (Table 39)", "",
         f"Raters {a} and {b} agree on {ag['agree']} of {ag['n']} ({pct(ag['raw'])}), Cohen's kappa "
         f"{ag['kappa']:.2f}; the priority rule ({' > '.join(result['priority'])}) resolves the other "
         f"{ag['n'] - ag['agree']}: {resolved}.", "",
         *table(["Rater category", "Count", "%", "Repair action", "Leak-safe?"], rows + [["Total", n, pct(1.0), "", ""]]),
         ""]
    v = result["validation"]
    if v:
        shares = "; ".join(f"{c} {pct(v['validation'][c], v['validation_n'])} vs {pct(v['primary'][c], v['primary_n'])}"
                           for c in CATEGORIES)
        L += [f"Validation pass on {v['n']} of the families: {v['agree']} agree with the resolved labels "
              f"({pct(v['raw'])}), Cohen's kappa {v['kappa']:.2f}. Its shares against the primary labels': "
              f"{shares}.", ""]
    if "review" in result:  # read against the automated review (`--review`)
        r = result["review"]
        line = "The automated review (`ladder audit review`) labeled none of these families." if r is None else (
            f"Against the automated review: on the {r['n']} families both cover, the same verifier or format verdict "
            f"for {r['agree']} ({pct(r['raw'])}, Cohen's kappa {r['kappa']:.2f}); the review flags "
            f"{r['both_flagged']} of the {r['human_flagged']} families the raters resolved to {VERIFIER_ARTIFACT}.")
        L += [line, ""]
    t = result["triage"]
    if t:
        L += triage_markdown(t)
    return L


def triage_markdown(t: dict) -> list[str]:
    rows = [["Artifact (verifier-repaired or leak-safe decomposition-repaired)", t["artifact"]],
            [f"  verifier-repair fixes ({t['verifier_repaired']}/{t['verifier_attempted']} attempted verifier-artifact "
             "families unlocked)", t["verifier_repaired"]],
            [f"  leak-safe decomposition repairs ({t['decomposition_repaired']}/{t['decomposition_attempted']} attempted "
             "families unlocked)", t["decomposition_repaired"]],
            ["  verifier-artifact whose repair was not pipeline-applicable", t["verifier_not_applicable"]],
            ["Composition-related or unresolved after repair", t["composition_or_unresolved"]],
            ["  rater-confirmed composition failures, kept as-is", t["genuine_composition"]],
            ["  still unrecovered after leak-safe decomposition repair", t["decomposition_unrecovered"]],
            ["  still unrecovered after verifier-repair", t["verifier_unrecovered"]],
            ["Beyond capability (kept as-is)", t["beyond_capability"]],
            ["Not standalone (kept as-is)", t["not_standalone"]],
            ["Total", t["total"]]]
    bounds, n = t["bounds"], t["total"]
    return [f"## Post-repair triage of the {n} audited families (Table 40)", "",
            *table(["Final triage category", "Count"], rows), "",
            f"Composition-related failures: at least {bounds['lower']} of {n} ({pct(bounds['lower'], n)}, the raters' "
            f"genuine ones), {bounds['middle']} ({pct(bounds['middle'], n)}) after repair, and at most "
            f"{t['composition_or_unresolved']}+{t['decomposition_repaired']}={bounds['upper']} "
            f"({pct(bounds['upper'], n)}, the pessimistic upper bound: every leak-safe decomposition repair "
            "counted as suspect).", ""]


def write_figure(t: dict, path: Path) -> None:
    """Figure 9: the triage's mutually exclusive segments as one stacked bar, the bounds marked."""
    _plots.triage_figure(t)[0].savefig(path, dpi=150, bbox_inches="tight")
