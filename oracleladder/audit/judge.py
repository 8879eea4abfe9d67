"""The judge audit of the grader in both directions (paper Appendix V, Tables 45-47).

A seeded sample of the graded rollouts, stratified by the verifier's verdict (accepted, or its
rejection reason), goes to an LLM judge with the reference answer, the grading note and the end of
the response (prompt ``prompts/judge.txt``, cached like every call). The paired grades give Table 46
(judge accept/reject x cascade accept/reject) and its breakdown by the answer's schema (Table 45),
with the rule-of-three bound (95%: 3/n) where a cell is empty. The rejected cases the judge accepts
are written to a grader-blind sheet (CSV: case, end of the response, reference answer, note, and a
label for a person to fill in); which grader said what is kept in a separate key file. The filled-in
sheet reads back into the result table by rejection reason (Table 47), projected to every rejected
rollout of the run with the sampling weights (stratum size / rollouts judged in it).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, model_validator

from .._lazy import lazy_module
from ..clients import Client
from ..clients.asking import ask_json
from ..prompts import load
from ..report.markdown import num, pct, table
from ..runtime import gather_or_cancel
from ..schemas.models import Family, Rollout
from ..schemas.sheets import BlindSheet
from ..schemas.types import GradeStatus

if TYPE_CHECKING:
    from ..domains.math import MathDomain  # the judge reads a text gold: the math domain's
    from ..verify import parse as _parse
else:  # SymPy behind it: loaded when a schema is inferred, not by `ladder --help`
    _parse = lazy_module("oracleladder.verify.parse")

TAIL_CHARS = 12_000  # what the judge reads of a response: the paper's last 12,000 characters
SHEET_TAIL_CHARS = 3_000  # what the person reads: the end of the response, where its answer is
SHEET_COLUMNS = ("case", "response_tail", "reference_answer", "note", "label", "comment")
# a person's label -> the result it counts in ("undecidable": the response ends before any answer)
LABELS = {"correct": "verifier_false_negatives", "malformed_reference": "malformed_references",
          "incorrect": "judge_over_acceptances", "undecidable": "undecidable"}
RESULTS = ("verifier_false_negatives", "malformed_references", "judge_over_acceptances")
VERDICT_FORMAT = '{"verdict": "ACCEPT" or "NOT_ACCEPT", "reason": "one sentence"}'  # as the prompt asks
ACCEPTED = "accepted"  # the stratum of the rollouts the verifier accepted
# Table 46's cells: (cascade accepts, judge accepts) -> name
CELLS = {(True, True): "both_accept", (False, False): "both_reject",
         (False, True): "judge_accepts_cascade_rejects", (True, False): "cascade_accepts_judge_rejects"}


def stratum(rollout: Rollout) -> str:
    """ACCEPTED, or the verifier's rejection reason without its detail: "no boxed", "parse error", ..."""
    return ACCEPTED if rollout.verdict.accepted else rollout.verdict.reason.split(":")[0].strip()


