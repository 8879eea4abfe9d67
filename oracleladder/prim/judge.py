"""The judge of a predicted primitive (§2.3, App. A.3; prompts of Fig. 8 and 9 as versioned files):
validity V first (generic, technique_name_only and computation_only are invalid), then, for a valid
one, gate and mechanism against the gold primitive with the reference solution, worded for the
gold's family (Table 6: RECAST, WITNESS, ARGUMENT).

Every judge call goes through the cached client at temperature 0. A reply that is not the JSON asked
for is re-asked once (the reply shown back); failing that, or when the call fails for good, the
score is missing — counted apart, never a 0. An unreadable student primitive is scored 0 without a
call (the student's failure).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from ..clients import Client, ProviderError
from ..clients.errors import endpoint_failure
from ..prompts import load
from ..schemas.prim import PrimPrimitive
from .probe import labelled
from .scoring import AGREEMENT, score

PROMPTS = ("prim_judge_validity", "prim_judge_correctness", "prim_judge_reask")
ANSWER_PROMPTS = ("prim_answer_judge", "prim_judge_reask")
ANSWER_FORMAT = '{"extracted_final_answer": "<the answer extracted, or None>", "correct": "yes"|"no", "reasoning": "<one short sentence>"}'
TAIL_CHARS = 12_000  # what the answer judge reads of a response: its end, where the answer is
VALIDITY_FORMAT = ('{"verdict": "valid"|"invalid", "failure": "none"|"generic"|"technique_name_only"|'
                   '"computation_only", "evidence": "<one short sentence>"}')
AGREEMENT_FORMAT = '{"agreement": "match"|"partial"|"mismatch", "evidence": "<one short sentence>"}'
FAILURES = ("none", "generic", "technique_name_only", "computation_only")

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
_OBJECT = re.compile(r"\{[^{}]*\}")


def prompt_version(names: tuple[str, ...] = PROMPTS) -> str:
    return "-".join(load(n).version for n in names)


def read_reply(text: str, key: str, allowed: tuple[str, ...]) -> dict | None:
    """The last JSON object of ``text`` whose ``key`` is one of ``allowed``; None when there is none."""
    for raw in reversed(_OBJECT.findall(text or "")):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get(key) in allowed:
            return obj
    return None


def validity_messages(candidate: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": load("prim_judge_validity").render(candidate=labelled(candidate))}]


def correctness_messages(dim: str, family: str, problem: str, solution: str, gold: PrimPrimitive,
                         candidate: dict[str, str]) -> list[dict[str, str]]:
    dim_def, match, partial, mismatch = WORDING[family][dim]
    return [{"role": "user", "content": load("prim_judge_correctness").render(
        dim=dim, dim_def=dim_def, c_match=match, c_partial=partial, c_mismatch=mismatch, problem=problem,
        solution=solution, gold=gold.labelled(), candidate=labelled(candidate))}]


@dataclass
class Asked:
    """One judgment: the reply read (None: missing), why it is missing, the calls made."""

    reply: dict | None
    why: str
    keys: list[str]


async def ask(client: Client, messages: list[dict[str, str]], key: str, allowed: tuple[str, ...], fmt: str,
              max_tokens: int) -> Asked:
    """Ask, and once more with the reply shown back when it is not the JSON asked for."""
    keys: list[str] = []
    for _ in range(2):
        request = client.request(messages, temperature=0.0, max_tokens=max_tokens)
        keys.append(request.key())
        try:
            result = await client.complete(request)
        except ProviderError as exc:
            if endpoint_failure(exc):
                raise
            # a permanent failure, or a call --max-cost refused (BudgetReached): a rerun asks it again
            return Asked(None, f"judge call failed: {type(exc).__name__}", keys)
        reply = read_reply(result.text, key, allowed)
        if reply is not None:
            return Asked(reply, "", keys)
        messages = [*messages, {"role": "assistant", "content": result.text or ""},
                    {"role": "user", "content": load("prim_judge_reask").render(format=fmt)}]
    return Asked(None, "not the JSON asked for, twice", keys)


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
    v = await ask(client, validity_messages(candidate), "verdict", ("valid", "invalid"), VALIDITY_FORMAT, max_tokens)
    if v.reply is None:
        return Judgment(None, None, None, None, None, f"validity: {v.why}", {}, v.keys)
    evidence = {"validity": str(v.reply.get("evidence", ""))}
    failure = v.reply.get("failure") if v.reply.get("failure") in FAILURES else None
    if v.reply["verdict"] == "invalid":
        return Judgment(0, failure, None, None, 0.0, "", evidence, v.keys)
    family = gold.family or "RECAST"  # a computation_only gold has no family: RECAST's wording, the most general
    gate, mech = await asyncio.gather(*(
        ask(client, correctness_messages(dim, family, problem, solution, gold, candidate), "agreement",
            tuple(AGREEMENT), AGREEMENT_FORMAT, max_tokens) for dim in ("GATE", "MECHANISM")))
    keys = v.keys + gate.keys + mech.keys
    for name, asked in (("gate", gate), ("mechanism", mech)):
        if asked.reply is None:
            return Judgment(1, failure, None, None, None, f"{name}: {asked.why}", evidence, keys)
        evidence[name] = str(asked.reply.get("evidence", ""))
    g, m = AGREEMENT[gate.reply["agreement"]], AGREEMENT[mech.reply["agreement"]]  # type: ignore[index]
    return Judgment(1, failure, g, m, score(1, g, m), "", evidence, keys)


async def judge_answer(client: Client, question: str, response: str, answer: str, max_tokens: int) -> Asked:
    """The answer judge (an exact-match judge, as HLE grades free-form answers) on one answer."""
    messages = [{"role": "user", "content": load("prim_answer_judge").render(
        question=question, response=response[-TAIL_CHARS:], answer=answer)}]
    return await ask(client, messages, "correct", ("yes", "no"), ANSWER_FORMAT, max_tokens)
