"""The colours of the outcomes and the gaps, what each means, the names of the families a missing run
leaves without a label, and the figures' files and titles: shared by the report's plots and the HTML
report (`viewer`).

Direct is one grey in both plots; a gap of a family that passes the milestone test takes its
parent-probe outcome's colour (Roadmap-gap = Roadmap-Needed, Milestone-execution-gap = Answers-Needed,
Composition-gap = Unrecovered); the two fail-the-test gaps are dark (purple, dark red)."""

from __future__ import annotations

from ..ladder.outcomes import Gap, Outcome

GAP_COLORS = {Gap.DIRECT: "#8c8c8c", Gap.PRIMITIVE: "#ff7f0e", Gap.ROADMAP: "#1f77b4", Gap.MS_EXEC: "#2ca02c",
              Gap.COMPOSITION: "#d62728", Gap.MISSING_MS: "#6a3d9a", Gap.CAPABILITY: "#7b1e1e"}
OUT_COLORS = {Outcome.DIRECT: "#8c8c8c", Outcome.PRIMITIVE_NEEDED: "#ff7f0e", Outcome.ROADMAP_NEEDED: "#1f77b4",
              Outcome.ANSWERS_NEEDED: "#2ca02c", Outcome.UNRECOVERED: "#d62728"}
# what each category means, for plot legends (paper Section 4.3 / Figure 4 and Figure 8)
GAP_HELP = {Gap.DIRECT: "C1 solves", Gap.PRIMITIVE: "MS test pass, C2-primitive solves", Gap.ROADMAP: "MS test pass, C2 solves",
            Gap.MS_EXEC: "MS test pass, C3 solves", Gap.COMPOSITION: "MS test pass, C1-C3 fail",
            Gap.MISSING_MS: "MS test fail, C2 or C3 solves", Gap.CAPABILITY: "MS test fail, C1-C3 fail"}
OUT_HELP = {Outcome.DIRECT: "C1 solves", Outcome.PRIMITIVE_NEEDED: "C2-primitive solves, C1 does not",
            Outcome.ROADMAP_NEEDED: "C2 solves, C1 does not",
            Outcome.ANSWERS_NEEDED: "C3 solves, C1 and C2 do not", Outcome.UNRECOVERED: "C1, C2 and C3 fail"}
# the figures beside report.md, by file, with their titles (the HTML report shows each as a panel)
FIGURES = {"taxonomy.png": "Reasoning-gap taxonomy (Figure 4)",
           "fingerprint.png": "Parent-probe outcome fingerprint (Figure 8)",
           "specificity.png": "Specificity: matched help against controls (Figures 3a, 6)",
           "accuracy.png": "Direct accuracy against any-probe recovery (Figure 3b)",
           "change.png": "Change against the base (Figure 5)",
           "trajectory.png": "Outcomes across checkpoints (Figure 7)"}
NOT_CLASSIFIED = "Not classified"  # no five-way label: Stage 0 or a C1-C3 run it needs is missing
# a composition-gap family the rubric review labels a verifier or format error (Table 42): the HTML
# report's corrected taxonomy takes it out of Composition-gap
FLAGGED = "Flagged: grading error"
FLAGGED_COLOR = "#f4a6a6"  # Composition-gap's red, faded: the share the review takes out of it


def colors() -> dict[str, str]:
    """Every label's colour by its name, as the HTML report reads them."""
    return {**{g.value: c for g, c in GAP_COLORS.items()}, **{o.value: c for o, c in OUT_COLORS.items()},
            FLAGGED: FLAGGED_COLOR}


def n_families(n: int) -> str:
    """A count of families as every output says it: "1 family", "2 families"."""
    return f"{n} family" if n == 1 else f"{n} families"


_WORDS = "zero one two three four five six seven eight nine ten".split()


def number_word(n: int) -> str:
    """A count in a sentence: "four" (in words to ten)."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)