def graded(rollouts: Sequence[Rollout]) -> list[Rollout]:
    """The rollouts the verifier graded (ungraded ones carry no verdict)."""
    return [r for r in rollouts if r.verdict.status is not GradeStatus.UNGRADED]


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """``n`` draws over strata in proportion to their sizes (largest remainder), each non-empty
    stratum getting at least one while ``n`` allows; never more than a stratum holds."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    quota = {s: n * k / total for s, k in sizes.items()}
    out = {s: min(k, max(int(quota[s]), 1 if n >= len(sizes) else 0)) for s, k in sizes.items()}
    for s in sorted(sizes, key=lambda s: (out[s] - quota[s], s)):
        if sum(out.values()) >= n:
            break
        if out[s] < sizes[s]:
            out[s] += 1
    return out


def draw(rollouts: Sequence[Rollout], n: int, seed: int) -> tuple[dict[str, int], list[Rollout]]:
    """The strata sizes of the graded ``rollouts`` and a seeded stratified sample of ``n``."""
    strata: dict[str, list[Rollout]] = {}
    for r in sorted(graded(rollouts), key=lambda r: (r.pid, r.target, r.k, r.call_key)):
        strata.setdefault(stratum(r), []).append(r)
    sizes = {s: len(rs) for s, rs in sorted(strata.items())}
    rng = random.Random(seed)
    take = allocate(sizes, n)
    return sizes, [r for s in sizes for r in rng.sample(strata[s], take[s])]


def _note(family: Family, target: str) -> str:
    return family.milestones[int(target[1:])].note if target.startswith("m") else family.parent_note


def answer_schema(domain: MathDomain, family: Family, target: str) -> str:
    """The schema of a rollout's gold answer: a compiled milestone's own, else inferred from its form."""
    own = family.milestones[int(target[1:])].answer_schema if target.startswith("m") else None
    return (own or _parse.infer_schema(domain.target_gold(family, target) or "")).value


def judge_messages(domain: MathDomain, family: Family, rollout: Rollout) -> list[dict[str, str]]:
    prompt = load("judge").render(reference=domain.target_gold(family, rollout.target),
                                  note=_note(family, rollout.target), response=rollout.response[-TAIL_CHARS:])
    return [{"role": "user", "content": prompt}]


class JudgeVerdict(BaseModel):
    """The judge's reply (prompts/judge.txt): its verdict read strictly, its reason as given."""

    verdict: Literal["ACCEPT", "NOT_ACCEPT"]
    reason: Any = ""


async def ask_judge(client: Client, domain: MathDomain, families: dict[str, Family], sample: Sequence[Rollout],
                    max_tokens: int) -> list[tuple[str, str | None]]:
    """Per sampled rollout: the judge's verdict (ACCEPT, NOT_ACCEPT, "unreadable" when its reply is not
    the JSON asked for after its re-ask, or "failed" when its call failed for good, `clients.asking`) and
    the first call's key."""

    async def one(r: Rollout) -> tuple[str, str | None]:
        asked = await ask_json(client, judge_messages(domain, families[r.pid], r), JudgeVerdict,
                               max_tokens=max_tokens, prompted=VERDICT_FORMAT)
        verdict = "failed" if asked.failed else "unreadable" if asked.reply is None else asked.reply.verdict
        return verdict, asked.keys[0]

    return await gather_or_cancel(*(one(r) for r in sample))


def write_sheet(sheet: Path, key: Path, domain: MathDomain, families: dict[str, Family], sizes: dict[str, int],
                sample: Sequence[Rollout], verdicts: Sequence[tuple[str, str | None]], meta: dict,
                seed: int) -> dict:
    """The blind sheet of the rejected cases the judge accepts (shuffled, numbered) and its key file
    (each judged rollout's stratum, answer schema and judge verdict too); returns the key."""
    accepted = [(r, call) for r, (v, call) in zip(sample, verdicts) if v == "ACCEPT" and not r.verdict.accepted]
    random.Random(seed).shuffle(accepted)
    cases, rows = {}, []
    for i, (r, call) in enumerate(accepted, 1):
        case = f"case-{i:03d}"
        family = families[r.pid]
        rows.append([case, r.response[-SHEET_TAIL_CHARS:], domain.target_gold(family, r.target),
                     _note(family, r.target), "", ""])
        cases[case] = {"pid": r.pid, "target": r.target, "k": r.k, "rollout_call": r.call_key,
                       "stratum": stratum(r), "verifier": r.verdict.reason, "judge": "ACCEPT",
                       "judge_call": call}
    judged: dict[str, Counter[str]] = {s: Counter() for s in sizes}
    for r, (v, _) in zip(sample, verdicts):
        judged[stratum(r)][v] += 1
    written = {**meta, "seed": seed, "strata": {
        s: {"rollouts": sizes[s], "sampled": sum(judged[s].values()), **{v: judged[s][v] for v in
            ("ACCEPT", "NOT_ACCEPT", "unreadable", "failed")}} for s in sizes}, "cases": cases,
        "judged": [[stratum(r), answer_schema(domain, families[r.pid], r.target), v]
                   for r, (v, _) in zip(sample, verdicts)]}
    BlindSheet(sheet, "case", "label", key).write(SHEET_COLUMNS, rows, written)
    return written


