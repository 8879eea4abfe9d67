"""MATH-style string normalization (Hendrycks et al.), applied before any parsing."""

from __future__ import annotations

import re

_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_TEXT_UNITS = re.compile(r"\\(?:text|mathrm|textbf|mbox)\s*\{\s*~?\s*(?:cm|m|km|kg|g|s|h|min|degrees?|units?|dollars?|cents?|inches|feet|ft|sq\.?\s*units)\s*\}")
_MCQ_PREFIX = re.compile(r"^\(?([A-E])\)\s*")


def normalize(ans: str) -> str:
    s = ans.strip()
    s = s.replace("\n", " ")
    # LaTeX thin spaces go; a row break `\\` followed by a blank must stay a row break.
    s = re.sub(r"(?<!\\)\\[!,; ]", lambda m: " " if m.group(0).endswith(" ") else "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("\\displaystyle", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("°", "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "")
    s = _TEXT_UNITS.sub("", s)
    s = re.sub(r"\\text\s*\{\s*(or|and)\s*\}", r" \1 ", s)
    s = re.sub(r"\\(?:text|mathrm|textbf|mbox)\s*\{([^{}]*)\}", r"\1", s)
    s = s.replace("\\leq", "\\le").replace("\\geq", "\\ge").replace("\\neq", "\\ne")
    # a mixed number "2 \frac{1}{4}" (space-separated, as in MATH answers) means 9/4
    s = re.sub(r"(?<![\d}^_])(\d+)\s+\\frac\{(\d+)\}\{(\d+)\}",
               lambda m: f"\\frac{{{int(m[1]) * int(m[3]) + int(m[2])}}}{{{m[3]}}}", s)
    s = s.strip().rstrip(".").strip()
    s = s.strip("$").strip()
    if s.startswith("0.") is False and re.match(r"^\.\d", s):
        s = "0" + s  # ".5" -> "0.5"
    return s


def strip_thousands(s: str) -> str:
    """Remove thousands separators only when the whole answer is one number, so `(1,234)` stays a pair."""
    t = s.replace("{,}", ",").replace("\\,", "")
    return t.replace(",", "") if _THOUSANDS.match(t) else s


def mcq_letter(s: str) -> str | None:
    """The option letter of an answer like `C`, `(C)`, `(C) 3.15 m`, `\\text{(C)}`."""
    t = s.strip().strip("()").strip() if len(s.strip()) <= 3 else s.strip()
    if re.fullmatch(r"[A-E]", t):
        return t
    m = _MCQ_PREFIX.match(s.strip())
    return m.group(1) if m else None
