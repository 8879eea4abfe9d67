"""Grade responses_sample.jsonl in strict and extended mode and write the disagreement tables.

Usage: python scripts/verifier_agreement.py [data.jsonl] [out.md]
READINGS maps "pid:condition:rollout" to "ours-right | theirs-right | unclear: why", written by
reading each response tail; a case without a reading shows as "unread".
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from oracleladder.probe.verify import verify_many

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "responses_sample.jsonl"  # ../shared beside the repo
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


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/verifier-agreement.md")
    readings = READINGS
    rows = [json.loads(line) for line in data.open()]
    items = [{"response": r["response_tail"], "gold": r["gold"], "note": r["note"]} for r in rows]
    strict = verify_many(items, extended=False)
    ext = verify_many(items, extended=True)
    dis, extra, lost = [], [], []
    for r, s, e in zip(rows, strict, ext):
        key = f"{r['pid']}:{r['condition']}:{r['rollout']}"
        theirs = r["bucket"] == "parsed_correct"
        if s.accepted != theirs:
            dis.append((key, r, s))
        if e.accepted and not s.accepted:
            extra.append((key, r, e))
        if s.accepted and not e.accepted:
            lost.append((key, r, s))
    verdicts = Counter(readings.get(k, "unread").split(":")[0] for k, _, _ in dis)
    lines = [
        "# Strict verifier vs the release, on responses_sample.jsonl",
        "",
        "Generated by `python scripts/verifier_agreement.py`; the reading column is a human reading of each case.",
        "",
        f"- responses: {len(rows)}",
        f"- release accepts (parsed_correct): {sum(r['bucket'] == 'parsed_correct' for r in rows)}",
        f"- strict accepts: {sum(s.accepted for s in strict)}; extended accepts: {sum(e.accepted for e in ext)}",
        f"- strict/release disagreements: {len(dis)} "
        f"(strict accepts, release rejects: {sum(s.accepted for _, _, s in dis)}; "
        f"release accepts, strict rejects: {sum(not s.accepted for _, _, s in dis)})",
        f"- readings of disagreements: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())),
        f"- extended accepts that strict rejects: {len(extra)}; strict accepts that extended rejects: {len(lost)}",
        f"- strict reasons: " + ", ".join(f"{k.split(':')[0]} {v}" for k, v in Counter(s.reason.split(':')[0] for s in strict).most_common()),
        "",
        "## Strict vs release disagreements",
        "",
        "| pid:condition:rollout | release | strict | gold | extracted | reason | reading |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, r, s in dis:
        lines.append(f"| {k[:8]}:{r['condition']}:{r['rollout']} | {r['bucket']} | {s.label.value} | {_cell(r['gold'])} | "
                     f"{_cell(s.extracted)} | {s.reason} | {_cell(readings.get(k, 'unread'), 200)} |")
    lines += ["", "## Extended-only accepts", "",
              "| pid:condition:rollout | gold | extracted | reason | reading |", "|---|---|---|---|---|"]
    for k, r, e in extra:
        lines.append(f"| {k[:8]}:{r['condition']}:{r['rollout']} | {_cell(r['gold'])} | {_cell(e.extracted)} | {e.reason} | "
                     f"{_cell(readings.get('ext:' + k, 'unread'), 200)} |")
    if lost:
        lines += ["", "## Strict accepts that extended rejects (must be empty)", ""]
        lines += [f"- {k}" for k, _, _ in lost]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:14]))


if __name__ == "__main__":
    main()
