"""The automated rubric review of the composition gap (paper Appendix S.1, Table 42).

An LLM reviewer (prompt ``prompts/audit_review.txt``) reads each distinct composition-gap family of the
students once (the paper's 253 families, each label carried to every model that has the family in the
gap): the problem and its reference answer, the roadmap with its golds, a student's Stage 0 attempts and
its attempts at the parent (the grader's verdict and extracted answer of each, and the end of each
parent response), and labels it with the rubric (`schemas.rubric.RubricLabel`: a category, the
verifier and format error flags, the evidence). Every call goes through the cached client at
temperature 0, as a structured call with `RubricLabel` its reply (`clients.asking.ask_json`): a reply that
is not the JSON asked for is re-asked once with the reply shown back, and failing that the family is
unreviewed, never a category. Table 42
(`report.tables.review_row`) removes the flagged families from the category.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domains.math.prompts import description
from ..prompts import load
from ..schemas.conditions import LADDER
from ..schemas.models import Family, Rollout

PROMPT = "audit_review"
TAIL_CHARS = 1_500  # what the reviewer reads of each parent attempt: its end, where the answer is


def prompt_version() -> str:
    return f"{PROMPT}@{load(PROMPT).version}"


def _verdict(r: Rollout) -> str:
    return f"{r.verdict.label.value} ({r.verdict.reason}); extracted: {r.verdict.extracted or 'nothing'}"


def review_messages(family: Family, rollouts: Sequence[Rollout]) -> list[dict[str, str]]:
    """What the reviewer reads of one family and one student's attempts on it."""
    by_target: dict[str, list[Rollout]] = {}
    for r in sorted(rollouts, key=lambda r: (r.target, r.k)):
        by_target.setdefault(r.target, []).append(r)
    tested = family.tested()
    roadmap = "\n".join(f"m{i}: {description(m)}\n    gold answer: {m.answer}" for i, m in tested)
    stage0 = "\n".join(f"m{i}, attempt {r.k + 1}: {_verdict(r)}" for i, _ in tested
                       for r in by_target.get(f"m{i}", [])) or "(none stored)"
    parent = "\n".join(f"{LADDER[c].short}, attempt {r.k + 1}: {_verdict(r)}\n    end of the response: "
                       f"<<<{r.response[-TAIL_CHARS:]}>>>" for c in LADDER.parent_probes for r in by_target.get(c, [])) \
        or "(none stored)"
    prompt = load(PROMPT).render(problem=family.parent_prompt, reference=family.parent_answer, roadmap=roadmap,
                                 milestone_attempts=stage0, parent_attempts=parent)
    return [{"role": "user", "content": prompt}]
