"""Find the final answer in a response: drop reasoning, take the boxed content."""

from __future__ import annotations

import re

BOXES_READ = 6  # the most boxes a verdict reads: the last, and up to 5 before it for a compound answer
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"\\.|[{}]", re.S)  # an escaped character (\\{ too) is not a brace


def strip_reasoning(response: str) -> str:
    """Keep only what follows the last `</think>`; reasoning may contain draft boxes."""
    idx = response.rfind("</think>")
    return response[idx + len("</think>"):] if idx >= 0 else response


def all_boxed(text: str) -> list[str]:
    """Contents of every balanced `\\boxed{...}` / `\\fbox{...}` in order; unclosed boxes are skipped.

    One pass from the first box on (braces before it cannot close a box): each brace is matched
    once on a stack (rescanning the rest of the text from every box start is quadratic: 8,000
    unclosed boxes took 29 s)."""
    opens = {m.end() - 1: m.start() for m in _BOX.finditer(text)}  # a box's `{` -> where `\\boxed` starts
    if not opens:
        return []
    closes: dict[int, int] = {}  # a box's `{` -> its matching `}`
    stack: list[int] = []
    for m in _BRACE.finditer(text, next(iter(opens.values()))):
        c = m.group()
        if c == "{":
            stack.append(m.start())
        elif c == "}" and stack:
            p = stack.pop()
            if p in opens:
                closes[p] = m.start()
    out: list[str] = []
    end = -1  # a box inside an earlier box is part of that answer, not a separate one
    for p, start in opens.items():
        if start >= end and p in closes:
            out.append(text[p + 1:closes[p]])
            end = closes[p] + 1
    return out


def last_boxed(text: str) -> str | None:
    boxes = all_boxed(text)
    return boxes[-1] if boxes else None
