"""`--shard I/N` and `ladder merge`: a probe run as two shards into two stores and merged is the plain
run, row for row; merging again changes nothing; two stores with different answers under one call
key, or different families under one pid, are reported one line each, the first kept unless --prefer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store.schema import SQL_FUNCTIONS
from oracleladder.testing import LoopbackServer
from tests.experiment.readme import answer
from tests.helpers import rows

runner = CliRunner()
STUDENT = "openai/scripted"
# the rollouts as the report reads them: what each job asked (its call key) and its verdict
ROLLOUTS = ("SELECT student, source, pid, target, k, hex(call_key), label, reason, extracted, status, response "
            "FROM rollouts_named ORDER BY pid, target, k")
CALLS = ("SELECT hex(c.key), c.provider, c.model, c.k, hex(q.digest), c.tokens_in, c.tokens_out, c.error, c.response "
         "FROM calls c JOIN requests q ON q.id = c.request_id ORDER BY c.key")


def ladder(*args: str) -> str:
    result = runner.invoke(app, [*map(str, args)])
    assert result.exit_code == 0, (result.exit_code, result.output, result.stderr)
    return result.stderr


def imported(path: Path, families: Path) -> Path:
    ladder("import", families, "--store", path)
    return path


def dump(path: Path) -> list[str]:
    """Every row of every table, as SQL text: two equal dumps are two equal stores."""
    con = sqlite3.connect(path)
    try:
        return list(con.iterdump())
    finally:
        con.close()


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(script=answer, max_lifetime=1800) as srv:
        yield srv


def probe(server: LoopbackServer, store: Path, *more: str) -> None:
    ladder("probe", "--student", STUDENT, "--base-url", server.openai_base_url, "--k", "1", "--limit", "12",
           "--conditions", "C1,C2,C2-random,C3-mismatched", "--store", store, *more)


def test_two_shards_merged_are_the_plain_run(server: LoopbackServer, release_data: Path, tmp_path: Path) -> None:
    families = release_data / "families_sample.jsonl"
    plain = imported(tmp_path / "plain.sqlite", families)
    probe(server, plain)
    shards = [imported(tmp_path / f"shard{i}.sqlite", families) for i in (1, 2)]
    for i, store in enumerate(shards, 1):
        probe(server, store, "--shard", f"{i}/2")
    asked = [{r[2] for r in rows(s, ROLLOUTS)} for s in shards]
    assert asked[0] and asked[1] and not asked[0] & asked[1]  # each shard probed families of its own

    merged = tmp_path / "merged.sqlite"
    said = ladder("merge", *shards, "--into", merged)
    assert "different" not in said and "another" not in said
    assert rows(merged, ROLLOUTS) == rows(plain, ROLLOUTS)
    assert rows(merged, CALLS) == rows(plain, CALLS)
    assert (rows(merged, "SELECT pid, source, family FROM families ORDER BY rowid")
            == rows(plain, "SELECT pid, source, family FROM families ORDER BY rowid"))
    assert len(rows(merged, "SELECT id FROM runs WHERE kind = 'probe'")) == 2

    before = dump(merged)
    ladder("merge", *shards, "--into", merged)
    ladder("merge", shards[1], "--into", merged)
    assert dump(merged) == before


def _answers(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path)
    for name, (n, fn) in SQL_FUNCTIONS.items():
        con.create_function(name, n, fn)
    try:
        return dict(con.execute("SELECT hex(key), ladder_text(response) FROM calls").fetchall())
    finally:
        con.close()


def test_different_answers_and_families_are_reported_and_the_first_kept(
        server: LoopbackServer, release_data: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in (release_data / "families_sample.jsonl").open()][:3]
    families_file, other_families = tmp_path / "three.jsonl", tmp_path / "other.jsonl"
    families_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    first = imported(tmp_path / "first.sqlite", families_file)
    probe(server, first)
    records[0]["parent_answer"] = "a changed answer"
    other_families.write_text("".join(json.dumps(r) + "\n" for r in records))
    second = imported(tmp_path / "second.sqlite", other_families)
    with LoopbackServer(script=lambda messages, body: r"Another: \boxed{7}") as other:
        probe(other, second)
    common = _answers(first).keys() & _answers(second).keys()
    assert common  # the calls whose prompt the changed answer does not enter

    merged = tmp_path / "merged.sqlite"
    result = runner.invoke(app, ["merge", str(first), str(second), "--into", str(merged)])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    calls = [line for line in lines if line.startswith("call ")]
    assert sorted(line.split()[1].rstrip(":").upper() for line in calls) == sorted(common)
    assert all(f"{second} holds another answer; kept the first" in line for line in calls)
    assert [line for line in lines if line.startswith("family ")] == [
        f"family {records[0]['pid']} of 'release': {second} holds another; kept the first"]
    answers = _answers(merged)
    assert all(answers[key] == _answers(first)[key] for key in common)
    pid = records[0]["pid"]
    assert (rows(merged, f"SELECT family FROM families WHERE pid = '{pid}'")
            == rows(first, f"SELECT family FROM families WHERE pid = '{pid}'"))

    preferred = tmp_path / "preferred.sqlite"
    result = runner.invoke(app, ["merge", str(first), str(second), "--into", str(preferred), "--prefer", str(second)])
    assert result.exit_code == 0, result.stderr
    assert all(_answers(preferred)[key] == _answers(second)[key] for key in common)
    assert {r[5]: r[6] for r in rows(preferred, ROLLOUTS)} == {r[5]: r[6] for r in rows(second, ROLLOUTS)}


def test_bad_input_is_one_line(tmp_path: Path, sample_store: Path) -> None:
    for args, code in ((["merge", str(tmp_path / "none.sqlite"), "--into", str(tmp_path / "d.sqlite")], 2),
                       (["merge", str(sample_store), "--into", str(sample_store)], 2),
                       (["merge", str(sample_store), "--into", str(tmp_path / "d.sqlite"), "--prefer",
                         str(tmp_path / "x.sqlite")], 2)):
        result = runner.invoke(app, args)
        assert result.exit_code == code and len(result.stderr.strip().splitlines()) == 1, result.stderr
