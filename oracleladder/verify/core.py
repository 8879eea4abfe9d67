"""One verification, in the calling process: the cascade without process isolation."""

from __future__ import annotations

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import AnswerSchema, Label

from .equivalence import compound_answers, equivalent, paper_equivalent
from .extract import all_boxed, strip_reasoning
from .graders import grader_name
from .normalize import decode_byte_bpe
from .parse import ParseError, parse_answer
from .screen import screen


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
    for k, joined in compound_answers(gold, boxes):  # an answer spread over boxes; the last alone is partial
        try:
            same = equivalent(gold, joined, extended=True, problem=problem)
        except Exception:  # noqa: BLE001 - SymPy raises on some objects a join makes: that join fails, not the verdict
            continue
        if same:
            return Verdict(Label.ACCEPT, f"equivalent over {k} boxes", joined)
    return Verdict(Label.NOT_ACCEPT, "not equivalent", pred)