def _cells(judged: Sequence[tuple[str, str, str]], weight: dict[str, float]) -> dict:
    """Table 46's four cells over ``judged`` (stratum, schema, verdict; read verdicts only): counts,
    shares of n, the rule-of-three bound (3/n, 95%) of each empty cell, and each cell projected to the
    run (each rollout weighing its stratum's size / rollouts judged in it)."""
    n = len(judged)
    found = Counter(CELLS[s == ACCEPTED, v == "ACCEPT"] for s, _, v in judged)
    return {"n": n, **{c: found[c] for c in CELLS.values()},
            "share": {c: found[c] / n for c in CELLS.values()} if n else {},
            "bound": {c: 3 / n for c in CELLS.values() if n and not found[c]},
            "projected": {c: sum(weight[s] for s, _, v in judged if CELLS[s == ACCEPTED, v == "ACCEPT"] == c)
                          for c in CELLS.values()}}


def paired(key: dict) -> dict:
    """The paired grades of a key file (Table 46, ``all``) and by answer schema (Table 45,
    ``schemas``); judge verdicts that are unreadable or failed are in no cell, counted apart."""
    judged = [(s, schema, v) for s, schema, v in key["judged"] if v in ("ACCEPT", "NOT_ACCEPT")]
    per = Counter(s for s, _, _ in judged)
    weight = {s: key["strata"][s]["rollouts"] / k for s, k in per.items()}
    return {"graded": sum(st["rollouts"] for st in key["strata"].values()),
            "unjudged": len(key["judged"]) - len(judged), "all": _cells(judged, weight),
            "schemas": {schema: _cells([j for j in judged if j[1] == schema], weight)
                        for schema in sorted({j[1] for j in judged})}}


class _Stratum(BaseModel):
    ACCEPT: int
    NOT_ACCEPT: int
    sampled: int
    rollouts: int | None = None
    rejected: int | None = None  # a key written before accepted rollouts were sampled

    @model_validator(mode="after")
    def _sized(self) -> _Stratum:
        if self.rollouts is None and self.rejected is None:
            raise ValueError("a stratum has no size (rollouts)")
        return self


class _Case(BaseModel):
    stratum: str


class _Key(BaseModel):
    """What `read_sheet` reads of the key file."""

    cases: dict[str, _Case]
    strata: dict[str, _Stratum]
    judged: list[tuple[str, str, str]] | None = None


def _label(text: str) -> str:
    label = text.lower()
    if label not in LABELS:
        raise ValueError(f"label '{label}' is not one of {', '.join(LABELS)} (or blank)")
    return label


def read_sheet(sheet: Path, key: Path) -> dict:
    """The filled-in sheet and its key file -> the result table by rejection reason, with each
    count projected to every rejected rollout: stratum size / rollouts judged x judge accepts x
    the count's share of the adjudicated cases (undecidable and unfilled ones left out)."""
    blind = BlindSheet(sheet, "case", "label", key)
    meta = blind.read_key(_Key)
    labels = {case: label for case, (label, _) in blind.labels(meta["cases"], _label, every=False).items()}
    table = {}
    for s, st in meta["strata"].items():
        if s == ACCEPTED:
            continue
        found = Counter(LABELS.get(labels.get(c, ""), "unfilled")
                        for c, case in meta["cases"].items() if case["stratum"] == s)
        adjudicated = sum(found[k] for k in RESULTS)
        judged = st["ACCEPT"] + st["NOT_ACCEPT"]
        size = st.get("rollouts", st.get("rejected"))  # "rejected": a key written before accepted ones were sampled
        weight = size / judged if judged else None
        row = {"rejected": size, "sampled": st["sampled"], "judged": judged, "judge_accepts": st["ACCEPT"],
               "adjudicated": adjudicated, "undecidable": found["undecidable"], "unfilled": found["unfilled"],
               "weight": weight, **{k: found[k] for k in RESULTS}}
        for k in RESULTS:
            row[f"projected_{k}"] = (weight * st["ACCEPT"] * found[k] / adjudicated
                                     if weight is not None and adjudicated else (0.0 if not st["ACCEPT"] else None))
        table[s] = row
    totals = {k: sum(r[k] for r in table.values()) for k in
              ("rejected", "sampled", "judged", "judge_accepts", "adjudicated", "undecidable", "unfilled", *RESULTS)}
    for k in RESULTS:
        values = [r[f"projected_{k}"] for r in table.values()]
        totals[f"projected_{k}"] = None if None in values else sum(values)
    return {"judge": meta.get("judge"), "student": meta.get("student"), "graded": meta.get("graded"),
            "strata": table, "all": totals, "paired": paired(meta) if "judged" in meta else None}


