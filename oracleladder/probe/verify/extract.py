"""Find the final answer in a response: drop reasoning, take the boxed content."""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


def strip_reasoning(response: str) -> str:
    """Keep only what follows the last `</think>`; reasoning may contain draft boxes."""
    idx = response.rfind("</think>")
    return response[idx + len("</think>"):] if idx >= 0 else response


def all_boxed(text: str) -> list[str]:
    """Contents of every balanced `\\boxed{...}` / `\\fbox{...}` in order; unclosed boxes are skipped."""
    out: list[str] = []
    end = -1  # a box inside an earlier box is part of that answer, not a separate one
    for m in _BOX.finditer(text):
        if m.start() < end:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                i += 2  # an escaped brace does not count
                continue
            depth += (c == "{") - (c == "}")
            i += 1
        if depth == 0:
            out.append(text[m.end():i - 1])
            end = i
    return out


def last_boxed(text: str) -> str | None:
    boxes = all_boxed(text)
    return boxes[-1] if boxes else None
