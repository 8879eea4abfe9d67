"""The replication view's files (paper Table 2, the explainer's Figure 6): several roadmap sets side by side,
each read for its own student at its own threshold tau. Its table is `tables.replication`, its Markdown
`markdown.replication`, its figure `plots.replication_figure`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from .markdown import replication as replication_md
from .tables import ReplicationColumn

if TYPE_CHECKING:
    from . import plots as _plots
else:  # matplotlib: loaded when the figure is drawn
    _plots = lazy_module("oracleladder.report.plots")

FILES = ("replication.md", "replication.json", "replication.png")


def write_replication(columns: Sequence[ReplicationColumn], out: Path) -> list[Path]:
    """replication.md, replication.json and replication.png (Figure 6) in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md, js, png = (out / name for name in FILES)
    md.write_text("\n".join(replication_md(columns)))
    js.write_text(json.dumps([c.model_dump() for c in columns], indent=2))
    _plots.replication_figure(columns)[0].savefig(png, dpi=110, bbox_inches="tight")
    return [md, js, png]