def _share(cells: dict, cell: str) -> str:
    """A cell as "count (share)", an empty one with its rule-of-three bound: "0 (< 7.5%)"."""
    if not cells["n"]:
        return "0"
    if cell in cells["bound"]:
        return f"0 (< {pct(cells['bound'][cell])})"
    return f"{cells[cell]} ({pct(cells['share'][cell])})"


def paired_markdown(p: dict, judge: str | None, student: str | None) -> list[str]:
    """Table 46 (the paired grades, each cell projected to the run's graded rollouts) and Table 45
    (by answer schema); an empty cell shows its rule-of-three bound, 3/n."""
    a = p["all"]
    head = ["Judged", "Both accept", "Both reject", "Judge accepts, cascade rejects", "Cascade accepts, judge rejects"]
    rows = [["sample", a["n"], *(_share(a, c) for c in CELLS.values())],
            [f"projected to all {p['graded']} graded", p["graded"], *(num(a["projected"][c]) for c in CELLS.values())]]
    schema_rows = [[schema, c["n"], *(_share(c, k) for k in CELLS.values())] for schema, c in p["schemas"].items()]
    unjudged = f" ({p['unjudged']} unreadable or failed judge verdicts in no cell)" if p["unjudged"] else ""
    return [f"## Paired grades: {student}, judge {judge} (Table 46){unjudged}", "", *table(head, rows), "",
            "An empty cell shows its 95% upper bound by the rule of three (3/n).", "",
            "## Paired grades by answer schema (Table 45)", "", *table(["Schema", *head], schema_rows), ""]


def markdown(result: dict) -> list[str]:
    """Table 47's layout: adjudicated cases by rejection reason, and their projection to the run; then
    the paired grades (Tables 46, 45)."""
    header = ["Rejection reason", "Rejected", "Judged", "Judge accepts", "Adjudicated", "Verifier false negatives",
              "Malformed references", "Judge over-acceptances", "Undecidable", "Unfilled"]
    rows = [[s, r["rejected"], r["judged"], r["judge_accepts"], r["adjudicated"], *(r[k] for k in RESULTS),
             r["undecidable"], r["unfilled"]] for s, r in {**result["strata"], "All": result["all"]}.items()]
    a = result["all"]
    rows.append([f"Projected to all {a['rejected']} rejected", "", "", "", "",
                 *(num(a[f"projected_{k}"]) for k in RESULTS), "", ""])
    L = [f"## Judge audit of the grader: {result['student']}, judge {result['judge']}", "",
         *table(header, rows), ""]
    side = (a["projected_verifier_false_negatives"], a["projected_malformed_references"])
    if None not in side and a["rejected"] and result.get("graded"):
        wrong = sum(side)
        L += [f"The verifier rejects a correct answer or grades against a malformed reference in about {wrong:.1f} "
              f"of {result['graded']} graded rollouts ({pct(wrong, result['graded'])}), "
              f"{pct(wrong, a['rejected'])} of the {a['rejected']} it rejects.", ""]
    return L + ([] if result["paired"] is None else paired_markdown(result["paired"], result["judge"], result["student"]))
