"""The report's figures, from its tables: the taxonomy's stacked bars (Figure 4), the outcome fingerprint
(Figure 8), the specificity bars of matched against control conditions (Figures 3a, 6), direct accuracy
against any-probe recovery (Figure 3b), the change against a base (Figure 5) and the trajectory across
checkpoints (Figure 7), in the palette the HTML report shares.

Matplotlib loads with this module, which `report.report` loads when it first draws: `ladder --help`,
a probe or a comparison never load it. Figures are drawn on their own Agg canvas, outside pyplot's
global state, so nothing needs closing and no backend is switched for the rest of the process."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from ..ladder.outcomes import NOT_DETERMINED, Gap, Outcome
from ..schemas.conditions import LADDER
from .palette import FIGURES, GAP_COLORS, GAP_HELP, NOT_CLASSIFIED, OUT_COLORS, OUT_HELP
from .tables import ANY_PROBE, ConditionCount, ReplicationColumn, ReportTables, specificity

HATCH = {"facecolor": "white", "edgecolor": "#8c8c8c", "hatch": "///"}
# what a figure function returns: the figure, its axes, its legend, and the segments drawn bottom to top (or
# left to right) as (category, or None for the hatched one, and its family count per student)
Drawn = tuple[Figure, Axes, Legend, list[tuple[str | None, list[int]]]]
# a stacked segment: its category (None: the hatched families without a label), legend label, bar style, whether
# its colour is dark (white numbers), and its family count per student
Segment = tuple[str | None, str, dict[str, Any], bool, list[int]]


# The figure kit every report draws with (the ladder's here, PRIM's in prim.plots): a figure on its own Agg
# canvas, a student's tick, stacked segments with their counts, the hatch of what has no label, and saving.
def new_figure(**kw: Any) -> tuple[Figure, Axes]:
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def tick_name(name: str, n: int, width: int = 16) -> str:
    """Student name broken after its provider prefix when long, with the family count under it."""
    if len(name) > width and "/" in name:
        head, tail = name.rsplit("/", 1)
        name = f"{head}/\n{tail}"
    return f"{name}\n(n={n})" if n else f"{name}\n(no results)"


def _label_segment(ax: Axes, horizontal: bool, pos: float, start: float, size: float, count: int, dark: bool,
                   hatched: bool = False) -> None:
    if count <= 0 or size < 4.5:  # a segment under ~4.5% of the axis is too thin for a readable number
        return
    xy = (start + size / 2, pos) if horizontal else (pos, start + size / 2)
    ax.text(*xy, str(count), ha="center", va="center", fontsize=8, color="white" if dark else "black",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5} if hatched else None)


def stack(ax: Axes, horizontal: bool, pos: np.ndarray, ns: np.ndarray, segments: list[Segment],
           ) -> tuple[list[BarContainer], list[str], list[tuple[str | None, list[int]]]]:
    """One stacked bar per student at ``pos`` (of ``ns`` families each), the segments one after the other
    as % of its families, with the counts in them; the hatched segment (key None) only where it holds a
    family. Returns the legend's handles and labels, and what was drawn."""
    denom = np.maximum(ns, 1)
    base = np.zeros(len(pos))
    handles, labels, drawn = [], [], []
    for key, label, style, dark, per_student in segments:
        counts = np.array(per_student, float)
        if key is None and not counts.any():
            break  # no hatched segment, no legend entry
        share = 100 * counts / denom
        bar: dict[str, Any] = {"edgecolor": "white", **style}
        h = (ax.barh(pos, share, left=base, height=0.6, linewidth=0.8, **bar) if horizontal
             else ax.bar(pos, share, bottom=base, width=0.6, linewidth=0.8, **bar))
        for p, v, c, b0 in zip(pos, share, counts, base):
            _label_segment(ax, horizontal, p, b0, v, int(c), dark, key is None)
        base += share
        handles.append(h)
        labels.append(label)
        drawn.append((key, [int(c) for c in counts]))
    return handles, labels, drawn


