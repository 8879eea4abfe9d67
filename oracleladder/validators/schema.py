"""Schema check: the gold answer parses under its declared (or inferred) answer schema."""

from __future__ import annotations

from oracleladder import verify
from oracleladder.schemas.models import CheckResult, Milestone

from ._fast import schema_ok

CHECK = "schema"


def check_schema(m: Milestone, index: int | None = None) -> CheckResult:
    gold = m.answer
    if not gold.strip():
        return CheckResult(check=CHECK, passed=False, milestone=index,
                           reason="gold answer is empty; give one value in the declared schema")
    declared = m.answer_schema is not None
    try:
        schema = m.answer_schema if m.answer_schema is not None else verify.infer_schema(gold)
    except Exception as exc:  # noqa: BLE001 - any inference failure is a schema failure
        return CheckResult(check=CHECK, passed=False, milestone=index,
                           reason=f"cannot infer an answer schema for gold {gold!r}: {exc}")
    how = "declared" if declared else "inferred"
    if schema_ok(gold, schema):  # the common simple golds, without the LaTeX parser (_fast.py)
        return CheckResult(check=CHECK, passed=True, milestone=index,
                           reason=f"parses as {how} schema {schema.value}")
    try:
        verify.parse_answer(gold, schema)
    except (verify.ParseError, ValueError) as exc:
        return CheckResult(check=CHECK, passed=False, milestone=index,
                           reason=f"gold {gold!r} does not parse as its {how} schema {schema.value}: {exc}; "
                                  f"rewrite it as a plain LaTeX {schema.value} or declare the right schema")
    except Exception as exc:  # noqa: BLE001 - parser crashes (sympy) count as parse failures
        return CheckResult(check=CHECK, passed=False, milestone=index,
                           reason=f"parser crashed on gold {gold!r} as {schema.value}: {type(exc).__name__}: {exc}")
    return CheckResult(check=CHECK, passed=True, milestone=index,
                       reason=f"parses as {how} schema {schema.value}")
