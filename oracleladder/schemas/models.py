"""Pydantic models of the data that flows through the toolkit.

Families keep the OracleLadder release's record fields under their released names, so that
import followed by export gives back every record field for field; provenance that the release
does not carry (teacher, prompt hash, granularity, attempts) lives beside them and is written
only by our own exports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .types import AnswerSchema, GradeStatus, Label, MilestoneType

DEFAULT_NOTE = "ACCEPT IF equivalent final answer is present."


class MathProblem(BaseModel):
    """One parent problem given to the teacher."""

    pid: str
    problem: str
    answer: str
    solution: str | None = None
    choices: dict[str, str] | None = None  # multiple-choice options by letter, when the problem has them


class CodeTest(BaseModel):
    """A stdin/stdout case (LiveCodeBench style)."""

    input: str
    output: str


class CodeProblem(BaseModel):
    """A code-generation parent: stdin/stdout cases or a HumanEval-style test function."""

    pid: str
    statement: str
    entry_point: str | None = None  # function problems name the function under test
    tests: list[CodeTest] = Field(default_factory=list)
    test_code: str | None = None  # HumanEval `check(candidate)` source
    reference: str | None = None


class Milestone(BaseModel):
    """A standalone sub-goal with a checkable gold answer (released fields first)."""

    model_config = ConfigDict(use_enum_values=False)

    prompt: str
    answer: str
    note: str = DEFAULT_NOTE
    type: MilestoneType
    pre_train_phat: float | None = None
    # Compiled milestones also know their schema and the bare description the teacher wrote.
    answer_schema: AnswerSchema | None = None
    description: str | None = None


class Provenance(BaseModel):
    """Where a family came from: a teacher run here, or the release."""

    source: str = "release"  # "release" or the teacher model string
    prompt_hash: str | None = None
    granularity: Literal["coarse", "default", "fine"] | None = None
    attempts: int | None = None
    teacher_prompt: str | None = None  # the teacher prompt's name (toolkit, paper); None: not compiled here

    @property
    def prompt_label(self) -> str | None:
        """The teacher prompt's name and hash, e.g. "paper (1a2b3c4d5e6f-...)"; None when not compiled here."""
        return None if self.teacher_prompt is None else f"{self.teacher_prompt} ({self.prompt_hash})"

    @property
    def roadmap_set(self) -> str:
        """The name of the set this family belongs to: `source`, or `source@coarse|fine`."""
        return self.source if self.granularity in (None, "default") else f"{self.source}@{self.granularity}"


def parse_roadmap_set(name: str) -> tuple[str, str | None]:
    """`openai/gpt-5.4@fine` -> ("openai/gpt-5.4", "fine"); a bare source leaves granularity open."""
    source, _, granularity = name.partition("@")
    if granularity and granularity not in ("coarse", "default", "fine"):
        raise ValueError(f"unknown granularity '{granularity}' in '{name}'; known: coarse, default, fine")
    return source, granularity or None


PrimitiveSource = Literal["teacher", "teacher-primitives-only", "key-move-fallback"]


class Primitive(BaseModel):
    """The key idea the solution turns on (the PRIM paper's primitive: a structural insight, not a step
    and not a value), shown to the student in C2-primitive. ``provenance`` says who wrote it: the
    teacher with the roadmap, the teacher asked for it alone (`ladder compile --primitives-only`), or
    the documented fallback, a KEY_MOVE milestone's description."""

    text: str
    provenance: PrimitiveSource
    teacher: str | None = None  # the model that wrote it (None for the fallback)
    prompt_hash: str | None = None


