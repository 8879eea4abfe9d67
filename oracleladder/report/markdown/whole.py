"""report.md: its sections in the paper's order, and the plots' legend."""

from __future__ import annotations

from ..tables import ReportTables
from .checks import leak_residual, review
from .containment import containment
from .contrasts import contrasts
from .format_audit import format_audit
from .head import format_audits, header, missing_verdicts, notes
from .pairs import budgets, change, ordering, transitions
from .sets import leak_rule, milestone_types
from .student import bootstrap, conditions, recovery_by_tau, stage0_fingerprint, summary, taxonomy, threshold_sweep

PLOTS = ["## Plots", "",
         "- `taxonomy.png`: reasoning-gap taxonomy per student (Figure 4), stacked bottom to top in the order "
         "of the taxonomy table above.",
         "- `fingerprint.png`: parent-probe outcome fingerprint per student (Figure 8), left to right Direct, "
         "Roadmap-Needed, Answers-Needed, Unrecovered.",
         "- `specificity.png`: families solved under direct prompting, the controls and the matched help, one bar "
         "per student (Figures 3a, 6).",
         "- `accuracy.png`: per-rollout direct accuracy against the share solved by any probe, one point per "
         "student (Figure 3b).",
         "- `change.png` and `trajectory.png` (two or more students): each student's change in outcome counts "
         "against the base (Figure 5), and the outcome counts across the students as checkpoints in `--order` "
         "(Figure 7).", "",
         "Bars are shares of each student's families; the numbers in the segments are family counts (segments "
         "under 4.5% carry none: read them in the tables). Direct has the same grey in both plots, and a gap of "
         "a family that passes the milestone test has the colour of its outcome (Roadmap-gap and Roadmap-Needed "
         "blue, Milestone-execution-gap and Answers-Needed green, Composition-gap and Unrecovered red); the two "
         "gaps of failing families are dark. A hatched segment holds families a missing run leaves without a "
         "label (Stage 0 or a C1-C3 rung not run); it is never drawn as zero.", ""]


def report_md(r: ReportTables) -> str:
    """report.md: its tables in the paper's order (Tables 13, 18 and 38 for two or more students)."""
    formats = format_audits(r)
    L = header(r) + notes(r) + leak_rule(r) + missing_verdicts(r) + (format_audit(formats) if formats else [])
    L += summary(r) + conditions(r) + taxonomy(r) + stage0_fingerprint(r) + threshold_sweep(r) + recovery_by_tau(r)
    L += review(r) + leak_residual(r) + contrasts(r) + bootstrap(r) + milestone_types(r) + budgets(r) + containment(r)
    if r.pairs:
        L += change(r) + transitions(r) + ordering(r)
    else:
        L += ["Tables 13, 18 and 38 (pairwise ordering, change against a base, transitions) need two or more "
              "students.", ""]
    return "\n".join(L + PLOTS)
