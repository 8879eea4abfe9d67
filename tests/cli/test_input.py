"""The CLI refuses bad input and bad options in one line, reads read-only stores, and speaks one
vocabulary of conditions (issue 11 items 11-12, issue 12 items 7-8)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math.prompts import condition_prompt
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.store import Store, StoreError
from oracleladder.testing import LoopbackServer
from oracleladder.validators.leak import with_leak_rule
from tests.helpers import REPO

runner = CliRunner()
LADDER = [sys.executable, "-m", "oracleladder.cli"]


def _lines(release_data: Path, n: int) -> list[str]:
    with (release_data / "families_sample.jsonl").open(encoding="utf-8") as fh:
        return [next(fh) for _ in range(n)]


def _one_line_error(result, *needles: str) -> None:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def _stored(store: Path) -> list[Family]:
    async def read() -> list[Family]:
        async with Store.open(store) as s:
            return await s.families()
    return asyncio.run(read())


# ------------------------------------------------------------------ repeated pids


def test_import_refuses_a_repeated_pid_naming_both_lines(tmp_path: Path, release_data: Path) -> None:
    a, b = _lines(release_data, 2)
    changed = json.loads(a)
    changed["parent_answer"] = "a later correction"
    f = tmp_path / "f.jsonl"
    f.write_text(a + b + json.dumps(changed) + "\n", encoding="utf-8")
    pid = json.loads(a)["pid"]

    result = runner.invoke(app, ["import", str(f), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2
    _one_line_error(result, f"{f}:3", f"{f}:1", pid)
    assert not (tmp_path / "s.sqlite").exists() or _stored(tmp_path / "s.sqlite") == []

    for policy, answer in (("keep-first", json.loads(a)["parent_answer"]), ("keep-last", "a later correction")):
        store = tmp_path / f"{policy}.sqlite"
        result = runner.invoke(app, ["import", str(f), "--store", str(store), "--on-duplicate", policy])
        assert result.exit_code == 0, result.output
        stored = _stored(store)
        assert "imported 2 families" in result.output and len(stored) == 2  # says what it stored
        assert [s.pid for s in stored] == [pid, json.loads(b)["pid"]]
        assert stored[0].parent_answer == answer


def test_compile_refuses_a_repeated_pid_before_any_call(tmp_path: Path) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"pid": "p1", "problem": "1+1?", "answer": "2"}\n'
                        '{"pid": "p2", "problem": "2+2?", "answer": "4"}\n'
                        '{"pid": "p1", "problem": "1+2?", "answer": "3"}\n', encoding="utf-8")
    with LoopbackServer(script=lambda m, b: "{}") as server:
        result = runner.invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--base-url",
                                     server.openai_base_url, "--store", str(tmp_path / "s.sqlite")])
        assert server.total == 0
    assert result.exit_code == 2
    _one_line_error(result, f"{problems}:3: pid 'p1' repeats line 1")


def test_check_refuses_a_repeated_pid(tmp_path: Path, release_data: Path) -> None:
    (a,) = _lines(release_data, 1)
    f = tmp_path / "f.jsonl"
    f.write_text(a + a, encoding="utf-8")
    result = runner.invoke(app, ["check", str(f)])
    assert result.exit_code == 2
    _one_line_error(result, f"{f}:2", "repeats line 1")


# ------------------------------------------------------------------ unreadable input


def test_binary_and_deeply_nested_input_name_file_and_line(tmp_path: Path, release_data: Path) -> None:
    (a,) = _lines(release_data, 1)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(a.encode() + b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    deep = tmp_path / "deep.jsonl"
    deep.write_text(a + '{"pid": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    for f, what in ((binary, "not UTF-8"), (deep, "JSON nested too deeply")):
        result = runner.invoke(app, ["import", str(f), "--store", str(tmp_path / "s.sqlite")])
        assert result.exit_code == 2, result.output
        _one_line_error(result, f"{f}:2: {what}")
        result = runner.invoke(app, ["check", str(f)])
        _one_line_error(result, f"{f}:2: {what}")
    code = tmp_path / "code.jsonl"
    code.write_bytes(b"\xff\n")
    result = runner.invoke(app, ["compile", str(code), "--domain", "code", "--teacher", "openai/t",
                                 "--base-url", "http://127.0.0.1:9/v1", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2
    _one_line_error(result, f"{code}:1: not UTF-8")


# ------------------------------------------------------------------ option values


@pytest.mark.parametrize("args, option", [
    (["probe", "--student", "local", "--concurrency", "0"], "--concurrency"),
    (["probe", "--student", "local", "--rpm", "-5"], "--rpm"),
    (["probe", "--student", "local", "--tpm", "0"], "--tpm"),
    (["probe", "--student", "local", "--limit", "0"], "--limit"),
    (["probe", "--student", "local", "--limit", "-1"], "--limit"),
    (["probe", "--student", "local", "--k", "0"], "--k"),
    (["probe", "--student", "local", "--max-tokens", "0"], "--max-tokens"),
    (["compile", "p.jsonl", "--teacher", "openai/t", "--concurrency", "0"], "--concurrency"),
    (["compile", "p.jsonl", "--teacher", "openai/t", "--rpm", "-5"], "--rpm"),
    (["compile", "p.jsonl", "--teacher", "openai/t", "--max-attempts", "0"], "--max-attempts"),
    (["report", "--student", "local", "--threshold", "0"], "--threshold"),
    (["demo", "--k", "0"], "--k"),
    (["demo", "--families", "0"], "--families"),
])
def test_nonsensical_option_values_are_refused_in_one_line(tmp_path: Path, args: list[str], option: str) -> None:
    result = runner.invoke(app, [*args, "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2
    _one_line_error(result, f"Invalid value for '{option}'")
    assert not (tmp_path / "s.sqlite").exists()  # refused before anything was done


# ------------------------------------------------------------------ store errors


def test_store_errors_are_one_line_and_tracebacks_need_debug(tmp_path: Path, release_data: Path) -> None:
    families = str(release_data / "families_sample.jsonl")
    folder = tmp_path / "folder"
    folder.mkdir()
    result = runner.invoke(app, ["import", families, "--store", str(folder)])
    assert result.exit_code == 1
    _one_line_error(result, f"{folder}: is a folder")

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    result = runner.invoke(app, ["import", families, "--store", str(junk)])
    assert result.exit_code == 1
    _one_line_error(result, f"{junk}: not an OracleLadder store")

    result = runner.invoke(app, ["--debug", "import", families, "--store", str(junk)])
    assert isinstance(result.exception, StoreError)  # raised, so typer shows its traceback


# ------------------------------------------------------------------ read-only stores


def _probed_store(tmp_path: Path, release_data: Path) -> Path:
    store = tmp_path / "ro" / "s.sqlite"
    store.parent.mkdir()
    assert runner.invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)]).exit_code == 0
    with LoopbackServer(script=lambda m, b: r"\boxed{0}") as server:
        result = runner.invoke(app, ["probe", "--student", "openai/s", "--k", "1", "--limit", "3", "--store", str(store),
                                     "--base-url", server.openai_base_url])
    assert result.exit_code == 0, result.output
    return store


def _read_only(folder: Path, *command: str) -> subprocess.CompletedProcess:
    """Run a command with ``folder`` read-only: a read-only bind mount for root (whom file modes do
    not stop), file modes otherwise."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if os.geteuid() != 0:
        for p in folder.iterdir():
            p.chmod(0o444)
        folder.chmod(0o555)
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("root without mount namespaces: no way to make a folder read-only for root")
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(folder), *command],
                          capture_output=True, text=True, timeout=300, env=env)


