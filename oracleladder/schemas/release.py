"""Record models of the release's audit and comparator files (its ``data/``): each model is its file's
contract, and a record that does not fit is one `InputError` naming the file and line (`schemas.jsonl`).

The release's ``croissant.json`` describes two record sets (``milestone_family``, ``oracle_panel_record``)
and its README the family and oracle panel records; neither spells the fields of these files. So each
model here names the fields the toolkit reads, as the paper describes each file (Appendix H and S), and
ignores any other field a record carries:

- ``audit_rater_a.jsonl``, ``audit_rater_b.jsonl``, ``human_validation.jsonl``: `RaterLabel`, one rater's
  rubric category of one audited family (and the rater's one-line reason);
- ``audit_consensus.jsonl``: `ConsensusLabel`, the category the priority rule resolved to, with each
  rater's where the file carries them;
- ``math_hard100_panel.jsonl``, ``math_hard100_panel_16k.jsonl``: `ComparatorRecord`, one model's correct
  attempts of k at one MATH hard-100 problem (``pid``: its MATH problem ID).

The oracle re-runs after repair (``oracle_leak_safe_repair.jsonl``, ``oracle_repaired.jsonl``) are in the
oracle panel's record (`experiment.panels.PanelRecord`), and ``repaired_verifier.jsonl`` holds families in
the released family record (`schemas.models.Family`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .rubric import Category


class RaterLabel(BaseModel):
    """One rater's label of one audited family: a category of the rubric, spelled as the paper spells it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    pid: str = Field(min_length=1)
    category: Category
    reason: str = ""


class ConsensusLabel(RaterLabel):
    """One audited family's resolved category (``category``) and each rater's, where given."""

    rater_a: Category | None = None
    rater_b: Category | None = None


class ComparatorRecord(BaseModel):
    """One model's attempts at one problem of the external comparator (MATH hard-100): n_correct of k."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str = Field(min_length=1)
    pid: str = Field(min_length=1)
    n_correct: int
    k: int

    @model_validator(mode="after")
    def _a_count(self) -> ComparatorRecord:
        if not 0 <= self.n_correct <= self.k or self.k < 1:
            raise ValueError(f"n_correct {self.n_correct} of k {self.k} is no count")
        return self
