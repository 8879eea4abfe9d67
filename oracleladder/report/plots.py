"""The report's figures, from its tables: the taxonomy's stacked bars (Figure 4) and the outcome
fingerprint (Figure 8), in the palette the HTML report shares.

Matplotlib loads with this module, which `report.report` loads when it first draws: `ladder --help`,
a probe or a comparison never load it. Figures are drawn on their own Agg canvas, outside pyplot's
global state, so nothing needs closing and no backend is switched for the rest of the process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from ..ladder.outcomes import Gap, Outcome
from .palette import GAP_COLORS, GAP_HELP, NOT_CLASSIFIED, NOT_DETERMINED, OUT_COLORS, OUT_HELP
from .tables import ReportTables

_HATCH = {"facecolor": "white", "edgecolor": "#8c8c8c", "hatch": "///"}
# what a figure function returns: the figure, its axes, its legend, and the segments drawn bottom to top (or
# left to right) as (category, or None for the hatched one, and its family count per student)
Drawn = tuple[Figure, Axes, Legend, list[tuple[str | None, list[int]]]]
# a stacked segment: its category (None: the hatched families without a label), legend label, bar style, whether
# its colour is dark (white numbers), and its family count per student
Segment = tuple[str | None, str, dict[str, str], bool, list[int]]


def _figure(**kw: object) -> tuple[Figure, Axes]:
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _tick_name(name: str, n: int, width: int = 16) -> str:
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


def _stack(ax: Axes, horizontal: bool, pos: np.ndarray, ns: np.ndarray, segments: list[Segment],
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
        style = {"edgecolor": "white"} | style
        h = (ax.barh(pos, share, left=base, height=0.6, linewidth=0.8, **style) if horizontal
             else ax.bar(pos, share, bottom=base, width=0.6, linewidth=0.8, **style))
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
    fig, ax = _figure(figsize=(2.2 + 1.25 * len(names), 4.6))
    ran = any(studs[s].primitive_run for s in names)  # no Primitive-gap segment nor legend entry otherwise
    segments = [(g.value, f"{g.value}: {GAP_HELP[g]}", {"color": GAP_COLORS[g]}, g is not Gap.DIRECT,
                 [studs[s].taxonomy.get(g.value) or 0 for s in names]) for g in Gap if ran or g is not Gap.PRIMITIVE]
    segments.append((None, f"{NOT_CLASSIFIED}: Stage 0 or a C1-C3 run missing", _HATCH, False,
                     [studs[s].taxonomy_not_classified for s in names]))
    handles, labels, drawn = _stack(ax, False, x, ns, segments)
    for xi, n in zip(x, ns):
        if not n:
            ax.text(xi, 50, "no probed\nfamilies", ha="center", va="center", fontsize=8, color="#555555")
    ticks = [_tick_name(s, int(n)) + ("" if studs[s].stage0.stage0_run or not n else "\nStage 0 not run")
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
    fig, ax = _figure(figsize=(8, 1.9 + 0.55 * len(names)), layout="constrained")
    ran = any(studs[s].primitive_run for s in names)  # no Primitive-Needed segment nor legend entry otherwise
    segments = [(o.value, f"{o.value}: {OUT_HELP[o]}", {"color": OUT_COLORS[o]}, o is not Outcome.DIRECT,
                 [studs[s].outcomes_known.get(o.value, 0) for s in names])
                for o in Outcome if ran or o is not Outcome.PRIMITIVE_NEEDED]
    segments.append((None, f"{NOT_DETERMINED}: a C1-C3 run it depends on is missing", _HATCH, False,
                     [studs[s].outcome_undetermined for s in names]))
    handles, labels, drawn = _stack(ax, True, y, ns, segments)
    for yi, n in zip(y, ns):
        if not n:
            ax.text(50, yi, "no probed families", ha="center", va="center", fontsize=8, color="#555555")
    ax.set_yticks(y, [_tick_name(s, int(n)).replace("\n(", " (") for s, n in zip(names, ns)], fontsize=8.5)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title(f"Parent-probe outcome fingerprint: smallest help that solves the parent (tau = {r.meta.tau})",
                 fontsize=10)
    legend = fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=2, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def write_plots(r: ReportTables, out: Path) -> None:
    """taxonomy.png and fingerprint.png in ``out``."""
    for name, figure in (("taxonomy.png", taxonomy_figure), ("fingerprint.png", fingerprint_figure)):
        figure(r)[0].savefig(out / name, dpi=110, bbox_inches="tight")
