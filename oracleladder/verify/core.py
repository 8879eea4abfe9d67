"""One verification, in the calling process: the cascade without process isolation."""

from __future__ import annotations

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import AnswerSchema, Label

from .equivalence import equivalent, paper_equivalent
from .extract import all_boxed, strip_reasoning
from .normalize import decode_byte_bpe, math_strip, normalize
from .parse import ParseError, parse_answer
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


def verify_inprocess(response: str, gold: str, *, grader: str = "strict", extended: bool = False, note: str = "",
                     schema: AnswerSchema | None = None, problem: str = "") -> Verdict:
    """The cascade: (BPE decoding) -> reasoning strip -> last box -> normalize -> schema parse ->
    equivalence (-> boxes read together). `paper` stops after the last box's equivalence."""
    del note  # the release's grading notes are all "accept if equivalent"; nothing rule-bearing to read
    grader = grader_name(grader, extended)
    paper = grader == "paper"
    boxes = all_boxed(strip_reasoning(response if paper else decode_byte_bpe(response)))
    if not boxes:
        return Verdict(Label.NOT_ACCEPT, "no boxed", None)
    pred = boxes[-1]
    why = screen(pred)
    if why:
        return Verdict(Label.NOT_ACCEPT, f"parse error: {why}", pred[:200])
    if schema is not None:
        try:
            parse_answer(pred, schema)
        except ParseError as e:
            if schema is not AnswerSchema.MCQ_STRING or not problem:
                return Verdict(Label.NOT_ACCEPT, f"parse error: {e}", pred)
    if paper:
        ok = paper_equivalent(gold, pred)
        return Verdict(Label.ACCEPT if ok else Label.NOT_ACCEPT, "equivalent" if ok else "not equivalent", pred)
    if equivalent(gold, pred, extended=grader == "extended", problem=problem):
        return Verdict(Label.ACCEPT, "equivalent", pred)
    if len(boxes) > 1:  # a compound answer spread over several boxes; the last box alone is partial
        for k in range(2, min(len(boxes), 6) + 1):
            joined = ", ".join(normalize(b) for b in boxes[-k:])
            if equivalent(gold, joined, extended=True, problem=problem):
                return Verdict(Label.ACCEPT, f"equivalent over {k} boxes", joined)
    return Verdict(Label.NOT_ACCEPT, "not equivalent", pred)
