"""The report stage: the tables of a probed set, computed once and typed (`tables`, with the statistics
in `stats`), then rendered: Markdown (`markdown`, one function per table, and the helpers every table of
the toolkit is written with), the plots (`plots`, matplotlib loaded only to draw), the colours the plots
and the HTML report share (`palette`); `report` writes report.json, report.md and the plots. Beside it
the comparison of two roadmap sets (`compare`) and of the primitive against the roadmap (`primitive`),
and the tables the command line prints to the terminal (`console`: the funnel, re-anchoring)."""
