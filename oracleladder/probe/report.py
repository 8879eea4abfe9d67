"""Minimal report: taxonomy + parent-outcome counts per student, as Markdown, JSON and a stacked-bar PNG."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .outcomes import FamilyResults, Gap, Outcome, classify, milestone_test, parent_outcome  # noqa: E402


def summarize(fams: list[FamilyResults], tau: int = 1, mode: str = "strict") -> dict:
    gaps = {g.value: 0 for g in Gap}
    outs = {o.value: 0 for o in Outcome}
    for f in fams:
        gaps[classify(f, tau, mode).value] += 1
        outs[parent_outcome(f.ladder, tau).value] += 1
    return {"n": len(fams), "tau": tau, "mode": mode, "taxonomy": gaps, "outcomes": outs,
            "milestone_test_pass": sum(milestone_test(f.stage0, mode) for f in fams)}


def write_report(students: dict[str, list[FamilyResults]], out_dir: str | Path, tau: int = 1) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res = {s: summarize(f, tau) for s, f in students.items()}
    (out / "report.json").write_text(json.dumps(res, indent=2))
    cols = [g.value for g in Gap]
    lines = ["| Model | " + " | ".join(cols) + " | MS-test pass |", "|" + "---|" * (len(cols) + 2)]
    for s, r in res.items():
        lines.append(f"| {s} | " + " | ".join(str(r["taxonomy"][c]) for c in cols)
                     + f" | {r['milestone_test_pass']} |")
    (out / "report.md").write_text("## Reasoning-gap taxonomy (Table 16)\n\n" + "\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = [0] * len(res)
    names = list(res)
    for c in cols:
        vals = [res[s]["taxonomy"][c] for s in names]
        ax.bar(names, vals, bottom=bottom, label=c)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("families")
    ax.set_title("Reasoning-gap taxonomy")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    fig.savefig(out / "taxonomy.png", dpi=100)
    plt.close(fig)
    return res
