"""Grade responses_sample.jsonl (against the release's buckets) and judged_sample.jsonl (against
the hand labels) with the three graders, paper, strict and extended, and write the tables.

Usage: python scripts/verifier_agreement.py [responses.jsonl] [out.md] [judged.jsonl]
READINGS maps "pid:condition:rollout" to "ours-right | theirs-right | unclear: why", written by
reading each response tail; a case without a reading shows as "unread". The judged sample
carries its own reading (`why`).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from oracleladder.validators import answer_problem
from oracleladder.verify import GRADER_VERSIONS, GRADERS, verify_many

SHARED = Path(__file__).resolve().parents[1] / "tests" / "data"  # the release's sample, shipped with the tests
DATA = SHARED / "responses_sample.jsonl"
JUDGED = SHARED / "judged_sample.jsonl"
READINGS: dict[str, str] = {
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:0": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:1": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:2": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:3": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:4": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:6": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "d5e3b091-c9e0-44f8-9285-b8eee8df8493:C3_gold:7": "ours-right: the tail ends in a closed \\boxed{} giving w=-8, x=-12/5, y=12/5, z=8 in gold order (named or as an ordered 4-tuple); the release's no_boxed contradicts the text",
    "b5165fa2-37e9-40c9-a82f-949f6793da58:C1_direct:4": "ours-right: boxed 3.15 m is option (C)'s value; the reasoning before it is muddled (says 3 m) but the final boxed answer is the gold value",
    "b5165fa2-37e9-40c9-a82f-949f6793da58:C3_gold:5": "ours-right: boxed 3.15 m is the value of gold option (C)",
    "b5165fa2-37e9-40c9-a82f-949f6793da58:C3_gold:7": "ours-right: boxed 3.15 m is the value of gold option (C)",
    "b5165fa2-37e9-40c9-a82f-949f6793da58:C3_gold:6": "ours-right: last box is the letter C, the gold option",
    "30de45ff-0c7a-45b5-969a-894f6ab9ac2c:C3_gold:0": "ours-right: boxed 2^{n^2/2} (or 4^{n^2/4}) equals gold 4^{n^2/4}; the box is present and closed in the tail",
    "30de45ff-0c7a-45b5-969a-894f6ab9ac2c:C3_gold:2": "ours-right: boxed 2^{n^2/2} (or 4^{n^2/4}) equals gold 4^{n^2/4}; the box is present and closed in the tail",
    "30de45ff-0c7a-45b5-969a-894f6ab9ac2c:C3_gold:4": "ours-right: boxed 2^{n^2/2} (or 4^{n^2/4}) equals gold 4^{n^2/4}; the box is present and closed in the tail",
    "30de45ff-0c7a-45b5-969a-894f6ab9ac2c:C3_gold:5": "ours-right: boxed 2^{n^2/2} (or 4^{n^2/4}) equals gold 4^{n^2/4}; the box is present and closed in the tail",
    "30de45ff-0c7a-45b5-969a-894f6ab9ac2c:C3_gold:7": "ours-right: boxed 2^{n^2/2} (or 4^{n^2/4}) equals gold 4^{n^2/4}; the box is present and closed in the tail",
    "6553b443-2fc3-49fd-bd43-c280c391b565:C1_direct:0": "ours-right: gold has two values (4 or 9/4); the response boxes only 4, a missing solution",
    "6553b443-2fc3-49fd-bd43-c280c391b565:C1_direct:1": "ours-right: gold has two values (4 or 9/4); the response boxes only 4, a missing solution",
    "6553b443-2fc3-49fd-bd43-c280c391b565:C3_gold:6": "ours-right: boxes only 4 and says the other case is impossible; missing solution 9/4",
    "6553b443-2fc3-49fd-bd43-c280c391b565:C3_gold:5": "ours-right: both values 4 and 9/4 given in two boxes joined by 'and'",
    "6553b443-2fc3-49fd-bd43-c280c391b565:C3_gold:7": "ours-right: both values 4 and 9/4 given in two boxes joined by 'and'",
    "ba7e87af-78fc-46c1-82a7-c0a869b35837:C3_gold:2": "ours-right: boxed 3\\sqrt{2} meters equals gold 3\\sqrt{2}; unit dropped",
    "40a06b35-5c35-4c91-83b6-b2cb34e836f4:C3_gold:1": "ours-right: boxes n \\neq 2^k, the gold n\\neq2^k (k in N) without its domain; the text says k is an integer (issue 16 domain rule)",
    "40a06b35-5c35-4c91-83b6-b2cb34e836f4:C3_gold:2": "ours-right: boxes n \\neq 2^k, the gold n\\neq2^k (k in N) without its domain; the text says k is an integer (issue 16 domain rule)",
    "40a06b35-5c35-4c91-83b6-b2cb34e836f4:C3_gold:3": "ours-right: boxes n \\neq 2^k, the gold n\\neq2^k (k in N) without its domain; the text says k is an integer (issue 16 domain rule)",
    "40a06b35-5c35-4c91-83b6-b2cb34e836f4:C3_gold:4": "ours-right: boxes n \\neq 2^k, the gold n\\neq2^k (k in N) without its domain; the text says k is an integer (issue 16 domain rule)"
}


def _cell(s: str | None, n: int = 90) -> str:
    s = "" if s is None else " ".join(s.split())
    return (s[:n] + "…" if len(s) > n else s).replace("|", "\\|")


def _mark(v) -> str:
    return "ACCEPT" if v.accepted else "reject"


def _responses(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.open()]
    items = [{"response": r["response_tail"], "gold": r["gold"], "note": r["note"]} for r in rows]
    graded = {g: verify_many(items, grader=g) for g in GRADERS}
    theirs = [r["bucket"] == "parsed_correct" for r in rows]
    lines = ["## responses_sample.jsonl: the three graders against the release's buckets", "",
             f"- responses: {len(rows)}; release accepts (parsed_correct): {sum(theirs)}", ""]
    lines += ["| grader | version | accepts | agrees with the release | disagreements, read |", "|---|---|---|---|---|"]
    keys = [f"{r['pid']}:{r['condition']}:{r['rollout']}" for r in rows]
    for g in GRADERS:
        dis = [k for k, v, t in zip(keys, graded[g], theirs) if v.accepted != t]
        reads = Counter(READINGS.get(k, "unread").split(":")[0] for k in dis)
        agree = len(rows) - len(dis)
        lines.append(f"| {g} | {GRADER_VERSIONS[g]} | {sum(v.accepted for v in graded[g])} | "
                     f"{agree}/{len(rows)} ({agree / len(rows):.2%}) | "
                     + ", ".join(f"{k} {n}" for k, n in sorted(reads.items())) + " |")
    multi = [k for k, s in zip(keys, graded["strict"]) if "boxes" in s.reason]
    both = [k for k in multi if graded["paper"][keys.index(k)].accepted]
    lines += ["", f"- strict accepts over several boxes: {len(multi)}; paper accepts {len(both)} of them, on the "
              "last box alone (paper reads no other box): "
              + (", ".join(f"{k[:8]}{k[36:]} (release: {rows[keys.index(k)]['bucket']}, last box "
                           f"`{graded['paper'][keys.index(k)].extracted}`)" for k in both) or "none"), "",
              "Every response on which a grader and the release differ:", "",
              "| pid:condition:rollout | release | paper | strict | extended | gold | strict's answer | reason | reading |",
              "|---|---|---|---|---|---|---|---|---|"]
    for i, (k, r) in enumerate(zip(keys, rows)):
        vs = [graded[g][i] for g in GRADERS]
        if all(v.accepted == theirs[i] for v in vs):
            continue
        lines.append(f"| {k[:8]}:{r['condition']}:{r['rollout']} | {r['bucket']} | "
                     + " | ".join(_mark(v) for v in vs)
                     + f" | {_cell(r['gold'])} | {_cell(vs[1].extracted)} | {vs[1].reason} | "
                     f"{_cell(READINGS.get(k, 'unread'), 200)} |")
    return lines


def _judged(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.open()]
    graded = {g: verify_many([(r["response_tail"], r["canonical"]) for r in rows], grader=g) for g in GRADERS}
    det_correct = [i for i, r in enumerate(rows) if r["label"] == "correct" and r["deterministic"]]
    incorrect = [i for i, r in enumerate(rows) if r["label"] == "incorrect"]
    malformed = [i for i, r in enumerate(rows) if r["label"] == "malformed_gold"]
    lines = ["## judged_sample.jsonl: the three graders against the hand labels", "",
             f"- responses: {len(rows)}: {len(det_correct)} deterministic correct, "
             f"{sum(r['label'] == 'correct' for r in rows) - len(det_correct)} correct but undecidable by a symbolic "
             f"grader, {len(incorrect)} incorrect, {len(malformed)} with an unusable reference answer",
             f"- reference answers flagged by the reference_answer check: "
             f"{sum(bool(answer_problem(rows[i]['canonical'])) for i in malformed)}/{len(malformed)} malformed, "
             f"{sum(bool(answer_problem(r['canonical'])) for r in rows if r['label'] != 'malformed_gold')} others", "",
             "| grader | deterministic correct accepted | undecidable correct accepted | incorrect accepted |",
             "|---|---|---|---|"]
    for g in GRADERS:
        vs = graded[g]
        undecidable = [i for i, r in enumerate(rows) if r["label"] == "correct" and not r["deterministic"]]
        lines.append(f"| {g} | {sum(vs[i].accepted for i in det_correct)}/{len(det_correct)} | "
                     f"{sum(vs[i].accepted for i in undecidable)}/{len(undecidable)} | "
                     f"{sum(vs[i].accepted for i in incorrect)}/{len(incorrect)} |")
    lines += ["", "| item | label | deterministic | paper | strict | extended | gold | reason (strict) | reading |",
              "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        vs = [graded[g][i] for g in GRADERS]
        lines.append(f"| {r['item']} | {r['label']} | {r['deterministic']} | " + " | ".join(_mark(v) for v in vs)
                     + f" | {_cell(r['canonical'], 60)} | {vs[1].reason} | {_cell(r['why'], 200)} |")
    return lines


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/verifier-agreement.md")
    judged = Path(sys.argv[3]) if len(sys.argv) > 3 else JUDGED
    lines = ["# The three graders against the release and against a reading by hand", "",
             "Generated by `python scripts/verifier_agreement.py`; the reading column is a human reading of each "
             "case. `paper` is the release's default cascade, `strict` the default for new work, `extended` "
             "strict plus the relational and compound rules (docs/verifier.md).", "",
             "What the tables show, read case by case:", "",
             "- `paper` differs from the release's buckets on 13 of 400 responses, and all 13 are the release's "
             "bucketer errors: `no_boxed` on a response whose tail ends in a closed box holding the gold "
             "(d5e3b091 x7, 30de45ff x5, ba7e87af x1). On the other 387 it agrees on every one. The raw figure "
             "(96.75%) is below 98% for that reason only; a grader that matched it would have to reject closed, "
             "correct boxes.",
             "- `paper` reads only the last box. Of the 3 answers `strict` accepts over several boxes it accepts "
             "one, 6553b443:C3_gold:3, on its last box `4` alone: MATH's `is_equiv`, the release's first stage, "
             "drops everything from `\\text{ ` on, so the gold `4 \\text{ or } 2 \\frac{1}{4}` reads as 4 "
             "(the release gave the lone 4 `parsed_correct` too, 4 times). `strict` rejects a lone 4.",
             "- `strict` and `extended` differ from the release on 26 responses, each read: the 13 bucketer "
             "errors, the option value or letter of an MCQ gold (4), the condition `n \\neq 2^k` against "
             "`n\\neq2^{k}(k\\in{N})` (4), and the gold `4 or 9/4` (5: a lone 4 rejected, both values in two "
             "boxes accepted).",
             "- On judged_sample.jsonl (every row a case the release's cascade rejected) `paper` accepts nothing, "
             "as the release did; `strict` accepts all 6 deterministic correct answers and no incorrect one. The "
             "5 correct answers marked non-deterministic are undecidable for a symbolic grader and stay rejected "
             "by all three: a boxed `Yes` (the question is a yes/no about a number, gold 2), an option letter "
             "`A` or `between 3 and 4` against the numeric gold 32/9 (3 rows; the option text is not in the "
             "record), and `n \\text{ is not a power of 2}`, a condition in prose.",
             "- The 6 rows labelled `malformed_gold` have a reference answer the `reference_answer` check flags "
             "(dangling `n=1,`, `x_1=x_2=` x3, `15to25`, `\\1`); no grader accepts anything against them.", ""]
    lines += _responses(data) + [""] + _judged(judged)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
