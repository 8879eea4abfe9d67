"""Explicit input limits checked before anything reaches SymPy (after inspect_ai's math scorer)."""

from __future__ import annotations

import re

MAX_CHARS = 400
MAX_DEPTH = 12
MAX_DIGIT_RUN = 40
MAX_POWERS = 6
MAX_COMMANDS = 40
MAX_TOWER = 2

_COMMAND = re.compile(r"\\[A-Za-z]+")
_DIGITS = re.compile(r"\d+")
_UNEVALUATED = re.compile(r"\\(?:int|iint|oint|sum|prod|lim)(?![a-z])")


def _tower_height(ans: str) -> int:
    """Longest chain of exponents nested inside exponents, e.g. 5^{(5^{5^5})} has height 3."""
    height, stack, depth, pending = 0, [0], 0, False
    for c in ans:
        if c == "^":
            pending = True
            continue
        if c in "{(":
            depth += 1
            stack.append(stack[-1] + 1 if pending else stack[-1])
            height = max(height, stack[-1])
        elif c in "})" and len(stack) > 1:
            stack.pop()
        elif pending:  # a bare exponent like 5^5 is one level
            height = max(height, stack[-1] + 1)
        pending = False
    return height


def screen(ans: str) -> str | None:
    """Return why `ans` is too big to hand to SymPy, or None when it is safe."""
    if len(ans) > MAX_CHARS:
        return f"too long ({len(ans)} chars)"
    depth = peak = 0
    for c in ans:
        if c in "{([":
            depth += 1
            peak = max(peak, depth)
        elif c in "})]":
            depth -= 1
    if peak > MAX_DEPTH:
        return f"nesting depth {peak}"
    if any(len(d) > MAX_DIGIT_RUN for d in _DIGITS.findall(ans)):
        return "too many digits"
    if ans.count("^") > MAX_POWERS or _tower_height(ans) > MAX_TOWER:
        return "exponent tower"  # a^(b^(c^d)) can expand to numbers SymPy cannot finish
    if _UNEVALUATED.search(ans):
        return "unevaluated integral, sum or limit"  # SymPy may try to evaluate it for minutes
    if len(_COMMAND.findall(ans)) > MAX_COMMANDS:
        return "too many commands"
    return None
