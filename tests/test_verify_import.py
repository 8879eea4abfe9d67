"""The verifier package is light to import: its regex modules load neither SymPy nor math-verify,
and the validators that use the verifier load it only when they first grade."""

from __future__ import annotations

import subprocess
import sys

import pytest

import oracleladder.verify as verify_package

HEAVY = ("sympy", "math_verify")


def _loaded(code: str) -> list[str]:
    probe = code + "\nimport sys\nprint(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("module", ["oracleladder.verify", "oracleladder.verify.normalize",
                                    "oracleladder.verify.extract", "oracleladder.validators"])
def test_import_is_light(module: str) -> None:
    assert _loaded(f"import {module}") == []


def test_first_use_loads_the_grader() -> None:
    code = "from oracleladder import verify\nassert verify.answers_equivalent('1/2', '0.5')"
    assert _loaded(code) == list(HEAVY)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        verify_package.nope  # noqa: B018