def taxonomy_figure(r: ReportTables) -> Drawn:
    """Figure 4: one stacked bar per student, bottom to top in Table 16 order (Direct once, then the five
    gaps), as % of the student's families with counts in the segments; families whose label needs a run that
    is missing (Stage 0, or a C1-C3 rung) are a hatched segment on top, never a zero."""
    studs = r.students
    names = list(studs)
    ns = np.array([studs[s].n for s in names], float)
    x = np.arange(len(names))
    fig, ax = new_figure(figsize=(2.2 + 1.25 * len(names), 4.6))
    ran = any(studs[s].primitive_run for s in names)  # no Primitive-gap segment nor legend entry otherwise
    segments: list[Segment] = [(g.value, f"{g.value}: {GAP_HELP[g]}", {"color": GAP_COLORS[g]}, g is not Gap.DIRECT,
                 [studs[s].taxonomy.get(g.value) or 0 for s in names]) for g in Gap if ran or g is not Gap.PRIMITIVE]
    segments.append((None, f"{NOT_CLASSIFIED}: Stage 0 or a C1-C3 run missing", HATCH, False,
                     [studs[s].taxonomy_not_classified for s in names]))
    handles, labels, drawn = stack(ax, False, x, ns, segments)
    for xi, n in zip(x, ns):
        if not n:
            ax.text(float(xi), 50, "no probed\nfamilies", ha="center", va="center", fontsize=8, color="#555555")
    ticks = [tick_name(s, int(n)) + ("" if studs[s].stage0.stage0_run or not n else "\nStage 0 not run")
             for s, n in zip(names, ns)]
    ax.set_xticks(x, ticks, fontsize=8.5,
                  rotation=25 if len(names) > 8 else 0, ha="right" if len(names) > 8 else "center")
    ax.set_xlim(-0.7, len(names) - 0.3)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title("Reasoning-gap taxonomy\n"
                 f"strict milestone test \u00d7 smallest help, tau = {r.meta.tau}", fontsize=10)
    # the legend reads top-down like the stack, outside the axes
    legend = ax.legend(handles[::-1], labels[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1),
                       frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def fingerprint_figure(r: ReportTables) -> Drawn:
    """Figure 8: one 100% bar per student, left to right Direct, Roadmap-Needed, Answers-Needed,
    Unrecovered; a family whose outcome depends on a C1-C3 run that is missing is hatched, not Unrecovered."""
    studs = r.students
    names = list(studs)
    ns = np.array([studs[s].n for s in names], float)
    y = np.arange(len(names))[::-1]
    fig, ax = new_figure(figsize=(8, 1.9 + 0.55 * len(names)), layout="constrained")
    ran = any(studs[s].primitive_run for s in names)  # no Primitive-Needed segment nor legend entry otherwise
    segments: list[Segment] = [(o.value, f"{o.value}: {OUT_HELP[o]}", {"color": OUT_COLORS[o]}, o is not Outcome.DIRECT,
                 [studs[s].outcomes_known.get(o.value, 0) for s in names])
                for o in Outcome if ran or o is not Outcome.PRIMITIVE_NEEDED]
    segments.append((None, f"{NOT_DETERMINED}: a C1-C3 run it depends on is missing", HATCH, False,
                     [studs[s].outcome_undetermined for s in names]))
    handles, labels, drawn = stack(ax, True, y, ns, segments)
    for yi, n in zip(y, ns):
        if not n:
            ax.text(50, yi, "no probed families", ha="center", va="center", fontsize=8, color="#555555")
    ax.set_yticks(y, [tick_name(s, int(n)).replace("\n(", " (") for s, n in zip(names, ns)], fontsize=8.5)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title(f"Parent-probe outcome fingerprint: smallest help that solves the parent (tau = {r.meta.tau})",
                 fontsize=10)
    # a BarContainer is a legend handle as matplotlib draws it; its stubs take only Artists
    legend = fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=2,  # type: ignore[call-overload]
                        frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def specificity_figure(r: ReportTables) -> tuple[Figure, Axes, dict[str, dict[str, float | None]]]:
    """Figure 3a: per condition of `tables.replication.specificity`, one bar per student, the % of its families solved (>= tau
    of K) where the condition was run; "not run" written where it was not. Returns the heights drawn."""
    return _solved_bars({s: (t.n, t.conditions) for s, t in r.students.items()},
                        f"Specificity: matched help against controls (tau = {r.meta.tau})")


def replication_figure(columns: Sequence[ReplicationColumn]) -> tuple[Figure, Axes, dict[str, dict[str, float | None]]]:
    """Figure 6 (the explainer's): the same bars, one per roadmap set, each at its own student and tau."""
    return _solved_bars({f"{c.source} (n={c.n}): {c.student}, tau = {c.tau}": (c.n, c.conditions) for c in columns},
                        "The roadmap effect across roadmap sets")


def _solved_bars(columns: Mapping[str, tuple[int, Mapping[str, ConditionCount | None]]],
                 title: str) -> tuple[Figure, Axes, dict[str, dict[str, float | None]]]:
    """Per condition of `tables.replication.specificity`, one bar per column (a student, a roadmap set): the % of its n
    families solved; "not run" where the condition was not. Returns the heights drawn."""
    names, bars = list(columns), specificity()
    fig, ax = new_figure(figsize=(2.5 + 1.1 * len(bars) * max(1, len(names)) / 2, 4.2), layout="constrained")
    width = 0.8 / max(1, len(names))
    drawn: dict[str, dict[str, float | None]] = {}
    for j, s in enumerate(names):
        n, conditions = columns[s]
        drawn[s] = {c: (None if (v := conditions[c]) is None else 100 * v.solved / n if n else 0.0)
                    for c in bars}
        for i, c in enumerate(bars):
            x = i - 0.4 + width * (j + 0.5)
            count = conditions[c]
            if count is None:
                ax.text(x, 1, "not run", rotation=90, ha="center", va="bottom", fontsize=7, color="#555555")
            else:
                height = drawn[s][c] or 0.0
                ax.bar(x, height, width=width * 0.9, color=f"C{j}", label=s if i == 0 or
                       all(drawn[s][d] is None for d in bars[:i]) else None)
                ax.text(x, height + 1, str(count.solved), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(bars)), [LADDER[c].short for c in bars], fontsize=8.5)
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of families solved (numbers: family counts)", fontsize=8.5)
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:  # no bar at all where no condition was run: no legend
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, drawn


