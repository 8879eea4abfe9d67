"""The teacher's code packet (paper Appendix O): a plan, helper functions, a full gold program.

Structural rules (>= 2 asserts, signature matches gold, ...) are checked by
`oracleladder.code.validate`, not by the model, so that a malformed packet still parses and its
errors can go back to the teacher.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from ...ladder.contract import at_most

# Bounds of a packet (`at_most`): each helper and assert runs in the sandbox. Far above the 2 to 4
# helpers the prompt asks for, and a few asserts each.
MAX_HELPERS = 12
MAX_ASSERTS = 20


class Helper(BaseModel):
    """One helper function: the code counterpart of a milestone."""

    name: str
    signature: str = Field(description="the def line, e.g. 'def count_pairs(a: list[int], k: int) -> int:'")
    docstring: str
    asserts: Annotated[list[str], at_most(MAX_ASSERTS, "asserts")] = Field(
        default_factory=list, description="at least 2 `assert ...` statements")
    gold: str = Field(description="gold implementation: the full def, signature included")


class CodePacket(BaseModel):
    plan: str
    helpers: Annotated[list[Helper], at_most(MAX_HELPERS, "helpers")]
    program: str = Field(description="full gold program solving the parent problem")

    def roadmap(self) -> str:
        """C2 view: the plan plus helper signatures and docstrings (no gold code)."""
        parts = [self.plan.strip(), ""]
        for h in self.helpers:
            sig = h.signature.strip()
            parts.append(f"{sig}\n    \"\"\"{h.docstring.strip()}\"\"\"\n")
        return "\n".join(parts)

    def gold_helpers(self) -> str:
        """C3 view: the verified gold helper implementations."""
        return "\n\n".join(h.gold.strip() for h in self.helpers) + "\n"
