"""PRIM's figures, from its report, drawn with the ladder's figure kit (`report.plots`: matplotlib loaded with this
module, which `ladder prim report` loads when it first draws; each figure on its own Agg canvas):

- Figure 2: the joint Discovery × Generation composition (D±G±), one 100% bar per student;
- Figure 3: Discovery against Generation, one point per student;
- Figure 4: the Generation failures by quadrant (Table 9), those that cannot be placed hatched;
- Figure 12: each dimension's output tokens, right against wrong answers (the quartiles the report
  keeps: a box from q1 to q3 with the median)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..report.plots import HATCH, Segment, new_figure, save, stack, tick_name
from .analysis import PrimReport, StudentPoint, Tokens, across
from .palette import COMPOSITION_COLORS, QUADRANT_COLORS
from .problems import UNKNOWN
from .scoring import QUADRANT_SIGNS

COMPOSITION_HELP = {"D+G+": "discovers and solves", "D+G−": "discovers, does not solve",
                    "D−G+": "solves without discovering", "D−G−": "neither"}


def composition_figure(points: Mapping[str, StudentPoint]) -> Figure:
    """Figure 2: per student, its problems (with both verdicts) by Discovery and Generation, as % with counts."""
    names = list(points)
    ns = np.array([sum(points[s].composition.values()) for s in names], float)
    y = np.arange(len(names))[::-1]
    fig, ax = new_figure(figsize=(8, 1.9 + 0.55 * len(names)), layout="constrained")
    segments: list[Segment] = [(k, f"{k}: {COMPOSITION_HELP[k]}", {"color": c}, k != "D+G+",
                                [points[s].composition[k] for s in names]) for k, c in COMPOSITION_COLORS.items()]
    handles, labels, _ = stack(ax, True, y, ns, segments)
    ax.set_yticks(y, [tick_name(s, int(n)).replace("\n(", " (") for s, n in zip(names, ns)], fontsize=8.5)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of problems (numbers in bars: problem counts)", fontsize=8.5)
    ax.set_title("PRIM Figure 2: problems by Discovery (D) and Generation (G)", fontsize=10)
    # matplotlib's stub takes Artists only; a bar's container is a handle too (Legend's default handler map)
    fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=2, frameon=False)  # type: ignore[call-overload]
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def discovery_figure(points: Mapping[str, StudentPoint]) -> Figure:
    """Figure 3: each student's Discovery (x) against its Generation (y), in percent, with the diagonal;
    a student without one of them has no point and says so."""
    fig, ax = new_figure(figsize=(5, 5))
    ax.plot([0, 100], [0, 100], color="#8c8c8c", linewidth=0.8, linestyle="--")
    missing = []
    for name, p in points.items():
        if p.discovery is None or p.generation is None:
            missing.append(name)
            continue
        ax.scatter([p.discovery], [p.generation], s=36, color="#1f77b4", zorder=3)
        ax.annotate(name, (p.discovery, p.generation), xytext=(4, 4), textcoords="offset points", fontsize=8)
    if missing:
        ax.text(50, 3, f"no point (a dimension not probed): {', '.join(missing)}", ha="center", fontsize=7,
                color="#555555")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("Discovery (%)", fontsize=9)
    ax.set_ylabel("Generation (%)", fontsize=9)
    ax.set_title("PRIM Figure 3: Discovery against Generation", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def quadrant_figure(r: PrimReport) -> Figure:
    """Figure 4: the student's Generation failures per quadrant, as counts."""
    keys = list(r.table9)
    fig, ax = new_figure(figsize=(6.5, 3.6), layout="constrained")
    for x, k in enumerate(keys):
        style: dict[str, Any] = HATCH if k == UNKNOWN else {"color": QUADRANT_COLORS[k]}  # Patch properties
        ax.bar([x], [r.table9[k]], width=0.6, **style)
        ax.text(x, r.table9[k], str(r.table9[k]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(keys)), [f"{k}\n{QUADRANT_SIGNS.get(k, 'not placed')}" for k in keys], fontsize=8)
    ax.set_ylim(0, max(1, *r.table9.values()) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("Generation failures", fontsize=9)
    ax.set_title(f"PRIM Figure 4: {r.student}'s Generation failures by Discovery (D) and Execution (E)", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def tokens_figure(r: PrimReport) -> Figure:
    """Figure 12: per dimension, the output tokens of right (green) and wrong (red) answers, q1 to q3
    with the median; a side with no answer is left out."""
    rows = [(f"{name}: {side} (n={t.n})", t, side) for name, split in r.figure12.items()
            for side in ("right", "wrong") if (t := split[side]).n]
    fig, ax = new_figure(figsize=(7, 1.2 + 0.32 * max(len(rows), 1)), layout="constrained")
    stats = [_box(t, label) for label, t, _ in rows]
    if stats:
        drawn = ax.bxp(stats[::-1], orientation="horizontal", showfliers=False, patch_artist=True, widths=0.6,
                       medianprops={"color": "black"})
        for box, (_, _, side) in zip(drawn["boxes"], rows[::-1]):
            box.set_facecolor("#2ca02c" if side == "right" else "#d62728")
    else:
        ax.text(0.5, 0.5, "no answer with a verdict", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("output tokens (box: q1 to q3, line: median)", fontsize=9)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(f"PRIM Figure 12: {r.student}'s output tokens, right against wrong", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _box(t: Tokens, label: str) -> dict[str, object]:
    # only the quartiles are kept: the whiskers are the box's edges
    return {"label": label, "q1": t.q1, "med": t.median, "q3": t.q3, "whislo": t.q1, "whishi": t.q3}


def write_prim_plots(r: PrimReport, out: Path) -> None:
    """figure2.png, figure3.png, figure4.png and figure12.png in ``out``."""
    points = across([r])
    for name, fig in (("figure2.png", composition_figure(points)), ("figure3.png", discovery_figure(points)),
                      ("figure4.png", quadrant_figure(r)), ("figure12.png", tokens_figure(r))):
        save(fig, out / name)


def write_across_plots(points: Mapping[str, StudentPoint], out: Path) -> None:
    """across-figure2.png and across-figure3.png in ``out``: Figures 2 and 3 over several students."""
    save(composition_figure(points), out / "across-figure2.png")
    save(discovery_figure(points), out / "across-figure3.png")
