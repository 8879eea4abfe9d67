"""The judge of a predicted primitive (§2.3, App. A.3; prompts of Fig. 8 and 9 as versioned files):
validity V first (generic, technique_name_only and computation_only are invalid), then, for a valid
one, gate and mechanism against the gold primitive with the reference solution, worded for the
gold's family (Table 6: RECAST, WITNESS, ARGUMENT).

Every judge call is asked through `clients.asking.ask_json` (the JSON format in the prompt, its reply
read into the models below): a reply that is not the JSON asked for is re-asked once (the reply
shown back); failing that, or when the call fails for good, the score is missing — counted apart,
never a 0. An unreadable student primitive is scored 0 without a call (the student's failure).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ..clients import Client
from ..clients.asking import REASK, Answer, ask_json
from ..prompts import load
from ..schemas.prim import PrimPrimitive
from .probe import labelled
from .scoring import AGREEMENT, score

PROMPTS = ("prim_judge_validity", "prim_judge_correctness", REASK)
ANSWER_PROMPTS = ("prim_answer_judge", REASK)
# the JSON each prompt asks for, as its re-ask names it again
ANSWER_FORMAT = '{"extracted_final_answer": "<the answer extracted, or None>", "correct": "yes"|"no", "reasoning": "<one short sentence>"}'
TAIL_CHARS = 12_000  # what the answer judge reads of a response: its end, where the answer is
VALIDITY_FORMAT = ('{"verdict": "valid"|"invalid", "failure": "none"|"generic"|"technique_name_only"|'
                   '"computation_only", "evidence": "<one short sentence>"}')
AGREEMENT_FORMAT = '{"agreement": "match"|"partial"|"mismatch", "evidence": "<one short sentence>"}'
FAILURES = ("none", "generic", "technique_name_only", "computation_only")


class Validity(BaseModel):
    """The validity judge's reply (Fig. 8): the verdict read strictly, the rest as given."""

    verdict: Literal["valid", "invalid"]
    failure: Any = None  # kept only when one of FAILURES
    evidence: Any = ""


class Agreement(BaseModel):
    """The gate's or the mechanism's reply (Fig. 9)."""

    agreement: Literal["match", "partial", "mismatch"]
    evidence: Any = ""


class AnswerReply(BaseModel):
    """The answer judge's reply."""

    correct: Literal["yes", "no"]
    extracted_final_answer: Any = ""
    reasoning: Any = ""


# per family: the gate's WHAT and the mechanism's HOW (Table 6, App. A.2), and what match, partial
# and mismatch mean for each
WORDING: dict[str, dict[str, tuple[str, str, str, str]]] = {
    "RECAST": {
        "GATE": ("the target setting Y into which the problem is moved (an equivalent reformulation, a hidden known "
                 "structure, a canonical target problem, a dual or representational viewpoint, or a named theorem)",
                 "the model recasts the problem into the same Y, or a provably equivalent one up to trivial restatement",
                 "the model identifies a coarser or weaker target setting",
                 "the model moves to a different setting, names the wrong theorem, or stays within the original framing"),
        "MECHANISM": ("how the target setting unlocks the solution: the reduction step actually used, or, for a "
                      "theorem, that its hypotheses hold",
                      "the model states how Y unlocks the problem (for a theorem, the hypotheses verified)",
                      "the model gestures at how Y helps without the operative step",
                      "the model gives no, or a wrong, account of how Y unlocks the problem"),
    },
    "WITNESS": {
        "GATE": ("the specific object the solution turns on: a construction, certificate, witness, extremal object, "
                 "invariant or monotone quantity",
                 "the model identifies the same object, or an equivalent one playing the identical role",
                 "the model names an object of the correct general kind without its decisive feature",
                 "the model names a different object, or none"),
        "MECHANISM": ("the object's decisive property: why the construction satisfies the constraint, why extremality "
                      "forces the conclusion, or why invariance forbids or forces the outcome",
                      "the model states the decisive property and why it forces the result",
                      "the model states a related property that is not the one driving the proof",
                      "the model gives no, or a wrong, decisive property"),
    },
    "ARGUMENT": {
        "GATE": ("the central claim the proof depends on: the obstruction the opposite assumption contradicts, or the "
                 "strengthened induction hypothesis",
                 "the model's reasoning hinges on the same load-bearing claim",
                 "the model states a related but loosely stated or under-strengthened claim",
                 "the model names only the proof style (by contradiction, by induction) or a different claim"),
        "MECHANISM": ("the logical step itself: why the opposite assumption violates the constraint, or how the "
                      "strengthened hypothesis closes the induction",
                      "the model states the logical step that closes the argument",
                      "the model states the step loosely or incompletely",
                      "the model gives no, or a wrong, logical step"),
    },
}


