r"""Atomicity check: a gold answer is one value, expression, equation (or one system of them),
inequality, interval, set or tuple, and no prose (paper Appendix P.2).

Rules, applied to the gold after stripping an outer ``\boxed{...}`` and ``$``:

1. Not empty, and no line break (a newline, or ``\\`` outside a matrix/array/cases environment).
2. No separate statements: no top-level ``;`` and no ``\quad``/``\qquad`` separator.
   A top-level comma list is allowed (a tuple, a list of values, or one system of
   assignments such as ``A=4,\ B=4``), since it is one answer object.
3. ``\text{..}``, ``\mathrm{..}``, ``\textbf{..}``, ``\operatorname{..}``, ``\mbox{..}`` may hold
   only a unit or short label: at most 2 words and 15 characters, and no connector word.
   ``\text{ or }`` is allowed (a case split of one answer); ``and``/``so``/``thus``... are not.
4. Outside LaTeX commands, no connector / prose word (and, so, then, thus, hence, therefore,
   since, because, where, which, the, is, are, we, gives, implies, get, obtain, yields, with,
   when, if, for, all, that, this, of) and at most 2 alphabetic words of 3+ letters that are
   not math function names (sin, log, ...) -- so ``even``, ``acyclic``, ``no`` pass as one value,
   but a sentence does not.
5. No sentence punctuation: a ``.`` followed by a space and a letter, or a trailing ``.`` after a
   word.
"""

from __future__ import annotations

import re

from oracleladder.schemas.models import CheckResult, Milestone

CHECK = "atomicity"

CONNECTORS = frozenset(
    "and so then thus hence therefore since because where which the is are was we gives give "
    "implies imply get gets obtain obtains yields yield with when if for all that this of it "
    "must can has have means by from".split()
)
MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln exp lim max min gcd lcm "
    "det mod deg arg sup inf ctg tg cm mm km kg min sec hr".split()
)
_TEXTCMD = re.compile(r"\\(?:text|mathrm|textbf|textit|operatorname|mbox|mathit|mathbf)\s*\{([^{}]*)\}")
_ENV = re.compile(r"\\begin\{(matrix|pmatrix|bmatrix|vmatrix|Bmatrix|array|cases|aligned)\}.*?\\end\{\1\}", re.S)
_CMD = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"(?<![A-Za-z\\])[A-Za-z]+(?![A-Za-z])")


def _unwrap(gold: str) -> str:
    s = gold.strip().strip("$").strip()
    m = re.fullmatch(r"\\boxed\{(.*)\}", s, re.S)
    return m.group(1).strip() if m else s


def _top_level(s: str, ch: str) -> bool:
    depth = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):  # skip escaped delimiters such as \{ \}
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ch and depth == 0:
            return True
        i += 1
    return False


def atomicity_problem(gold: str) -> str | None:
    """None when `gold` is atomic, else the reason it is not."""
    s = _unwrap(gold)
    if not s:
        return "gold answer is empty"
    if "\n" in s:
        return "gold answer spans several lines; give a single answer on one line"
    if "\\\\" in _ENV.sub("", s):
        return "gold answer contains a line break (\\\\) outside a matrix; give one answer"
    if _top_level(s, ";"):
        return "gold answer has several statements separated by ';'; give one value, equation or tuple"
    if re.search(r"\\q?quad", s):
        return "gold answer has several statements separated by \\quad; give one value, equation or tuple"
    for inner in _TEXTCMD.findall(s):
        words = re.findall(r"[A-Za-z]+", inner)
        lowered = [w.lower() for w in words]
        if lowered == ["or"]:
            continue
        bad = [w for w in lowered if w in CONNECTORS]
        if bad:
            return (f"\\text{{{inner.strip()}}} joins statements with prose ({', '.join(bad)}); "
                    "give a single answer without explanation")
        if len(words) > 2 or len(inner.strip()) > 15:
            return (f"\\text{{{inner.strip()}}} is prose, not a unit or short label; "
                    "state only the answer")
    bare = _CMD.sub(" ", _TEXTCMD.sub(" ", s))
    words = [w.lower() for w in _WORD.findall(bare)]
    bad = sorted({w for w in words if w in CONNECTORS})
    if bad:
        return f"gold answer contains prose ({', '.join(bad)}); give only the value, with no explanation"
    prose = [w for w in words if len(w) >= 3 and w not in MATH_WORDS]
    if len(prose) > 2:
        return f"gold answer reads as prose ({' '.join(prose[:6])}); give only the value"
    if re.search(r"[A-Za-z]{2,}\.(\s+[A-Za-z]|\s*$)", bare):
        return "gold answer ends or splits like a sentence ('.'); give only the value"
    return None


def check_atomicity(m: Milestone, index: int | None = None) -> CheckResult:
    why = atomicity_problem(m.answer)
    if why:
        return CheckResult(check=CHECK, passed=False, milestone=index, reason=f"{why} (gold: {m.answer!r})")
    return CheckResult(check=CHECK, passed=True, milestone=index, reason="one value without prose")
