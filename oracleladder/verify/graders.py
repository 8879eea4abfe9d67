"""The graders by name and version, and the rule they all apply first (`exact_match`).

Regex only, no SymPy: the CLI's startup, the loops and the pool's caller side import this module
alone, and the symbolic cascade (`core`) loads where an answer is graded (a worker, or in process)."""

from __future__ import annotations

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import Label

from .extract import all_boxed, strip_reasoning
from .normalize import math_strip, normalize
from .screen import screen

QUICK_MAX_CHARS = 20_000  # ~4 ms of box matching in the caller's event loop


GRADERS = ("paper", "strict", "extended")
# A grader's version changes whenever a rule changes what it accepts; reports print it.
GRADER_VERSIONS = {"paper": "paper-1", "strict": "strict-2", "extended": "extended-2"}


def grader_name(grader: str = "strict", extended: bool = False) -> str:
    """The grader to use: `extended=True` is a synonym of grader="extended"."""
    if grader not in GRADERS:
        raise ValueError(f"unknown grader {grader!r}; known: {', '.join(GRADERS)}")
    return "extended" if extended else grader


def exact_match(response: str, gold: str) -> Verdict | None:
    """The cascades' first rule alone: ACCEPT when the last box is the gold after the strict and
    the paper normalization both (so every grader accepts it), else None (undecided). Cheap enough
    to run before a round trip to a worker process, which is told the grader; this is not. A final
    answer longer than QUICK_MAX_CHARS is left undecided unread (the worker has the time limit)."""
    text = strip_reasoning(response)
    if len(text) > QUICK_MAX_CHARS:
        return None
    boxes = all_boxed(text)
    if not boxes or screen(boxes[-1]):
        return None
    pred, g = boxes[-1], normalize(gold)
    same = g and g == normalize(pred) and math_strip(gold) == math_strip(pred)
    return Verdict(Label.ACCEPT, "equivalent", pred) if same else None