def prompt_version(names: tuple[str, ...] = PROMPTS) -> str:
    return "-".join(load(n).version for n in names)


def validity_messages(candidate: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": load("prim_judge_validity").render(candidate=labelled(candidate))}]


def correctness_messages(dim: str, family: str, problem: str, solution: str, gold: PrimPrimitive,
                         candidate: dict[str, str]) -> list[dict[str, str]]:
    dim_def, match, partial, mismatch = WORDING[family][dim]
    return [{"role": "user", "content": load("prim_judge_correctness").render(
        dim=dim, dim_def=dim_def, c_match=match, c_partial=partial, c_mismatch=mismatch, problem=problem,
        solution=solution, gold=gold.labelled(), candidate=labelled(candidate))}]


@dataclass
class Judgment:
    """The judge on one primitive: V, failure, gate, mechanism and score; ``missing`` says why
    there is no score (then the others are None)."""

    validity: int | None
    failure: str | None
    gate: float | None
    mechanism: float | None
    score: float | None
    missing: str
    evidence: dict[str, str]
    keys: list[str]


async def judge_primitive(client: Client, candidate: dict[str, str], gold: PrimPrimitive, problem: str,
                          solution: str, max_tokens: int) -> Judgment:
    """V, then (when valid) gate and mechanism at once, and the score."""
    v = await ask_json(client, validity_messages(candidate), Validity, max_tokens=max_tokens, prompted=VALIDITY_FORMAT)
    if v.reply is None:
        return Judgment(None, None, None, None, None, f"validity: {v.why}", {}, v.keys)
    evidence = {"validity": str(v.reply.evidence)}
    failure = v.reply.failure if v.reply.failure in FAILURES else None
    if v.reply.verdict == "invalid":
        return Judgment(0, failure, None, None, 0.0, "", evidence, v.keys)
    family = gold.family or "RECAST"  # a computation_only gold has no family: RECAST's wording, the most general
    gate, mech = await asyncio.gather(*(
        ask_json(client, correctness_messages(dim, family, problem, solution, gold, candidate), Agreement,
                 max_tokens=max_tokens, prompted=AGREEMENT_FORMAT) for dim in ("GATE", "MECHANISM")))
    keys = v.keys + gate.keys + mech.keys
    sigma: dict[str, float] = {}
    for name, asked in (("gate", gate), ("mechanism", mech)):
        if asked.reply is None:
            return Judgment(1, failure, None, None, None, f"{name}: {asked.why}", evidence, keys)
        evidence[name] = str(asked.reply.evidence)
        sigma[name] = AGREEMENT[asked.reply.agreement]
    return Judgment(1, failure, sigma["gate"], sigma["mechanism"], score(1, sigma["gate"], sigma["mechanism"]), "",
                    evidence, keys)


async def judge_answer(client: Client, question: str, response: str, answer: str,
                       max_tokens: int) -> Answer[AnswerReply]:
    """The answer judge (an exact-match judge, as HLE grades free-form answers) on one answer."""
    messages = [{"role": "user", "content": load("prim_answer_judge").render(
        question=question, response=response[-TAIL_CHARS:], answer=answer)}]
    return await ask_json(client, messages, AnswerReply, max_tokens=max_tokens, prompted=ANSWER_FORMAT)
