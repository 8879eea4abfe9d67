"""Deterministic answer verifier, no LLM judge: three graders, `paper` (the release's default
cascade), `strict` (the default for new work) and `extended`.

Light to import: the names below load their modules (and with them SymPy, math-verify and the
worker pool) when first used, so `oracleladder.verify.normalize` or `.extract` alone stay pure
regex (the validators, the pool reader and the CLI's startup rely on that)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .api import answers_equivalent, verify, verify_many
    from .core import verify_inprocess
    from .graders import GRADER_VERSIONS, GRADERS, Verdict, grader_name
    from .parse import ParseError, infer_schema, parse_answer
    from .pool import GradingFailed, VerifierPool, VerifierUnavailable, shared_pool

__getattr__ = lazy_names(__name__, {
    "verify": ".api", "verify_many": ".api", "answers_equivalent": ".api",
    "GRADER_VERSIONS": ".graders", "GRADERS": ".graders", "Verdict": ".graders", "grader_name": ".graders",
    "verify_inprocess": ".core",
    "ParseError": ".parse", "infer_schema": ".parse", "parse_answer": ".parse",
    "GradingFailed": ".pool", "VerifierPool": ".pool", "VerifierUnavailable": ".pool", "shared_pool": ".pool",
})

__all__ = ["GRADERS", "GRADER_VERSIONS", "GradingFailed", "ParseError", "Verdict", "VerifierPool",
           "VerifierUnavailable", "answers_equivalent", "grader_name", "infer_schema", "parse_answer", "shared_pool",
           "verify", "verify_inprocess", "verify_many"]
