"""Family-level checks: >= 2 tested milestones, no duplicates, INTEGRATE gold equals parent answer."""

from __future__ import annotations

import re

from oracleladder import verify
from oracleladder.schemas.models import CheckResult, Family

from ._text import milestone_description

CHECK_COUNT = "min_milestones"
CHECK_DUP = "duplicates"
CHECK_INTEGRATE = "integrate_matches_parent"


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().lower()


def check_count(family: Family, use_corrections: bool = False) -> CheckResult:
    n = len(family.tested(use_corrections, keep_leaking=True))
    if n < 2:
        return CheckResult(check=CHECK_COUNT, passed=False,
                           reason=f"only {n} tested non-INTEGRATE milestone(s); give at least 2")
    return CheckResult(check=CHECK_COUNT, passed=True, reason=f"{n} tested milestones")


def check_duplicates(family: Family, use_corrections: bool = False) -> list[CheckResult]:
    out: list[CheckResult] = []
    seen_d: dict[str, int] = {}
    seen_g: dict[str, int] = {}
    for i, m in family.tested(use_corrections, keep_leaking=True):
        d, g = _norm(milestone_description(m)), re.sub(r"\s+", "", m.answer)
        if d in seen_d:
            out.append(CheckResult(check=CHECK_DUP, passed=False, milestone=i,
                                   reason=f"description duplicates milestone {seen_d[d] + 1}; merge or replace it"))
        elif g in seen_g:
            out.append(CheckResult(check=CHECK_DUP, passed=False, milestone=i,
                                   reason=f"gold {m.answer!r} duplicates milestone {seen_g[g] + 1}'s gold; "
                                          "each milestone must establish something new"))
        seen_d.setdefault(d, i)
        seen_g.setdefault(g, i)
    if not out:
        out.append(CheckResult(check=CHECK_DUP, passed=True, reason="no duplicate descriptions or golds"))
    return out


def check_integrate(family: Family, use_corrections: bool = False) -> CheckResult:
    if family.integrate is None:
        return CheckResult(check=CHECK_INTEGRATE, passed=True, reason="no INTEGRATE step in released record")
    ref = family.reference_answer(use_corrections)
    gold = family.integrate.answer
    try:
        ok = verify.answers_equivalent(ref, gold, extended=True)
    except Exception as exc:  # noqa: BLE001
        ok, why = False, f" (verifier error {type(exc).__name__})"
    else:
        why = ""
    if ok:
        return CheckResult(check=CHECK_INTEGRATE, passed=True, reason="INTEGRATE gold equals the parent answer")
    return CheckResult(check=CHECK_INTEGRATE, passed=False,
                       reason=f"INTEGRATE gold {gold!r} is not equivalent to the parent answer {ref!r}{why}; "
                              "the final step must produce exactly the parent answer")
