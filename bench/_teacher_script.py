r"""The scripted teacher of ``bench/compile.py``, and a tiny launcher that serves it from its own process.

``python -m oracleladder.testing.loopback`` takes no script, so the benchmark starts this module
instead; it builds the same ``LoopbackServer`` with ``script=teacher``:

    python bench/_teacher_script.py --latency 0.1 --port-file F

Problem ``i`` (see ``problem(i)``) asks for the sum of the real roots of ``x^2 - s x + p = 0`` whose
roots ``a, b`` are distinct for every ``i``, so no two problems share a request. The teacher:

* plan call, first attempt: for ``i % 3 == 0`` a plan that the deterministic validators reject
  (by turns a milestone leaking the parent answer, a non-atomic gold, a back-reference); else a
  valid plan (two tested milestones and the INTEGRATE step);
* plan call, re-ask (the validators' errors follow the first plan): the valid plan;
* any other call (the raw-aiohttp floor): ``ok``;
* independent-solve call: the milestone's gold from the milestone's own prompt, in ``\boxed{}``
  (with ``--spaced-every N``, for every N-th problem written with spaces, ``(x - 2)(x - 3) = 0``:
  equal only after parsing, so the verifier pool grades it with SymPy).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracleladder.testing.loopback import LoopbackServer  # noqa: E402


def roots(i: int) -> tuple[int, int]:
    return i + 2, 2 * i + 3


def problem(i: int) -> dict[str, str]:
    a, b = roots(i)
    return {"pid": f"q{i:05d}", "problem": f"Find the sum of the real roots of $x^2-{a + b}x+{a * b}=0$.",
            "answer": str(a + b)}


def failing(i: int) -> bool:
    return i % 3 == 0


def _m(type_: str, schema: str, description: str, gold: str) -> dict[str, str]:
    return {"type": type_, "answer_schema": schema, "description": description, "canonical_answer": gold}


def good_plan(s: int, p: int) -> dict[str, Any]:
    a, b = _roots_of(s, p)
    eq = f"x^2-{s}x+{p}=0"
    return {"milestones": [
        _m("MODEL", "EQUATION", f"Factor the left side of {eq}. Output the factored equation.", f"(x-{a})(x-{b})=0"),
        _m("COMPUTE", "SET", f"Solve the equation (x-{a})(x-{b})=0 for real x. Output the solution set.",
           f"\\{{{a},{b}\\}}"),
        _m("INTEGRATE", "NUMBER", f"Add the real roots of {eq}.", str(s)),
    ]}


def bad_plan(s: int, p: int, kind: int) -> dict[str, Any]:
    a, b = _roots_of(s, p)
    eq = f"x^2-{s}x+{p}=0"
    plan = good_plan(s, p)
    if kind == 0:  # leak: a milestone whose gold is the parent answer
        plan["milestones"][0] = _m("COMPUTE", "NUMBER", f"Compute the sum of the roots of {eq}. Output the sum.", str(s))
    elif kind == 1:  # atomicity: prose in the gold
        plan["milestones"][0] = _m("MODEL", "EXPR", f"Find one root of {eq}. Output the root.",
                                   f"x = {a}, so the other root is {b}")
    else:  # standalone: refers to another step
        plan["milestones"][1] = _m("COMPUTE", "SET", f"Using the previous milestone, list all roots of {eq}. "
                                   "Output the set.", f"\\{{{a},{b}\\}}")
    return plan


def _roots_of(s: int, p: int) -> tuple[int, int]:
    d = int(round((s * s - 4 * p) ** 0.5))
    return (s - d) // 2, (s + d) // 2


SPACED_EVERY = 0  # --spaced-every N: problems i % N == 0 get solve answers equal to the gold only up to spacing

_EQ = re.compile(r"x\^2-(\d+)x\+(\d+)=0")
_DESC = re.compile(r"Milestone:\n(.*?)\n\nOutput instruction", re.S)


def teacher(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
    first = str(messages[0].get("content", ""))
    if "Mathematics Mentor" in first:  # a plan call
        user = str(messages[1]["content"])
        s, p = map(int, _EQ.search(user).groups())  # type: ignore[union-attr]
        a, _ = _roots_of(s, p)
        i = a - 2
        if len(messages) > 2 or not failing(i):  # a re-ask, or a problem that passes at once
            return json.dumps(good_plan(s, p))
        return json.dumps(bad_plan(s, p, (i // 3) % 3))
    # the independent solve: the milestone's gold, from its own prompt
    prompt = str(messages[-1]["content"])
    eq = _EQ.search(prompt)
    if eq is None:  # a plain call of the raw-aiohttp floor that bench/compile.py measures first
        return "ok"
    s, p = map(int, eq.groups())
    a, b = _roots_of(s, p)
    description = _DESC.search(prompt).group(1)  # type: ignore[union-attr]
    spaced = SPACED_EVERY > 0 and (a - 2) % SPACED_EVERY == 0
    if description.startswith("Factor"):
        gold = f"(x - {a})(x - {b}) = 0" if spaced else f"(x-{a})(x-{b})=0"
    elif description.startswith("Solve"):
        gold = f"\\{{{a}, {b}\\}}" if spaced else f"\\{{{a},{b}\\}}"
    else:
        gold = str(s)
    return f"The roots are {a} and {b}, so the answer is \\boxed{{{gold}}}."


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="loopback server answering with the bench's scripted teacher")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--max-lifetime", type=float, default=900.0)
    ap.add_argument("--port-file", default=None)
    ap.add_argument("--spaced-every", type=int, default=0)
    a = ap.parse_args(argv)
    global SPACED_EVERY
    SPACED_EVERY = a.spaced_every
    LoopbackServer(script=teacher, latency=a.latency, port=a.port, max_lifetime=a.max_lifetime).serve(a.port_file)

if __name__ == "__main__":
    main()
