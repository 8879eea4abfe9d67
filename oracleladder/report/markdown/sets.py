"""The roadmap set's tables in report.md: the leak rule's dropped milestones and Tables 7, 8 and 48."""

from __future__ import annotations

from ..palette import n_families
from ..tables import ReportTables
from .cells import NONE, pct, table
from .head import at


def leak_rule(r: ReportTables) -> list[str]:
    """The milestones the leak rule dropped; nothing when it dropped none."""
    rule = r.leak_rule
    if rule is None or not rule.dropped:
        return []
    kept = (f" Probed with them kept (--keep-leaking): {', '.join(rule.kept_by)}; their Stage 0 and C2/C3 "
            "include them." if rule.kept_by else "")
    return ["## Leak rule", "",
            f"{len(rule.dropped)} milestones restate the reference answer (the verifier accepts their gold as it: "
            "Appendix N, P.1) and are in no Stage 0, C2 or C3 prompt." + kept, "",
            *table(["Family", "Milestone", "Gold"], [[d.pid, d.target, d.gold] for d in rule.dropped]), ""]


def milestone_types(r: ReportTables) -> list[str]:
    """Tables 7 and 48 of the set, Table 8 per student; one line where the set's families were not given."""
    m = r.milestone_types
    if m is None:
        return ["Tables 7, 8 and 48 (milestone types and answer schemas) read a roadmap set's milestones; none were "
                "given (a code set has none).", ""]
    if not m.milestones:
        return [f"Tables 7, 8 and 48 (milestone types and answer schemas): the set ({n_families(m.families)}) has no "
                "milestone.", ""]
    L = [f"## Milestone types of the set (Table 7: {m.milestones} tested milestones of {n_families(m.families)})", "",
         *table(["Type", "Milestones", "%"], [[t, c, pct(c, m.milestones)] for t, c in m.types.items()]), ""]
    L += [f"## Milestone types by outcome state (Table 8, tau = {r.meta.tau})", "", *at(r),
          "Each cell: share of the families in that state with at least one tested milestone of the type "
          "(a family counts in several columns).", ""]
    for s, by in r.types_by_outcome.items():
        L += [f"**{s}**", "", *table(["State", "n", *m.types],
                                     [[o, x.n] + [pct(c, x.n, 0) if x.n else NONE for c in x.with_type.values()]
                                      for o, x in by.items()]), ""]
    if m.schemas is None:
        return L + [f"Table 48 (answer schemas): none of the set's {m.answers} milestones states its answer "
                    "schema (released families do not; compiled ones do).", ""]
    rows = [[a, c, pct(c, m.answers)] for a, c in m.schemas.items()] + (
        [["not stated", m.schema_unknown, pct(m.schema_unknown, m.answers)]] if m.schema_unknown else [])
    return L + [f"## Answer schemas of the set (Table 48: all {m.answers} milestones)", "",
                *table(["Schema", "Milestones", "%"], rows), ""]
