"""Deterministic answer verifier, no LLM judge: three graders, `paper` (the release's default
cascade), `strict` (the default for new work) and `extended`.

Light to import: the names below load their modules (and with them SymPy, math-verify and the
worker pool) when first used, so `oracleladder.verify.normalize` or `.extract` alone stay pure
regex (the validators, the pool reader and the CLI's startup rely on that)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import answers_equivalent, verify, verify_many
    from .core import verify_inprocess
    from .graders import GRADER_VERSIONS, GRADERS, Verdict, grader_name
    from .parse import ParseError, infer_schema, parse_answer
    from .pool import GradingFailed, VerifierPool, VerifierUnavailable, shared_pool

_WHERE = {
    "verify": "api", "verify_many": "api", "answers_equivalent": "api",
    "GRADER_VERSIONS": "graders", "GRADERS": "graders", "Verdict": "graders", "grader_name": "graders",
    "verify_inprocess": "core",
    "ParseError": "parse", "infer_schema": "parse", "parse_answer": "parse",
    "GradingFailed": "pool", "VerifierPool": "pool", "VerifierUnavailable": "pool", "shared_pool": "pool",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:  # PEP 562: load a name's module on first use
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
