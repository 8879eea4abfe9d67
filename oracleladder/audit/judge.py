"""The judge audit of the grader (paper Appendix V.1, Tables 46-47).

A seeded sample of the rollouts the verifier rejected, stratified by its rejection reason, goes to
an LLM judge with the reference answer, the grading note and the end of the response (prompt
``prompts/judge.txt``, cached like every call). The cases the judge accepts are written to a
grader-blind sheet (CSV: case, end of the response, reference answer, note, and a label for a
person to fill in); which grader said what is kept in a separate key file. The filled-in sheet reads
back into the result table by rejection reason, projected to every rejected rollout of the run with
the sampling weights (stratum size / rollouts judged in it).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..clients import Client, ProviderError
from ..clients.errors import endpoint_failure
from ..ladder.contract import Domain
from ..prompts import load
from ..runtime import gather_or_cancel
from ..schemas.models import Family, Rollout
from ..schemas.sheets import read_rows, write_rows
from ..schemas.types import GradeStatus
from ..report.markdown import num, pct, table

TAIL_CHARS = 12_000  # what the judge reads of a response: the paper's last 12,000 characters
SHEET_TAIL_CHARS = 3_000  # what the person reads: the end of the response, where its answer is
SHEET_COLUMNS = ("case", "response_tail", "reference_answer", "note", "label", "comment")
# a person's label -> the result it counts in ("undecidable": the response ends before any answer)
LABELS = {"correct": "verifier_false_negatives", "malformed_reference": "malformed_references",
          "incorrect": "judge_over_acceptances", "undecidable": "undecidable"}
RESULTS = ("verifier_false_negatives", "malformed_references", "judge_over_acceptances")
_VERDICT = re.compile(r'"verdict"\s*:\s*"(ACCEPT|NOT_ACCEPT)"')


class SheetError(ValueError):
    """A filled-in sheet or its key file that cannot be read; the message names file and line."""


def stratum(rollout: Rollout) -> str:
    """The verifier's rejection reason without its detail: "no boxed", "parse error", ..."""
    return rollout.verdict.reason.split(":")[0].strip()


def rejected(rollouts: Sequence[Rollout]) -> list[Rollout]:
    """The rollouts the verifier graded and did not accept (ungraded ones carry no verdict)."""
    return [r for r in rollouts if r.verdict.status is not GradeStatus.UNGRADED and not r.verdict.accepted]


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
    """The strata sizes of the rejected ``rollouts`` and a seeded stratified sample of ``n``."""
    strata: dict[str, list[Rollout]] = {}
    for r in sorted(rejected(rollouts), key=lambda r: (r.pid, r.target, r.k, r.call_key)):
        strata.setdefault(stratum(r), []).append(r)
    sizes = {s: len(rs) for s, rs in sorted(strata.items())}
    rng = random.Random(seed)
    take = allocate(sizes, n)
    return sizes, [r for s in sizes for r in rng.sample(strata[s], take[s])]


def _note(family: Family, target: str) -> str:
    return family.milestones[int(target[1:])].note if target.startswith("m") else family.parent_note


def judge_messages(domain: Domain, family: Family, rollout: Rollout) -> list[dict[str, str]]:
    prompt = load("judge").render(reference=domain.target_gold(family, rollout.target),
                                  note=_note(family, rollout.target), response=rollout.response[-TAIL_CHARS:])
    return [{"role": "user", "content": prompt}]


def read_verdict(text: str) -> str:
    """ACCEPT or NOT_ACCEPT from the judge's JSON (its last verdict), else "unreadable"."""
    found = _VERDICT.findall(text)
    return found[-1] if found else "unreadable"


async def ask_judge(client: Client, domain: Domain, families: dict[str, Family], sample: Sequence[Rollout],
                    max_tokens: int) -> list[tuple[str, str | None]]:
    """Per sampled rollout: the judge's verdict (ACCEPT, NOT_ACCEPT, unreadable, or "failed" when its
    call failed for good) and the call's key. A failure of the endpoint itself (no connection, a
    refused key) would fail every call the same way: it propagates."""

    async def one(r: Rollout) -> tuple[str, str | None]:
        request = client.request(judge_messages(domain, families[r.pid], r), temperature=0.0, max_tokens=max_tokens)
        try:
            result = await client.complete(request)
        except ProviderError as exc:
            if endpoint_failure(exc):
                raise
            return "failed", request.key()
        return read_verdict(result.text), request.key()

    return await gather_or_cancel(*(one(r) for r in sample))


def write_sheet(sheet: Path, key: Path, domain: Domain, families: dict[str, Family], sizes: dict[str, int],
                sample: Sequence[Rollout], verdicts: Sequence[tuple[str, str | None]], meta: dict,
                seed: int) -> int:
    """The blind sheet of the cases the judge accepts (shuffled, numbered) and its key file;
    returns the number of cases."""
    accepted = [(r, call) for r, (v, call) in zip(sample, verdicts) if v == "ACCEPT"]
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
    write_rows(sheet, SHEET_COLUMNS, rows)  # a cell a spreadsheet would evaluate is written as text
    judged: dict[str, Counter[str]] = {s: Counter() for s in sizes}
    for r, (v, _) in zip(sample, verdicts):
        judged[stratum(r)][v] += 1
    key.write_text(json.dumps({**meta, "seed": seed, "strata": {
        s: {"rejected": sizes[s], "sampled": sum(judged[s].values()), **{v: judged[s][v] for v in
            ("ACCEPT", "NOT_ACCEPT", "unreadable", "failed")}} for s in sizes}, "cases": cases}, indent=2))
    return len(cases)


def key_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".key.json")


def read_sheet(sheet: Path, key: Path) -> dict:
    """The filled-in sheet and its key file -> the result table by rejection reason, with each
    count projected to every rejected rollout: stratum size / rollouts judged x judge accepts x
    the count's share of the adjudicated cases (undecidable and unfilled ones left out)."""
    try:
        meta = json.loads(key.read_text())
    except (OSError, ValueError) as exc:
        raise SheetError(f"{key}: cannot read the key file ({exc})") from None
    labels: dict[str, str] = {}
    for row in read_rows(sheet):
        where = f"{sheet}:{row.get('case')}"
        case, label = row.get("case"), (row.get("label") or "").strip().lower()
        if case not in meta["cases"]:
            raise SheetError(f"{where}: no such case in {key.name}")
        if label and label not in LABELS:
            raise SheetError(f"{where}: label '{label}' is not one of {', '.join(LABELS)} (or blank)")
        labels[case] = label
    table = {}
    for s, st in meta["strata"].items():
        found = Counter(LABELS.get(labels.get(c, ""), "unfilled")
                        for c, case in meta["cases"].items() if case["stratum"] == s)
        adjudicated = sum(found[k] for k in RESULTS)
        judged = st["ACCEPT"] + st["NOT_ACCEPT"]
        weight = st["rejected"] / judged if judged else None
        row = {"rejected": st["rejected"], "sampled": st["sampled"], "judged": judged, "judge_accepts": st["ACCEPT"],
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
            "strata": table, "all": totals}


def markdown(result: dict) -> list[str]:
    """Table 47's layout: adjudicated cases by rejection reason, and their projection to the run."""
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
    return L
