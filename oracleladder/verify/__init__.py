"""Deterministic answer verifier, no LLM judge: three graders, `paper` (the release's default
cascade), `strict` (the default for new work) and `extended`.

Light to import: the names below load their modules (and with them SymPy and math-verify) when first
used, so `oracleladder.verify.normalize` or `.extract` alone stay pure regex (the validators, the pool
reader and the CLI's startup rely on that). Grading runs in a worker pool (`oracleladder.workers`),
under the task name "verify" registered here: `grade(pool, response, gold)` awaits one answer in a
run's pool, `grade_all(pool, items)` grades many (`pool.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..workers import register_task

if TYPE_CHECKING:
    from .api import answers_equivalent, verify, verify_many
    from .core import verify_inprocess
    from .graders import GRADER_VERSIONS, GRADERS, Verdict, grader_name
    from .parse import ParseError, infer_schema, parse_answer
    from .pool import GradingFailed, grade, grade_all

register_task("verify", "oracleladder.verify.core:verify_inprocess")

__getattr__ = lazy_names(__name__, {
    "verify": ".api", "verify_many": ".api", "answers_equivalent": ".api",
    "GRADER_VERSIONS": ".graders", "GRADERS": ".graders", "Verdict": ".graders", "grader_name": ".graders",
    "verify_inprocess": ".core",
    "ParseError": ".parse", "infer_schema": ".parse", "parse_answer": ".parse",
    "GradingFailed": ".pool", "grade": ".pool", "grade_all": ".pool",
})

__all__ = ["GRADERS", "GRADER_VERSIONS", "GradingFailed", "ParseError", "Verdict", "answers_equivalent", "grade",
           "grade_all", "grader_name", "infer_schema", "parse_answer", "verify", "verify_inprocess", "verify_many"]
