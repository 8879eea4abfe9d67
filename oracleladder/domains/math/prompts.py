"""Student-facing messages for Stage 0 and the parent conditions (paper Appendix C): each condition's
template and what it is filled with are its declaration (`schemas.conditions.LADDER`).

Controls take their substitute content from *other* families of the same set, drawn with a
recorded seed, so a rerun builds the same prompts and the control never shows the family's own
roadmap or answers.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence

from ...prompts import load
from ...schemas import LADDER, Condition, Family, Milestone
from ...schemas.conditions import DONOR_SHOWS

SYSTEM = "student_system"  # every student message's system turn, Stage 0's too
_MILESTONE_BODY = re.compile(r"\nMilestone:\n(.*?)\n\nOutput instruction:", re.S)


def description(milestone: Milestone) -> str:
    """The sub-goal text: the compiled description, or the body of a released milestone prompt."""
    if milestone.description:
        return milestone.description
    match = _MILESTONE_BODY.search(milestone.prompt)
    return match.group(1).strip() if match else milestone.prompt.strip()


def messages(user: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": load(SYSTEM).text.strip()},
        {"role": "user", "content": user},
    ]


def versions(conditions: Sequence[Condition], *, system: bool = True) -> dict[str, str]:
    """The templates the student messages of Stage 0 and ``conditions`` are written with, name -> version
    (what a probe run records: a report never pools two versions); the system prompt's only where it
    is sent (``system``: not under `probe --no-system-prompt`)."""
    names = {*(LADDER[c].template for c in conditions), *((SYSTEM,) if system else ())}
    return {n: load(n).version for n in sorted(names)}


def stage0_prompt(milestone: Milestone) -> list[dict[str, str]]:
    return messages(milestone.prompt)


def seeded_rng(seed: int, pid: str, condition: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{pid}:{condition}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def borrows_milestones(condition: Condition) -> bool:
    """Whether the condition shows another family's milestones (C2-random its descriptions, C3-mismatched its
    answers)."""
    return LADDER[condition].shows in DONOR_SHOWS


def donor_pool(family: Family, pool: Sequence[Family], keep_leaking: bool = False) -> list[Family]:
    others = [f for f in pool if f.pid != family.pid and f.tested(keep_leaking=keep_leaking)]
    if not others:
        raise ValueError("control conditions need at least one other family with milestones in the set")
    return others


def roadmap_text(descriptions: Sequence[str], answers: Sequence[str] | None = None) -> str:
    if answers is None:
        return "\n\n".join(f"Sub-goal {i}: {d}" for i, d in enumerate(descriptions, 1))
    return "\n\n".join(f"Sub-goal {i}: {d}\n\nAnswer: {a}" for i, (d, a) in enumerate(zip(descriptions, answers), 1))


def condition_prompt(
    family: Family, condition: Condition, pool: Sequence[Family], *, seed: int = 0, use_corrections: bool = False,
    keep_leaking: bool = False,
) -> tuple[list[dict[str, str]], list[str]]:
    """Messages for one parent condition, and the pids whose content a control borrowed; the roadmaps
    shown are the tested milestones after the leak rule (``keep_leaking``: all of them)."""
    tested = [m for _, m in family.tested(use_corrections, keep_leaking)]
    own = [description(m) for m in tested]
    parent = family.parent_prompt
    if condition not in LADDER:
        raise ValueError(f"unknown condition {condition!r}")
    borrowed: list[str] = []
    spec = LADDER[condition]
    template = load(spec.template)
    if spec.shows == "parent":
        user = template.render(parent_prompt=parent)
    elif spec.shows == "roadmap":
        user = template.render(parent_prompt=parent, subgoals=roadmap_text(own))
    elif spec.shows == "roadmap+answers":
        golds = [m.answer for m in tested]
        user = template.render(parent_prompt=parent, subgoals=roadmap_text(own, golds))
    elif spec.shows == "donor roadmap":
        donor = seeded_rng(seed, family.pid, condition).choice(donor_pool(family, pool, keep_leaking))
        borrowed = [donor.pid]
        foreign = [description(m) for _, m in donor.tested(use_corrections, keep_leaking)]
        user = template.render(parent_prompt=parent, subgoals=roadmap_text(foreign))
    elif spec.shows == "roadmap+donor answers":
        rng = seeded_rng(seed, family.pid, condition)
        others = donor_pool(family, pool, keep_leaking)
        answers = []
        for _ in tested:
            donor = rng.choice(others)
            answers.append(rng.choice([m for _, m in donor.tested(use_corrections, keep_leaking)]).answer)
            borrowed.append(donor.pid)
        user = template.render(parent_prompt=parent, subgoals=roadmap_text(own, answers))
    else:
        raise ValueError(f"condition {condition!r} shows a primitive: `primitive.primitive_prompt` writes it")
    return messages(user), borrowed
