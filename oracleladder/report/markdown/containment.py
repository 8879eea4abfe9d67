"""Tables 36 and 37 in report.md (and `ladder audit roadmap`): milestone answers in the unaided attempts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..tables import Containment, ReportTables, Share
from .cells import NONE, num, pct, table
from .head import at


def share(x: Share) -> str:
    """A containment share with its counts: "60.0% (6/10)"."""
    return NONE if x.rate is None else f"{pct(x.rate)} ({x.hits}/{x.pairs})"


def solved_alone(results: Mapping[str, Containment], above: Sequence[str] = ()) -> list[str]:
    """Table 36 of the students with Stage 0 verdicts (``above``: the lines under its title); one line for
    each other."""
    alone = {s: r.solved_alone for s, r in results.items() if r.solved_alone is not None}
    L = ["## By whether the student solves the milestone alone (Table 36)", "", *above,
         "Own pairs (milestone gold, unaided C1 attempt), split by the milestone's Stage 0 result (solved alone: "
         ">= 1 of K accepted).", "",
         *table(["Model", "Solved alone", "Not solved alone"],
                [[s, share(a.solved), share(a.not_solved)] for s, a in alone.items()]), ""] if alone else []
    lacking = [f"- {s}: Table 36 not available: no Stage 0 verdicts on these families." for s in results
               if s not in alone]
    return L + lacking + ([""] if lacking else [])


def _length(key: str) -> str:
    return "All lengths" if key == "all" else f"<= {key.removeprefix('<=')} characters"


def by_length(results: Mapping[str, Containment], above: Sequence[str] = ()) -> list[str]:
    """Table 37: each student's own rate by gold length, and with a second roadmap set (``against``) the ratio of
    this set's rate to that set's."""
    keys = list(next(iter(results.values())).by_length)
    L = ["## By gold length (Table 37)", "", *above, "Own pairs whose gold has at most that many characters.", "",
         *table(["Model", *map(_length, keys)],
                [[s] + [share(r.by_length[k]) for k in keys] for s, r in results.items()]), ""]
    versus = {s: r.against for s, r in results.items() if r.against is not None}
    if versus:
        L += ["Own rate of this set's golds over the other set's, on the same attempts of the families both have:", "",
              *table(["Model", "Families", *map(_length, keys)],
                     [[s, v.families] + [num(v.by_length[k].ratio, "{:.2f}") for k in keys]
                      for s, v in versus.items()]),
              ""]
    return L


def containment(r: ReportTables) -> list[str]:
    """Tables 36 and 37 of the students with unaided attempts to read; one line for the others."""
    have = {s: t.containment for s, t in r.students.items() if t.containment is not None}
    lacking = [s for s in r.students if s not in have]
    L = [f"Tables 36 and 37 (milestone answers in the unaided attempts) not available for {', '.join(lacking)}: "
         "they read the text of C1 attempts on a math roadmap set, and there is none (an imported panel, C1 not "
         "run, or a code set).", ""] if lacking else []
    return L + (solved_alone(have, at(r, list(have))) + by_length(have, at(r, list(have))) if have else [])