def accuracy_figure(r: ReportTables) -> tuple[Figure, Axes, dict[str, tuple[float, float]]]:
    """Figure 3b: one point per student with C1 rollouts, its per-rollout direct accuracy against the share
    of its families solved by any probe (both %). Returns the points drawn."""
    points = {s: (100 * t.summary.direct_accuracy, 100 * t.summary.solved_any_share)
              for s, t in r.students.items()
              if t.summary.direct_accuracy is not None and t.summary.solved_any_share is not None}
    fig, ax = new_figure(figsize=(5.2, 4.4), layout="constrained")
    for s, (x, y) in points.items():
        ax.scatter(x, y, s=30, color="#333333")
        ax.annotate(s, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=8)
    ax.set_xlim(0, 110)  # room for a point at 100% and its name
    ax.set_ylim(0, 110)
    ax.set_xlabel("Per-rollout direct (C1) accuracy, %", fontsize=8.5)
    ax.set_ylabel("Families solved by any probe, %", fontsize=8.5)
    ax.set_title(f"Direct accuracy against any-probe recovery (tau = {r.meta.tau})", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, points


def change_figure(r: ReportTables) -> tuple[Figure, Axes, dict[str, dict[str, int]]]:
    """Figure 5: per outcome (and any probe), one bar per student but the base, its change in families
    against the base on their common families. Returns the changes drawn."""
    drawn = {s: dict(c.delta) for s, c in r.changes.items()}
    keys = list(next(iter(drawn.values()))) if drawn else []
    fig, ax = new_figure(figsize=(2.5 + 1.2 * len(keys), 4.0), layout="constrained")
    width = 0.8 / max(1, len(drawn))
    for j, (s, delta) in enumerate(drawn.items()):
        xs = np.arange(len(keys)) - 0.4 + width * (j + 0.5)
        ax.bar(xs, [delta[k] for k in keys], width=width * 0.9, color=f"C{j}", label=s)
        for x, k in zip(xs, keys):
            ax.text(x, delta[k], f"{delta[k]:+d}", ha="center", va="bottom" if delta[k] >= 0 else "top", fontsize=7)
    ax.axhline(0, color="#555555", linewidth=0.8)
    ax.set_xticks(range(len(keys)), keys, fontsize=8.5)
    ax.set_ylabel(f"Change in families against {r.meta.base}", fontsize=8.5)
    ax.set_title(f"Change against {r.meta.base} (tau = {r.meta.tau})", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, drawn


def trajectory_figure(r: ReportTables) -> tuple[Figure, Axes, dict[str, list[int]]]:
    """Figure 7: the students in ``r.meta.order`` (default: the report's) as checkpoints left to right, their
    outcome counts as stacked areas, the any-probe count above each. Returns each outcome's counts."""
    names = r.meta.order or list(r.students)
    ran = any(r.students[s].primitive_run for s in names)
    drawn = {o.value: [r.students[s].outcomes.get(o.value, 0) for s in names]
             for o in Outcome if ran or o is not Outcome.PRIMITIVE_NEEDED}
    fig, ax = new_figure(figsize=(2.5 + 1.0 * len(names), 4.2), layout="constrained")
    x = np.arange(len(names))
    ax.stackplot(x, *drawn.values(), labels=list(drawn), colors=[OUT_COLORS[Outcome(o)] for o in drawn], alpha=0.9)
    for xi, s in zip(x, names):
        t = r.students[s]
        ax.text(float(xi), t.n, str(t.summary.solved_any), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [tick_name(s, r.students[s].n) for s in names], fontsize=8)
    ax.set_ylabel(f"Families (numbers above: {ANY_PROBE.lower()})", fontsize=8.5)
    ax.set_title(f"Parent-probe outcomes across checkpoints (tau = {r.meta.tau})", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, drawn


def write_plots(r: ReportTables, out: Path) -> None:
    """taxonomy.png, fingerprint.png, specificity.png and accuracy.png in ``out``; change.png and
    trajectory.png where there are two or more students."""
    figures: dict[str, Callable[[ReportTables], tuple[Any, ...]]] = {
        "taxonomy.png": taxonomy_figure, "fingerprint.png": fingerprint_figure,
        "specificity.png": specificity_figure, "accuracy.png": accuracy_figure}
    if len(r.students) > 1:
        figures |= {"change.png": change_figure, "trajectory.png": trajectory_figure}
    assert set(figures) <= set(FIGURES)  # each figure has its title in the HTML report
    for name, figure in figures.items():
        save(figure(r)[0], out / name)  # each returns its figure first


def save(fig: Figure, path: Path) -> None:
    """A report's figure as PNG, as every report writes them."""
    fig.savefig(path, dpi=110, bbox_inches="tight")


# Figure 9's segments, left to right: the triage's mutually exclusive categories (audit.human.triage)
# (the leak-safe repairs next to the composition-related ones: the upper bound spans both)
TRIAGE_SEGMENTS = (("verifier_repaired", "Artifact: verifier repair unlocked", "#9ecae1", False),
                   ("verifier_not_applicable", "Artifact: verifier artifact, repair not applicable", "#c6dbef", False),
                   ("decomposition_repaired", "Artifact: leak-safe decomposition repair unlocked", "#6baed6", False),
                   ("genuine_composition", "Rater-confirmed composition failure", "#d62728", True),
                   ("decomposition_unrecovered", "Unrecovered after leak-safe decomposition repair", "#ff9896", False),
                   ("verifier_unrecovered", "Unrecovered after verifier repair", "#f7b6d2", False),
                   ("beyond_capability", "Beyond capability", "#8c8c8c", True),
                   ("not_standalone", "Not standalone", "#c7c7c7", False))


def triage_figure(t: dict) -> tuple[Figure, Axes, Legend, list[tuple[str | None, list[int]]]]:
    """Figure 9: the audited families' post-repair triage as one stacked bar (% of the families, counts
    in the segments), the middle and pessimistic upper bounds on composition-related failures marked."""
    fig, ax = new_figure(figsize=(8.5, 2.6))
    n = t["total"]
    segments: list[Segment] = [(key, label, {"color": color}, dark, [t[key]])
                               for key, label, color, dark in TRIAGE_SEGMENTS]
    handles, labels, drawn = stack(ax, True, np.array([0.0]), np.array([n], float), segments)
    scale = 100 / max(n, 1)
    end = scale * (t["artifact"] + t["composition_or_unresolved"])  # both bounds end where the composition-related do
    for y, name, value in ((0.4, "after repair", t["bounds"]["middle"]),
                           (0.6, "pessimistic upper bound", t["bounds"]["upper"])):
        ax.annotate("", xy=(end - scale * value, y), xytext=(end, y),
                    arrowprops={"arrowstyle": "<->", "color": "black", "lw": 0.8})
        ax.text(end - scale * value / 2, y + 0.03, f"{name}: {value}/{n}", ha="center", va="bottom", fontsize=7.5)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.5, 0.85)
    ax.set_yticks([0.0], [f"audited\n(n={n})"], fontsize=8.5)
    ax.set_xlabel("% of the audited unrecovered families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title("Post-repair triage of the unrecovered families (Figure 9)", fontsize=10)
    legend = ax.legend(handles, labels, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def _grouped_shares(groups: Sequence[str], series: Sequence[tuple[str, Sequence[tuple[int, int] | None]]],
                    ylabel: str, title: str, width_each: float = 1.1) -> tuple[Figure, Axes, dict[str, list[float | None]]]:
    """Per group on the x axis, one bar per series: k of n as a % (the count "k/n" on the bar; nothing
    drawn where n is 0 or the series has no such group). Returns the heights drawn, by series."""
    fig, ax = new_figure(figsize=(2.5 + width_each * len(groups) * max(1, len(series)) / 2, 4.0), layout="constrained")
    width = 0.8 / max(1, len(series))
    drawn: dict[str, list[float | None]] = {}
    for j, (name, cells) in enumerate(series):
        drawn[name] = [100 * c[0] / c[1] if c is not None and c[1] else None for c in cells]
        label: str | None = name  # on the series' first bar only: one legend entry
        for i, (cell, height) in enumerate(zip(cells, drawn[name])):
            if cell is None or height is None:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.bar(x, height, width=width * 0.9, color=f"C{j}", label=label)
            ax.text(x, height + 1, f"{cell[0]}/{cell[1]}", ha="center", va="bottom", fontsize=7)
            label = None
    ax.set_xticks(range(len(groups)), list(groups), fontsize=8)
    ax.set_ylim(0, 110)
    ax.set_ylabel(ylabel, fontsize=8.5)
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, drawn


def length_figure(students: Sequence[tuple[str, Sequence[tuple[str, int, int]]]]
                  ) -> tuple[Figure, Axes, dict[str, list[float | None]]]:
    """The length analysis: per gold-length bin, one bar per student, the % of its tested milestones it
    solves alone (solved/tested on the bar)."""
    labels = [label for label, _, _ in students[0][1]]
    return _grouped_shares([f"{label} chars" for label in labels],
                           [(s, [(k, n) for _, k, n in bins]) for s, bins in students],
                           "% of milestones solved alone (numbers: solved/tested)",
                           "Milestone solve rate by gold answer length")


def retest_figure(results: Sequence[dict]) -> tuple[Figure, Axes, dict[str, list[float | None]]]:
    """The raw-output retest (the explainer's Figure 8): per family and condition, one bar per graded sheet
    (its student), the attempts correct by hand of those made (`audit.retest.read_sheet`'s results)."""
    keys = list(dict.fromkeys((f["pid"], f["condition"]) for r in results for f in r["families"]))
    conditions = {c for _, c in keys}
    series = []
    for r in results:
        cells = {(f["pid"], f["condition"]): (f["hand"], f["attempts"]) for f in r["families"]}
        series.append((str(r["student"]), [cells.get(key) for key in keys]))
    groups = [pid[:8] + (f"\n{c}" if len(conditions) > 1 else "") for pid, c in keys]
    return _grouped_shares(groups, series, "% of attempts correct by hand (numbers: correct/attempts)",
                           "Raw-output retest graded by hand", width_each=0.7)
