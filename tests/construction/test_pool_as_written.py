"""`ladder compile POOL` reads a pool's cells as written: no type inference on a CSV (a gold keeps its
digits, a pid its zeros), no string taken for "missing" unless the user names it, and a cell that is
not text (bytes, a list, an object, a JSON or Parquet number) refused at its row and column instead of
reaching the teacher as its repr."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer

GOLDS = {"007": "18446744073709551616", "008": "3.14159265358979323846", "009": "7", "010": "NA"}


def _compile(pool: Path, tmp_path: Path, *extra: str) -> tuple[object, list[str], LoopbackServer]:
    """Compile ``pool`` against a teacher that never gives a plan: what reached it, and the result."""
    with LoopbackServer(script=lambda m, b: "{}") as server:
        result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                          server.openai_base_url, "--store", str(tmp_path / "s.sqlite"),
                                          "--max-attempts", "1", "--json", *extra])
        prompts = list(server.by_prompt)
    return result, prompts, server


def test_a_csv_gold_reaches_the_teacher_with_its_digits_and_its_pid_with_its_zeros(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text("id,problem,answer\n" + "".join(f"{pid},Problem {pid}: find it.,{gold}\n"
                                                    for pid, gold in GOLDS.items()), encoding="utf-8")
    result, prompts, _ = _compile(pool, tmp_path)
    summary = json.loads(result.stdout.splitlines()[-1])
    assert set(summary["failed_why"]) == set(GOLDS)  # pids as written: 007, not 7
    for pid, gold in GOLDS.items():  # NA is an answer unless the user says otherwise
        prompt = next(p for p in prompts if f"Problem {pid}:" in p)
        assert f"\n{gold}\n" in prompt and "e+19" not in prompt and "7.0" not in prompt, prompt


def test_null_values_are_missing_only_when_named(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text("id,problem,answer\na,Problem a: find it.,NA\nb,Problem b: find it.,null\n"
                    "c,Problem c: find it.,3\n", encoding="utf-8")
    result, prompts, _ = _compile(pool, tmp_path, "--null-values", "NA,null")
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["failed_why"]["a"] == summary["failed_why"]["b"] == ["reference_answer: reference answer is empty"]
    assert not any("Problem a:" in p or "Problem b:" in p for p in prompts)
    assert any("Problem c:" in p for p in prompts)


def test_a_csv_not_in_utf8_is_refused_in_one_line_and_read_with_its_encoding(tmp_path: Path) -> None:
    pool = tmp_path / "latin.csv"
    pool.write_bytes("id,problem,answer\nq1,Un café coûte 3 euros; combien en coûtent 2?,6\n".encode("latin-1"))
    result, prompts, server = _compile(pool, tmp_path)
    assert result.exit_code == 2 and server.total == 0
    assert result.output.strip().count("\n") == 0 and "Traceback" not in result.output
    assert str(pool) in result.output and "--encoding" in result.output
    result, prompts, _ = _compile(pool, tmp_path, "--encoding", "latin-1")
    assert result.exit_code == 1, result.output  # read, and compiled nothing: the teacher gives no plan
    assert any("Un café coûte 3 euros" in p for p in prompts) and not any("b'" in p for p in prompts)


def _refused(result: object, server: LoopbackServer, *where: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2 and server.total == 0, output  # type: ignore[attr-defined]
    assert "Traceback" not in output and output.strip().count("\n") == 0, output
    for part in where:
        assert part in output, output


def test_a_parquet_binary_column_is_refused_at_its_row_and_column(tmp_path: Path) -> None:
    pool = tmp_path / "pool.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "problem": pa.array([b"What is 1+1?", b"What is 2+2?"], pa.binary()),
                             "answer": ["2", "4"]}), pool)
    result, _, server = _compile(pool, tmp_path)
    _refused(result, server, f"{pool}: row 1", "'problem'", "bytes")


def test_json_cells_that_are_not_text_are_refused_at_their_line_and_column(tmp_path: Path) -> None:
    ok = {"id": "a", "problem": "What is 1+1?", "answer": "2"}
    for bad, column, what in (({"answer": ["2", "3"]}, "answer", "a list"),
                              ({"problem": {"text": "What is 2+2?"}}, "problem", "an object"),
                              ({"answer": 3.14159265358979323846}, "answer", "number"),
                              ({"id": 7}, "id", "number")):
        pool = tmp_path / "pool.jsonl"
        pool.write_text(json.dumps(ok) + "\n" + json.dumps({**ok, "id": "b", **bad}) + "\n", encoding="utf-8")
        result, _, server = _compile(pool, tmp_path)
        _refused(result, server, f"{pool}:2", f"'{column}'", what)