class Family(BaseModel):
    """A milestone family: tested milestones plus the private INTEGRATE step."""

    pid: str
    parent_prompt: str
    parent_answer: str
    parent_note: str = DEFAULT_NOTE
    milestones: list[Milestone]
    parent_answer_corrected: str | None = None
    correction_note: str | None = None
    milestone_gold_invalid: list[int] | None = None
    integrate: Milestone | None = None  # produced by the teacher, never shown to students
    provenance: Provenance = Field(default_factory=Provenance)
    primitive: Primitive | None = None  # not a released field: written by our compile and exports only
    # Not a released field: the milestones the leak rule drops (Appendix N, P.1: a gold the verifier
    # accepts as the reference answer or its correction; on import also a description or prompt that
    # states it), set where the family enters the store (`validators.leak.leaking_milestones`,
    # `experiment.files.with_leaks_left_out`); None for a family stored before it was.
    leaking: list[int] | None = None

    def reference_answer(self, use_corrections: bool = False) -> str:
        if use_corrections and self.parent_answer_corrected is not None:
            return self.parent_answer_corrected
        return self.parent_answer

    def tested(self, use_corrections: bool = False, keep_leaking: bool = False) -> list[tuple[int, Milestone]]:
        """Tested milestones with their index: the leak rule drops the ``leaking`` ones (unless
        ``keep_leaking``: to replicate a run that kept them), corrections those whose gold is invalid."""
        dropped = set(self.milestone_gold_invalid or []) if use_corrections else set()
        dropped |= set() if keep_leaking else set(self.leaking or [])
        return [
            (i, m)
            for i, m in enumerate(self.milestones)
            if m.type is not MilestoneType.INTEGRATE and i not in dropped
        ]


class Correction(BaseModel):
    """One record of the release's corrections.jsonl: a defective reference answer (``field``
    "parent_answer", ``corrected`` the right one) or wrong milestone golds (``field``
    "milestones[0,1,3].answer", ``corrected`` null: marked invalid), with the evidence."""

    pid: str
    field: str
    original: str | list[str]
    corrected: str | list[str] | None
    evidence: str


RELEASED_FAMILY_FIELDS = (
    "pid",
    "parent_prompt",
    "parent_answer",
    "parent_note",
    "milestones",
    "parent_answer_corrected",
    "correction_note",
    "milestone_gold_invalid",
)
RELEASED_MILESTONE_FIELDS = ("prompt", "answer", "note", "type", "pre_train_phat")


def one_roadmap_set(name: str, families: Sequence[Family]) -> None:
    """Refuses (ValueError naming each set) a bare source ``name`` whose families are of more than one
    granularity: `TEACHER` compiled at the default and at fine is two sets, never pooled."""
    found = sorted({f.provenance.granularity or "default" for f in families})
    if len(found) > 1:
        sets = ", ".join(f"{name}@{g}" for g in found)
        raise ValueError(f"'{name}' names {len(found)} roadmap sets, {sets}, which are never pooled: give one of them")


def teacher_prompts(families: Sequence[Family]) -> list[str]:
    """The teacher prompts (name and hash) the families were compiled with; none for imported ones."""
    return sorted({label for f in families if (label := f.provenance.prompt_label) is not None})


def to_released(family: Family) -> dict[str, Any]:
    """The release's record for a family: its fields only, absent optional fields left out."""
    record = family.model_dump(mode="json", include=set(RELEASED_FAMILY_FIELDS), exclude_none=True)
    record["milestones"] = [
        m.model_dump(mode="json", include=set(RELEASED_MILESTONE_FIELDS), exclude_none=True)
        for m in family.milestones
    ]
    return {k: record[k] for k in RELEASED_FAMILY_FIELDS if k in record}


class CheckResult(BaseModel):
    """One validator's verdict on one milestone or family."""

    check: str
    passed: bool
    reason: str = ""
    milestone: int | None = None  # index into Family.milestones; None for family-level checks


class FamilyReport(BaseModel):
    """Every check run on one family."""

    pid: str
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]


@dataclass(frozen=True)
class Verdict:
    """The verifier's decision on one response (a dataclass: cheap to send between processes)."""

    label: Label
    reason: str
    extracted: str | None = None
    status: GradeStatus = GradeStatus.GRADED

    @property
    def accepted(self) -> bool:
        return self.label is Label.ACCEPT

    @property
    def graded(self) -> bool:
        """False when grading failed: the label then says nothing about the student."""
        return self.status is not GradeStatus.UNGRADED


class Rollout(BaseModel):
    """One student attempt at a milestone (stage0) or a parent condition, with its verdict."""

    run_id: str
    student: str
    pid: str
    target: str  # a condition name, or "m<index>" for a Stage 0 milestone
    k: int
    call_key: str
    response: str
    verdict: Verdict
    source: str = "release"  # the roadmap set (family source) the rollout probed
