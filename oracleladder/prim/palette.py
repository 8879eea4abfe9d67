"""PRIM's colours, shared by its plots (`plots`) and the HTML report (`viewer`): a Generation failure's
quadrant, and Figure 2's Discovery × Generation cells; what Generation solves is the ladder's Direct
grey (`report.palette`)."""

from __future__ import annotations

from ..ladder.outcomes import Gap
from ..report.palette import GAP_COLORS
from .problems import SOLVED
from .scoring import QUADRANTS

# in QUADRANTS' order: discovery-, capability-, execution-, utilization-limited
QUADRANT_COLORS = dict(zip(QUADRANTS.values(), ("#1f77b4", "#7b1e1e", "#2ca02c", "#ff7f0e")))
COMPOSITION_COLORS = {"D+G+": "#8c8c8c", "D+G−": "#2ca02c", "D−G+": "#1f77b4", "D−G−": "#d62728"}


def colors() -> dict[str, str]:
    """Every PRIM label's colour by its name, as the HTML report reads them."""
    return {SOLVED: GAP_COLORS[Gap.DIRECT], **QUADRANT_COLORS, **COMPOSITION_COLORS}
