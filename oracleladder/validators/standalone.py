r"""Standalone checks.

Text part (deterministic):

* no back-reference: the milestone's own text (description / Milestone and Output sections of
  the prompt, not the fixed preamble) must not mention other milestones or steps ("milestone 2",
  "step 3", "the previous result", "from above", "part (a)" ...);
* no undefined symbol: every variable symbol in the gold -- a single Latin letter not part of a
  word or command (``x``, ``a_4`` -> ``a``) or a Greek-letter command (``\alpha``) -- must appear in
  the milestone's text or the problem. Constants and functions are excluded: ``e``, ``i``, ``\pi``,
  ``d`` (differentials), ``C`` (integration constant), and all other commands (``\frac``, ``\sin``).

Independent-solve part (Algorithm 1's ``T.solve(M_i)``): ``independent_solve_check`` asks a
caller-supplied solver for the milestone's student-facing prompt alone and lets ``verify_fn``
judge the reply against the gold.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any

from oracleladder.schemas.models import CheckResult, Family, Milestone

from ._text import milestone_text, problem_text

CHECK_REF = "standalone_reference"
CHECK_SYM = "standalone_symbols"
CHECK_SOLVE = "independent_solve"

_REFS = [
    r"\b(?:previous|preceding|prior|earlier|last|above|next|following|other)\s+(?:milestones?|steps?|results?|parts?|answers?|questions?|sub-?goals?)\b",
    r"\b(?:milestone|step|part|sub-?goal)\s*[#(]?\s*(?:\d+|[a-d]\))",
    r"\b(?:from|in|see|using|use|as|by)\s+(?:the\s+)?above\b",
    r"\b(?:results?|expressions?|equations?|answers?|values?|formulas?)\s+(?:from\s+|given\s+)?above\b",
    r"\babove\s+(?:result|expression|equation|answer|value|formula|identity|relation)s?\b",
    r"\b(?:found|computed|obtained|derived|shown)\s+(?:earlier|before|previously)\b",
    r"\bpreviously\s+(?:found|computed|obtained|derived)\b",
]
_REF_RE = re.compile("|".join(_REFS), re.I)

GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi "
         "rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Phi Psi Omega").split()
EXCLUDED = frozenset({"e", "i", "d", "C"})
_CMD_RE = re.compile(r"\\([A-Za-z]+)")
_ENV_RE = re.compile(r"\\(?:begin|end)\{[^{}]*\}|\\(?:text|mathrm|operatorname|mbox)\s*\{[^{}]*\}")


def references_other(text: str) -> str | None:
    m = _REF_RE.search(text)
    return m.group(0) if m else None


def gold_symbols(gold: str) -> set[str]:
    """Variable symbols of a gold answer: single Latin letters and Greek-letter commands."""
    s = _ENV_RE.sub(" ", gold)
    syms = {f"\\{g}" for g in _CMD_RE.findall(s) if g in GREEK}
    s = _CMD_RE.sub(" ", s)
    for m in re.finditer(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])", s):
        if m.group(1) not in EXCLUDED:
            syms.add(m.group(1))
    return syms


def _mentions(symbol: str, text: str) -> bool:
    if symbol.startswith("\\"):
        name = symbol[1:]
        return re.search(rf"(?<![A-Za-z]){name}(?![A-Za-z])", text) is not None
    text = _CMD_RE.sub(" ", text)
    return re.search(rf"(?<![A-Za-z]){re.escape(symbol)}(?![A-Za-z])", text) is not None


def check_reference(m: Milestone, index: int | None = None) -> CheckResult:
    hit = references_other(milestone_text(m))
    if hit:
        return CheckResult(check=CHECK_REF, passed=False, milestone=index,
                           reason=f"milestone text refers to another step ({hit!r}); restate whatever it needs "
                                  "so it can be solved alone")
    return CheckResult(check=CHECK_REF, passed=True, milestone=index, reason="no reference to other milestones")


def check_symbols(m: Milestone, family: Family | None = None, index: int | None = None) -> CheckResult:
    context = milestone_text(m) + "\n" + problem_text(m, family)
    missing = sorted(s for s in gold_symbols(m.answer) if not _mentions(s, context))
    if missing:
        return CheckResult(check=CHECK_SYM, passed=False, milestone=index,
                           reason=f"gold {m.answer!r} uses symbol(s) {', '.join(missing)} that neither the milestone "
                                  "nor the problem defines; define them in the milestone text")
    return CheckResult(check=CHECK_SYM, passed=True, milestone=index, reason="every gold symbol is defined")


async def independent_solve_check(
    milestone: Milestone,
    solve: Callable[[str], Awaitable[str]],
    verify_fn: Callable[..., Any],
    index: int | None = None,
) -> CheckResult:
    """Ask `solve` the student-facing prompt alone; pass when `verify_fn(response, gold)` accepts.

    `verify_fn` may return a bool or a Verdict-like object with `.accepted` (it may be async).
    A failing `solve` call raises: a provider outage says nothing about the milestone.
    """
    response = await solve(milestone.prompt)
    verdict = verify_fn(response, milestone.answer)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    ok = bool(getattr(verdict, "accepted", verdict))
    if ok:
        return CheckResult(check=CHECK_SOLVE, passed=True, milestone=index,
                           reason="an independent solve of the prompt alone reaches the gold")
    why = getattr(verdict, "reason", "")
    return CheckResult(check=CHECK_SOLVE, passed=False, milestone=index,
                       reason=f"an independent solve of the prompt alone did not reach the gold {milestone.answer!r}"
                              f"{' (' + why + ')' if why else ''}; the milestone may be ambiguous, underspecified "
                              "or its gold wrong")
