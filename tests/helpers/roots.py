"""One problem, the sum of the real roots of x^2-5x+6=0, and what a scripted teacher answers for it in
the compile tests: GOOD passes every check; BAD fails three (it gives the parent answer away, has prose
in a gold, and refers to the previous milestone); ``solve`` answers an independent solve of a GOOD
milestone right."""

from __future__ import annotations

import re

from oracleladder.schemas import MathProblem

PROBLEM = MathProblem(pid="roots", problem="Find the sum of the real roots of $x^2-5x+6=0$.", answer="5")


def milestone(type_: str, schema: str, description: str, gold: str) -> dict:
    """A milestone as the teacher writes it (the TeacherPlan's JSON)."""
    return {"type": type_, "answer_schema": schema, "description": description, "canonical_answer": gold}


GOOD = {"milestones": [
    milestone("MODEL", "EQUATION", "Factor the left side of x^2-5x+6=0. Output the factored equation.", "(x-2)(x-3)=0"),
    milestone("COMPUTE", "SET", "Solve the equation (x-2)(x-3)=0 for real x. Output the solution set.", "\\{2,3\\}"),
    milestone("INTEGRATE", "NUMBER", "Add the real roots of x^2-5x+6=0.", "5"),
]}
BAD = {"milestones": [
    milestone("COMPUTE", "NUMBER", "Compute the sum of the roots of x^2-5x+6=0. Output the sum.", "5"),
    milestone("MODEL", "EXPR", "Find one root of x^2-5x+6=0. Output the root.", "x = 2, so the other root is 3"),
    milestone("LEMMA", "SET", "Using the previous milestone, list all roots of x^2-5x+6=0. Output the set.",
              "\\{2,3\\}"),
    milestone("INTEGRATE", "NUMBER", "Add the roots.", "5"),
]}


def asks_plan(messages: list[dict]) -> bool:
    """Whether a request asks the math teacher for a plan (else it is an independent solve)."""
    return "Mathematics Mentor" in messages[0]["content"]


def solve(messages: list[dict]) -> str:
    """The right answer, boxed, to an independent solve of one of GOOD's milestones."""
    description = re.search(r"Milestone:\n(.*?)\n\nOutput instruction", messages[-1]["content"], re.S).group(1)
    answer = next(m["canonical_answer"] for m in GOOD["milestones"] if m["description"] == description)
    return f"\\boxed{{{answer}}}"
