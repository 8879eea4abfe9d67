"""math-verify's LaTeX parser (latex2sympy2_extended's ANTLR grammar) run the two-stage way ANTLR
recommends: SLL prediction first, full LL only when SLL reports a syntax error. ANTLR guarantees that
SLL either gives the parse tree LL gives or reports an error (`antlr4.atn.PredictionMode.SLL`), so
every answer parses to the same object (tests/verify/test_latex.py checks it on the real answers);
LL's full-context prediction, which is never cached, was about half of the parser's time on the
released responses (docs/benchmarks.md). Each number's text is also read into SymPy once per process
(the parser reads it with SymPy's expression parser: ~0.25 ms, a sixth of the strict grader's CPU).

Only this package's parses take these ways (`sll_first()`): another caller of math-verify in the
same process (a benchmark's bare math-verify) keeps the parser as shipped."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2

_LL_PARSER = latex2sympy2.PSParser
_scope = threading.local()


class _SllFirstParser(_LL_PARSER):  # type: ignore[misc, valid-type]
    def math(self) -> Any:
        if not getattr(_scope, "on", False):
            return super().math()
        # lex it all first: a lexer error raises here as it would under LL, and a retry cannot skip it
        self._input.fill()
        self._interp.predictionMode = PredictionMode.SLL
        try:
            return super().math()
        except Exception:  # noqa: BLE001 - the grammar's error listener raises a bare Exception on a syntax error
            self.reset()  # back to the first token
            self._interp.predictionMode = PredictionMode.LL
            return super().math()


_shipped_number = latex2sympy2._Latex2Sympy.parse_number


@lru_cache(maxsize=4096)  # SymPy numbers are immutable: one object serves every parse
def _number(text: str) -> Any:
    return _shipped_number(latex2sympy2._Latex2Sympy(), text)  # a number's object depends on its text alone


def _parse_number(self: Any, text: str) -> Any:
    return _number(text) if getattr(_scope, "on", False) else _shipped_number(self, text)


# latex2sympy2 builds each parser from this module name and reads each number with this method
latex2sympy2.PSParser = _SllFirstParser
latex2sympy2._Latex2Sympy.parse_number = _parse_number


@contextmanager
def sll_first() -> Iterator[None]:
    """Parses inside take the two stages and the numbers' memo (this thread only)."""
    before = getattr(_scope, "on", False)
    _scope.on = True
    try:
        yield
    finally:
        _scope.on = before
