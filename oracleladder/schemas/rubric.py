"""The paper's five-category rubric of an unrecovered or composition-gap family (Appendix S), shared by
the automated review (`audit.review`, Table 42) and the human audit (Table 39).

``CATEGORIES`` are in the fixed priority order that resolves two raters' disagreement (data-quality
explanations first). A ``RubricLabel`` is one reviewer's label of one family: its category, the
verifier and format error flags of Table 42 (a family with either is "flagged": a grading error, not a
composition failure), and the evidence; it is also the reply model the LLM reviewer must answer with.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["Verifier_Artifact", "Beyond_Capability", "Not_Standalone", "Decomposition_Incomplete",
                   "Genuine_Composition"]
CATEGORIES: tuple[str, ...] = get_args(Category)  # the priority order: the first one wins a disagreement


class RubricLabel(BaseModel):
    """One family labeled with the rubric."""

    model_config = ConfigDict(frozen=True)

    category: Category = Field(description="The rubric category of the family.")
    verifier_error: bool = Field(description="The reference answer is corrupted, malformed, ambiguous or wrong, "
                                             "or the grader rejected an answer that is correct.")
    format_error: bool = Field(description="The student's answer is right but written in a form the grader cannot "
                                           "read (no or several boxes, extra text, units), or the problem's own "
                                           "format defeats grading (a figure it depends on, a multi-part question "
                                           "with a single-value reference answer).")
    evidence: str = Field(description="One or two sentences quoting what the label rests on.")

    @property
    def flagged(self) -> bool:
        """A verifier or format error: Table 42 removes the family from the composition gap."""
        return self.verifier_error or self.format_error
