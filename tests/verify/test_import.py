"""The verifier package is light to import: its regex modules load neither SymPy nor math-verify,
and the validators that use the verifier load it only when they first grade. `ladder --help` loads
none of the heavy libraries: each command loads what it uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

import oracleladder.verify as verify_package

HEAVY = ("sympy", "math_verify")
# what `ladder --help` must not load (the SDKs, the grader, the pool reader, the statistics, the plots)
STARTUP_HEAVY = ("sympy", "math_verify", "pyarrow", "matplotlib", "openai", "anthropic", "instructor", "scipy",
                 "numpy", "aiohttp", "inspect_ai")


def _loaded(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` that ``code`` executes (one oracleladder._lazy only registered is a
    subclass of ModuleType until first used)."""
    probe = code + f"\nimport sys, types\nprint(' '.join(m for m in {heavy!r} if type(sys.modules.get(m)) is types.ModuleType))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("module", ["oracleladder.verify", "oracleladder.verify.normalize",
                                    "oracleladder.verify.extract", "oracleladder.validators"])
def test_import_is_light(module: str) -> None:
    assert _loaded(f"import {module}") == []


def test_cli_help_loads_no_heavy_library() -> None:
    code = ("import contextlib, io\nfrom oracleladder.cli import app\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
            "    app(['--help'])\n"
            "assert 'Usage: ' in out.getvalue()")
    assert _loaded(code, STARTUP_HEAVY) == []


def test_first_use_loads_the_grader() -> None:
    code = "from oracleladder import verify\nassert verify.answers_equivalent('1/2', '0.5')"
    assert _loaded(code) == list(HEAVY)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        verify_package.nope  # noqa: B018


def test_a_probe_loads_no_pool_reader() -> None:
    """The math domain reads problem pools through pyarrow, whose shared libraries put ~40 MB on a
    process's resident set (bench/scale.py: peak 143 MB with it, 65 MB without); a probe reads
    none, so neither the API nor the domain loads it until a pool is read."""
    code = ("from oracleladder import Experiment\nfrom oracleladder.domains import MathDomain\n"
            "from oracleladder.ladder import ProbeConfig\nMathDomain()")
    assert _loaded(code, ("pyarrow", "matplotlib", "scipy")) == []
    reading = (code + "\nimport pathlib, tempfile\np = pathlib.Path(tempfile.mkdtemp()) / 'pool.csv'\n"
               "p.write_text('problem,answer\\nWhat is 1+1?,2\\n')\n"
               "assert len(MathDomain().read_problems(p, 'error')) == 1")
    assert _loaded(reading, ("pyarrow",)) == ["pyarrow"]
