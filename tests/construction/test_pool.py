"""Problem pools as people have them: JSONL, CSV and Parquet with the common sources' field names."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.construction.pool import parse_fields, read_pool
from oracleladder.schemas.jsonl import InputError
from oracleladder.testing import LoopbackServer

MATH = {"problem": "What is $1+2$?", "solution": "We add: $1+2=\\boxed{3}$.", "unique_id": "test/algebra/1.json"}
NUMINA = {"problem": "What is $2+2$?", "answer": "4", "solution": "2+2=4", "source": "amc_aime"}
AIME = {"id": "7", "problem": "What is $3+3$?", "answer": "6"}  # text: a JSON number is refused (test_pool_as_written.py)


def test_the_common_sources_field_names_in_csv_parquet_and_jsonl(tmp_path: Path) -> None:
    rows = [MATH, NUMINA, AIME]
    columns = {k for r in rows for k in r}
    text = [{k: None if r.get(k) is None else str(r[k]) for k in columns} for r in rows]  # one type per column
    pq.write_table(pa.Table.from_pylist(text), tmp_path / "pool.parquet")
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("pool.parquet", "pool.jsonl"):
        got = read_pool(tmp_path / name)
        assert [p.answer for p in got] == ["3", "4", "6"], name
        assert got[2].pid == "7" and got[0].solution == MATH["solution"]
    numina = read_pool(tmp_path / "pool.jsonl")[1]
    # NuminaMath has no id: the problem text names it, the same on every read
    assert numina.pid.startswith("p") and numina.pid == read_pool(tmp_path / "pool.jsonl")[1].pid
    assert read_pool(tmp_path / "pool.jsonl")[0].pid == "test/algebra/1.json"


def test_field_mapping_and_csv_rows(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text('qid,question,final\nq1,"What is $1+1$, exactly?",2\nq2,What is $5-1$?,\n', encoding="utf-8")
    got = read_pool(pool, parse_fields(["pid=qid", "problem=question", "answer=final"]))
    assert [(p.pid, p.problem, p.answer) for p in got] == [("q1", "What is $1+1$, exactly?", "2"),
                                                             ("q2", "What is $5-1$?", "")]
    with pytest.raises(InputError, match=r"pool.csv: row 2: no problem field .* --field problem=COLUMN"):
        read_pool(pool)
    with pytest.raises(InputError, match="expected NAME=COLUMN"):
        parse_fields(["question"])


def test_compile_skips_unusable_reference_answers_before_any_teacher_call(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text("id,problem,solution\n"
                    "ok,What is $1+2$?,We add: $\\boxed{3}$.\n"
                    "nobox,What is $2+2$?,It is four.\n"
                    "cut,Solve $x^2=1$.,The roots: $\\boxed{x_1=x_2=}$\n", encoding="utf-8")
    with LoopbackServer(script=lambda m, b: "{}") as server:  # no plan at all: the problem fails its compile
        result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                          server.openai_base_url, "--store", str(tmp_path / "s.sqlite"),
                                          "--max-attempts", "1", "--json"])
        prompts = list(server.by_prompt)
    summary = json.loads(result.stdout.splitlines()[-1])
    assert set(summary["failed_why"]) == {"ok", "nobox", "cut"}
    assert summary["failed_why"]["nobox"] == ["reference_answer: reference answer is empty"]
    assert "x_1=x_2=" in summary["failed_why"]["cut"][0] and "cut off" in summary["failed_why"]["cut"][0]
    # only the usable problem reached the teacher
    assert any("$1+2$" in p for p in prompts) and not any("$2+2$" in p or "x^2=1" in p for p in prompts)