def test_a_read_only_store_can_be_exported_reported_compared_and_listed(tmp_path: Path, release_data: Path) -> None:
    store = _probed_store(tmp_path, release_data)
    out = tmp_path / "out"
    out.mkdir()
    for command, made in (
        (["export", "--out", str(out / "e.jsonl")], out / "e.jsonl"),
        (["report", "--student", "openai/s", "--out", str(out / "report")], out / "report" / "report.md"),
        (["compare", "--a", "release", "--b", "release", "--student", "openai/s", "--out", str(out / "cmp")],
         out / "cmp" / "compare.md"),
        (["runs"], None),
    ):
        done = _read_only(store.parent, *LADDER, *command, "--store", str(store))
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert made is None or made.is_file()
        if made is None:
            assert done.stdout.split("\t")[1] == "done"
    assert len((out / "e.jsonl").read_text().splitlines()) == 55
    # writing needs a writable store, and says so in one line
    done = _read_only(store.parent, *LADDER, "import", str(release_data / "families_sample.jsonl"), "--store", str(store))
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if line.strip()][-1].startswith("error: ")
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ --limit and the controls


def test_limit_one_probes_one_family_with_controls_drawn_from_the_whole_set(sample_store: Path, release_data: Path) -> None:
    seen: list[list[dict]] = []
    with LoopbackServer(script=lambda m, b: seen.append(m) or r"\boxed{0}") as server:
        # the first family's reference answer is unusable: --include-unusable asks its parent jobs
        result = runner.invoke(app, ["probe", "--student", "openai/s", "--k", "1", "--limit", "1", "--no-stage0",
                                     "--include-unusable", "--conditions", "C2-random", "--conditions", "C3-mismatched",
                                     "--store", str(sample_store), "--base-url", server.openai_base_url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["families"] == 1
    # as imported: the leak rule drops the milestones restating their answer (the first family's m1 among them)
    families = [with_leak_rule(f) for f in read_jsonl(release_data / "families_sample.jsonl", Family)]
    # the same prompts as a probe of the whole set would send for that family
    expected = [condition_prompt(families[0], c, families)[0] for c in ("C2_random", "C3_mismatched")]
    assert sorted(map(json.dumps, seen)) == sorted(map(json.dumps, expected))


# ------------------------------------------------------------------ one vocabulary of conditions


def test_conditions_by_short_or_released_name(tmp_path: Path, sample_store: Path) -> None:
    with LoopbackServer(script=lambda m, b: r"\boxed{0}") as server:
        result = runner.invoke(app, ["probe", "--student", "openai/s", "--k", "1", "--limit", "2", "--no-stage0",
                                     "--conditions", "C1", "--conditions", "c2", "--conditions", "C3_gold_answers",
                                     "--conditions", "C2-generic", "--store", str(sample_store),
                                     "--base-url", server.openai_base_url])
    assert result.exit_code == 0, result.output

    async def targets() -> set[str]:
        async with Store.open(sample_store) as s:
            return {r.target for r in await s.rollouts()}
    # stored under the released names, which stores and caches depend on
    assert asyncio.run(targets()) == {"C1_direct", "C2_descriptions", "C3_gold_answers", "C2_generic"}

    result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1",
                                 "--conditions", "C4", "--store", str(sample_store)])
    assert result.exit_code == 2
    _one_line_error(result, "unknown condition 'C4'", "C1, C2, C3, C2-random, C2-generic, C3-mismatched")
    result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1", "--domain",
                                 "code", "--conditions", "C2-random", "--store", str(sample_store)])
    _one_line_error(result, "the code ladder has no condition C2-random")

    result = runner.invoke(app, ["report", "--student", "openai/s", "--store", str(sample_store),
                                 "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| Model | C1 | C2-random | C2-generic | C2-primitive-random | C2-primitive | C2 | C3-mismatched | C3 |" in md
    assert ("| Model | C2 vs C1 | C2 vs C2-random | C2 vs C2-generic | C3 vs C3-mismatched | "
            "C2-primitive vs C2-primitive-random |") in md
    assert not any(old in md for old in ("C2-correct", "C3-gold", "C1 direct", "C2_descriptions"))


def test_help_lists_the_conditions() -> None:
    result = runner.invoke(app, ["probe", "--help"], env={"COLUMNS": "300"})
    for name in ("C1", "C2", "C3", "C2-random", "C2-generic", "C3-mismatched", "C1_direct", "C3_mismatched"):
        assert name in result.output
