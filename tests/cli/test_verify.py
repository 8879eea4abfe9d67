"""`ladder verify` grades one response from the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from oracleladder.cli import app

runner = CliRunner()


def _verdict(*args: str) -> dict:
    result = runner.invoke(app, ["verify", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_equivalent_answer_is_accepted() -> None:
    v = _verdict("--gold", "0.5", "--response", r"so the answer is \boxed{\frac{1}{2}}")
    assert v == {"label": "ACCEPT", "reason": "equivalent", "extracted": r"\frac{1}{2}", "status": "graded"}


def test_wrong_sign_and_missing_box_are_rejected() -> None:
    assert _verdict("--gold", "3", "--response", r"\boxed{-3}")["label"] == "NOT_ACCEPT"
    v = _verdict("--gold", "3", "--response", "the answer is 3")
    assert (v["label"], v["reason"]) == ("NOT_ACCEPT", "no boxed")


def test_extended_mode_keeps_tuple_order() -> None:
    v = _verdict("--gold", "(1,2)", "--response", r"\boxed{(2,1)}", "--grader", "extended")
    assert v["label"] == "NOT_ACCEPT"
    assert _verdict("--gold", "(1,2)", "--response", r"\boxed{(1,2)}", "--grader", "extended")["label"] == "ACCEPT"
