"""Deterministic milestone validators (paper Algorithm 1, Appendices P.2, T, W).

Each check is a small pure function returning CheckResult(s) whose reason a teacher can act on:

* ``schema``                 -- gold parses under its declared/inferred answer schema (schema.py);
* ``atomicity``              -- gold is one value/expression/equation/... without prose (atomicity.py);
* ``leak``                   -- gold does not restate the parent answer (leak.py, ``leak_level``);
* ``leak_transform``         -- nor a trivial transformation of it, nor one formatting step from it (leak.py,
  ``transformation``: Appendix T's conditions 2 and 3 where a program decides them);
* ``prompt_leak``            -- nor does the milestone's description or prompt, by the same rule
  (leak.py, ``stated_gold``): a student is shown them;
* ``standalone_reference``   -- milestone text does not point at other steps (standalone.py);
* ``standalone_symbols``     -- every gold symbol is defined by the milestone or problem;
* ``min_milestones`` / ``duplicates`` / ``integrate_matches_parent`` -- family level (family.py);
* ``reference_answer``       -- the parent (or corrected) answer is complete and atomic (reference.py);
* ``primitive_*``            -- the family's primitive, when it has one, leaks no gold, states no
  result, is short and standalone (primitive.py).

``independent_solve_check`` (standalone.py) needs a model call and is run by the compiler, not here.

``check_family`` parses golds with SymPy, which can hang on an adversarial one: it is registered as
the worker task "check_family", and ``check_family_in`` runs it in a worker pool with a time limit.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from oracleladder.schemas.models import CheckResult, Family, FamilyReport

from ..verify import GradingFailed
from ..workers import TaskRaised, TaskTimedOut, WorkerDied, WorkerPool, register_task
from ._text import milestone_description
from .atomicity import atomicity_problem, check_atomicity
from .family import check_count, check_duplicates, check_integrate
from .leak import check_leak, check_prompt_leak, check_transformation, leak_level
from .primitive import check_leak as check_primitive_leak, check_primitive
from .reference import answer_problem, check_reference_answer, reference_answer_problem
from .schema import check_schema
from .standalone import check_reference, check_symbols, independent_solve_check

__all__ = ["check_family", "check_family_in", "summarize", "render_errors", "render_failures", "leak_level",
           "atomicity_problem", "check_schema", "check_atomicity", "check_leak", "check_prompt_leak", "check_reference",
           "check_symbols",
           "check_count", "check_duplicates", "check_integrate", "independent_solve_check", "check_primitive",
           "family_leak_level", "shown_leaks", "answer_problem", "check_reference_answer", "reference_answer_problem"]

_LEVEL_ORDER = ("strict", "trivial", "equivalent")


def check_family(family: Family, *, use_corrections: bool = False, parse_prose: bool = True) -> FamilyReport:
    """Run every deterministic check on one family.

    ``parse_prose=False`` (the compiler's setting) skips the schema and leak checks of a gold that
    fails atomicity: it must be rewritten anyway, the atomicity failure says so, and the LaTeX
    parser can spend 50-150 ms on a sentence. ``ladder check`` keeps every verdict.
    """
    ref = family.reference_answer(use_corrections)
    checks: list[CheckResult] = [check_reference_answer(family, use_corrections)]
    for i, m in family.tested(use_corrections, keep_leaking=True):
        atomic = check_atomicity(m, i)
        if parse_prose or atomic.passed:
            checks.append(check_schema(m, i))
            checks.append(atomic)
            leak = check_leak(m, ref, i)
            checks.append(leak)
            if leak.passed:  # a gold that restates the answer is not also a transformation of it
                checks.append(check_transformation(m, ref, i))
        else:
            checks.append(atomic)
        checks.append(check_prompt_leak(m, family, i))
        checks.append(check_reference(m, i))
        checks.append(check_symbols(m, family, i))
    checks.append(check_count(family, use_corrections))
    checks.extend(check_duplicates(family, use_corrections))
    checks.append(check_integrate(family, use_corrections))
    if family.primitive is not None:
        checks.extend(check_primitive(family.primitive.text, family))
    return FamilyReport(pid=family.pid, checks=checks)


register_task("check_family", "oracleladder.validators:check_family")


async def check_family_in(pool: WorkerPool, family: Family, **options: Any) -> FamilyReport:
    """``check_family`` in a worker of ``pool``, with the pool's limit for each symbolic check it may
    run (schema, leak and prompt leak per milestone, one INTEGRATE); GradingFailed when it
    cannot end."""
    limit = pool.timeout_s * (1 + 3 * len(family.tested(keep_leaking=True)))
    what = "the plan's symbolic checks"
    try:
        return await pool.run("check_family", dict(family=family, **options), limit)
    except TaskTimedOut as e:
        raise GradingFailed(f"{what} did not finish within {limit:g} s") from e
    except WorkerDied as e:
        raise GradingFailed(f"{what}: grading failed: the verifier worker died twice ({e.why})") from e
    except TaskRaised as e:
        raise GradingFailed(f"{what} raised {e.kind}: {e.message}") from e


def shown_leaks(family: Family) -> list[CheckResult]:
    """The failed checks of the texts a student is shown: each tested milestone whose description or
    prompt states a final answer (the reference answer, its correction, the INTEGRATE gold), and the
    primitive if it states a gold (``milestone`` None)."""
    checks = [check_prompt_leak(m, family, i) for i, m in family.tested(keep_leaking=True)]
    if family.primitive is not None:
        checks.append(check_primitive_leak(family.primitive.text, family))
    return [c for c in checks if not c.passed]


def family_leak_level(family: Family, use_corrections: bool = False) -> str | None:
    """The narrowest leak level reached by any tested milestone of the family (None if none leaks)."""
    ref = family.reference_answer(use_corrections)
    levels = [leak_level(m.answer, ref) for _, m in family.tested(use_corrections, keep_leaking=True)]
    hit = [lv for lv in levels if lv]
    return min(hit, key=_LEVEL_ORDER.index) if hit else None


def summarize(reports: Sequence[FamilyReport], families: Sequence[Family],
              use_corrections: bool = False) -> dict[str, Any]:
    """Totals over a set of families (reports in the same order as families)."""
    by_pid = {f.pid: f for f in families}
    golds = [m.answer for f in families for _, m in f.tested(use_corrections, keep_leaking=True)]
    atomic = [c for r in reports for c in r.checks if c.check == "atomicity"]
    per_level: Counter[str | None] = Counter()
    for f in families:
        per_level[family_leak_level(f, use_corrections)] += 1
    failures = Counter(c.check for r in reports for c in r.failures())
    leak_fail: Counter[str] = Counter()
    for r in reports:
        for c in r.failures():
            if c.check == "leak":
                leak_fail[c.reason.split(")")[0].removeprefix("leak (")] += 1
    strict = per_level["strict"]
    return {
        "families": len(families),
        "families_passed": sum(r.passed for r in reports),
        "milestones": len(golds),
        "atomic_share": (sum(c.passed for c in atomic) / len(atomic)) if atomic else None,
        "median_gold_length": statistics.median(len(g) for g in golds) if golds else None,
        "leak_families": {  # cumulative, as in the paper's Appendix S counts
            "strict": strict,
            "strict_plus_trivial": strict + per_level["trivial"],
            "equivalent": strict + per_level["trivial"] + per_level["equivalent"],
        },
        "leak_milestones_by_level": dict(leak_fail),
        "failures_by_check": dict(sorted(failures.items())),
        "unknown_reports": [r.pid for r in reports if r.pid not in by_pid],
    }


def render_failures(report: FamilyReport, *, whole: str, intro: str, part: Callable[[int], str]) -> str:
    """Re-ask message body: every failing check with its full reason, where it failed: ``whole`` (the
    family or packet) or ``part(i)`` (milestone or helper i); ``intro`` leads, with ``{pid}`` and ``{n}``."""
    fails = report.failures()
    if not fails:
        return f"{whole} {report.pid}: all checks passed."
    lines = [intro.format(pid=report.pid, n=len(fails))]
    lines += [f"- {whole if c.milestone is None else part(c.milestone)} [{c.check}]: {c.reason}" for c in fails]
    return "\n".join(lines)


def render_errors(report: FamilyReport, family: Family | None = None) -> str:
    """Re-ask message for the teacher: every failing check, by milestone number, with its reason."""

    def milestone(i: int) -> str:
        where = f"Milestone {i + 1}"
        if family is not None and 0 <= i < len(family.milestones):
            desc = " ".join(milestone_description(family.milestones[i]).split())
            where += f" ({desc[:160]}{'...' if len(desc) > 160 else ''})"
        return where

    return render_failures(report, whole="Family", part=milestone,
                           intro="The milestone family for problem {pid} failed {n} check(s). Fix each and return "
                                 "the whole family again:")
