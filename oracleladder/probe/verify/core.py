"""One verification, in the calling process: the cascade without process isolation."""

from __future__ import annotations

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import AnswerSchema, Label

from .equivalence import equivalent
from .extract import all_boxed, strip_reasoning
from .normalize import normalize
from .parse import ParseError, parse_answer
from .screen import screen

QUICK_MAX_CHARS = 20_000  # ~4 ms of box matching in the caller's event loop


def exact_match(response: str, gold: str) -> Verdict | None:
    """The cascade's first rule alone: ACCEPT when the last box is the gold after normalization,
    else None (undecided). Cheap enough to run before a round trip to a worker process: a final
    answer longer than QUICK_MAX_CHARS is left undecided unread (the worker has the time limit)."""
    text = strip_reasoning(response)
    if len(text) > QUICK_MAX_CHARS:
        return None
    boxes = all_boxed(text)
    if not boxes or screen(boxes[-1]):
        return None
    g = normalize(gold)
    return Verdict(Label.ACCEPT, "equivalent", boxes[-1]) if g and g == normalize(boxes[-1]) else None


def verify_inprocess(response: str, gold: str, *, extended: bool = False, note: str = "",
                     schema: AnswerSchema | None = None, problem: str = "") -> Verdict:
    """The cascade: reasoning strip -> last box -> normalize -> schema parse -> equivalence."""
    del note  # the release's grading notes are all "accept if equivalent"; nothing rule-bearing to read
    boxes = all_boxed(strip_reasoning(response))
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
    if equivalent(gold, pred, extended=extended, problem=problem):
        return Verdict(Label.ACCEPT, "equivalent", pred)
    if len(boxes) > 1:  # a compound answer spread over several boxes; the last box alone is partial
        for k in range(2, min(len(boxes), 6) + 1):
            joined = ", ".join(normalize(b) for b in boxes[-k:])
            if equivalent(gold, joined, extended=True, problem=problem):
                return Verdict(Label.ACCEPT, f"equivalent over {k} boxes", joined)
    return Verdict(Label.NOT_ACCEPT, "not equivalent", pred)
