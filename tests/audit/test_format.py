"""The format audit (paper Table 24): the released format-audit responses, stored as rollouts of
their student with their finish reason, bucket as the release did wherever the bucket depends on
the response text alone, except where the release's bucketer is wrong (each such case listed);
and every report says its token budget and warns when a condition's answers were cut off."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import ChatRequest, ChatResult
from oracleladder.schemas import Family, Rollout, Verdict, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.schemas.types import GradeStatus, Label
from oracleladder.store import FailedJob, Store
from oracleladder.testing import LoopbackServer, Refuse
from oracleladder.verify import verify_many
from oracleladder.verify.extract import all_boxed

STUDENT = "qwen3_8b_pre_rl"
CONDITION = {"C1_direct": "C1_direct", "C3_gold": "C3_gold_answers"}
# The release's bucketer says no_boxed on these responses (condition, pid prefix, rollout), whose
# stored tail boxes its final answer in a closed \boxed{...}; the first 13 box an answer the paper
# grader accepts. Its no_boxed does not follow from the text: most of these boxes hold nested braces,
# but so do 96 boxes it calls parsed_wrong.
NO_BOXED_ON_A_CLOSED_BOX = {
    ("C3_gold", "30de45ff", 0), ("C3_gold", "30de45ff", 2), ("C3_gold", "30de45ff", 4),
    ("C3_gold", "30de45ff", 5), ("C3_gold", "30de45ff", 7), ("C3_gold", "ba7e87af", 2),
    ("C3_gold", "d5e3b091", 0), ("C3_gold", "d5e3b091", 1), ("C3_gold", "d5e3b091", 2),
    ("C3_gold", "d5e3b091", 3), ("C3_gold", "d5e3b091", 4), ("C3_gold", "d5e3b091", 6),
    ("C3_gold", "d5e3b091", 7),
}
# the same, on answers the paper grader does not accept (wrong, or a box it cannot parse)
NO_BOXED_ON_A_CLOSED_WRONG_BOX = {
    ("C1_direct", "9381ce52", 2), ("C1_direct", "9381ce52", 5), ("C1_direct", "9381ce52", 6),
    ("C1_direct", "9381ce52", 7), ("C3_gold", "9381ce52", 0), ("C3_gold", "9381ce52", 1),
    ("C3_gold", "9381ce52", 2), ("C3_gold", "9381ce52", 3), ("C3_gold", "9381ce52", 4),
    ("C3_gold", "9381ce52", 5), ("C3_gold", "9381ce52", 7), ("C1_direct", "15d38f7a", 0),
    ("C1_direct", "15d38f7a", 2), ("C1_direct", "15d38f7a", 4), ("C1_direct", "15d38f7a", 5),
    ("C1_direct", "15d38f7a", 6), ("C1_direct", "d5e3b091", 0), ("C1_direct", "d5e3b091", 1),
    ("C1_direct", "d5e3b091", 6), ("C3_gold", "a81a70ce", 1), ("C1_direct", "c52e7627", 3),
    ("C1_direct", "c52e7627", 6), ("C3_gold", "c52e7627", 1), ("C1_direct", "d6d28e39", 0),
    ("C1_direct", "d6d28e39", 4), ("C3_gold", "d6d28e39", 1), ("C1_direct", "2f9b03c6", 3),
    ("C1_direct", "2f9b03c6", 4), ("C1_direct", "2f9b03c6", 7), ("C3_gold", "2f9b03c6", 0),
    ("C3_gold", "2f9b03c6", 2), ("C3_gold", "2f9b03c6", 3), ("C3_gold", "2f9b03c6", 4),
    ("C3_gold", "2f9b03c6", 6), ("C3_gold", "2f9b03c6", 7), ("C3_gold", "e0e93ee4", 0),
    ("C1_direct", "40a06b35", 2), ("C3_gold", "40a06b35", 6), ("C1_direct", "30de45ff", 2),
    ("C1_direct", "30de45ff", 6), ("C3_gold", "30de45ff", 1), ("C1_direct", "e977bc02", 4),
    ("C1_direct", "ba7e87af", 2), ("C1_direct", "ba7e87af", 5), ("C3_gold", "ba7e87af", 7),
}
# parsed_wrong in the release, but its 800-character tail holds no box: the answer hit the 4K budget,
# and the box the release read lies before the tail
BOX_BEFORE_THE_TAIL = {("C1_direct", "ba7e87af", 7)}


def _case(record: dict) -> tuple[str, str, int]:
    return record["condition"], record["pid"][:8], record["rollout"]


async def _store_responses(path: Path, records: list[dict]) -> list[Verdict]:
    """Each released response as a probe rollout of its student: its call stored with finish reason
    "length" where the release marks it truncated, graded by the paper grader (the release's)."""
    verdicts = verify_many([{"response": r["response_tail"], "gold": r["gold"]} for r in records], grader="paper")
    async with Store.open(path) as store:
        run_id = await store.start_run("probe", {"student": STUDENT, "max_tokens": 4096, "grader": "paper"})
        for r, verdict in zip(records, verdicts):
            request = ChatRequest(provider="openai", model=r["model"], k=r["rollout"],
                                  messages=[{"role": "user", "content": f"{r['pid']} {r['condition']}"}])
            await store.put_call(request, ChatResult(text=r["response_tail"], tokens_out=r["n_tokens"],
                                                     finish_reason="length" if r["truncated"] else "stop"))
            await store.put_rollout(Rollout(run_id=run_id, student=r["model"], pid=r["pid"],
                                            target=CONDITION[r["condition"]], k=r["rollout"],
                                            call_key=request.key(), response=r["response_tail"], verdict=verdict))
        await store.finish_run(run_id)
    return verdicts


@pytest.fixture(scope="module")
def released(release_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], Path, list[Verdict]]:
    records = [json.loads(line) for line in (release_data / "responses_sample.jsonl").read_text().splitlines()]
    path = tmp_path_factory.mktemp("released") / "s.sqlite"
    return records, path, asyncio.run(_store_responses(path, records))


def _audit(store: Path, student: str = STUDENT) -> dict:
    result = CliRunner().invoke(app, ["audit", "format", "--student", student, "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_text_buckets_match_the_releases_but_for_its_listed_mistakes(released) -> None:
    records, store, verdicts = released
    audit = _audit(store)
    assert audit["max_tokens"] == [4096]
    for condition in ("C1_direct", "C3_gold"):
        mine = [r for r in records if r["condition"] == condition]
        release = Counter(r["bucket"] for r in mine)
        wrong = Counter(r["bucket"] for r in mine
                        if _case(r) in NO_BOXED_ON_A_CLOSED_BOX | NO_BOXED_ON_A_CLOSED_WRONG_BOX)
        hidden = sum(_case(r) in BOX_BEFORE_THE_TAIL for r in mine)
        row = audit["table"][CONDITION[condition]]
        assert row["n"] == len(mine) == 200
        assert row["no_boxed"] == release["no_boxed"] - wrong["no_boxed"]
        assert row["no_boxed_trunc"] == release["no_boxed_truncated"] + hidden
        assert row["truncated"] == sum(r["truncated"] for r in mine)
        assert row["ungraded"] == row["failed"] == 0
        boxed = row["unparsable"] + row["parsed_wrong"] + row["parsed_correct"]
        assert boxed == release["unparsable"] + release["parsed_wrong"] + release["parsed_correct"] \
            + wrong["no_boxed"] - hidden
    # each listed case is what the list says: a closed box under a no_boxed label, 13 of them accepted
    listed = {_case(r): r for r in records}
    for case in NO_BOXED_ON_A_CLOSED_BOX | NO_BOXED_ON_A_CLOSED_WRONG_BOX:
        assert listed[case]["bucket"] == "no_boxed" and all_boxed(listed[case]["response_tail"]), case
    accepted = {_case(r) for r, v in zip(records, verdicts) if r["bucket"] == "no_boxed" and v.accepted}
    assert accepted == NO_BOXED_ON_A_CLOSED_BOX
    (case,) = BOX_BEFORE_THE_TAIL
    assert listed[case]["bucket"] == "parsed_wrong" and listed[case]["truncated"]
    assert not all_boxed(listed[case]["response_tail"])


def test_the_markdown_table_has_table_24s_columns_and_shares(released) -> None:
    store = released[1]
    result = CliRunner().invoke(app, ["audit", "format", "--student", STUDENT, "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "| Model | Condition | n | no_boxed | no_boxed_trunc | unparsable | parsed_wrong | parsed_correct |" \
        in result.stdout
    audit = _audit(store)
    c1 = audit["table"]["C1_direct"]
    assert f"| {STUDENT} | C1 | 200 | {100 * c1['no_boxed'] / 200:.1f}% ({c1['no_boxed']}) |" in result.stdout
    assert audit["cut_off"] == []  # 5 of 200 cut off: under 10%, no warning
    assert "warning" not in result.output


def test_an_unknown_student_is_one_line(released) -> None:
    result = CliRunner().invoke(app, ["audit", "format", "--student", "nobody", "--store", str(released[1])])
    assert result.exit_code == 2 and "holds no rollouts of student 'nobody'" in result.output


@pytest.fixture
def families(tmp_path: Path, release_data: Path) -> tuple[list[Family], Path]:
    fams = list(read_jsonl(release_data / "families_sample.jsonl", Family))[:2]
    path = tmp_path / "families.jsonl"
    write_jsonl(path, (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    return fams, store


def test_the_report_warns_of_answers_cut_off_and_counts_failed_jobs_apart(families, tmp_path: Path) -> None:
    """The case of the issue: most answers of a probe cut off at --max-tokens, none boxed. The
    report says so in its header, with the budget; a failed job is counted apart, not bucketed."""
    fams, store = families
    refused = fams[1].parent_prompt

    def student(messages: list[dict], body: dict) -> str:
        if messages[-1]["content"] == refused:
            raise Refuse(400, "the maximum context length is 4096 tokens")
        return "Let me think step by step about this problem and"

    with LoopbackServer(script=student, finish_reason="length") as server:
        result = CliRunner().invoke(app, [
            "probe", "--student", "openai/s", "--k", "2", "--no-stage0", "--conditions", "C1", "--max-tokens", "64",
            "--store", str(store), "--base-url", server.openai_base_url, "--concurrency", "2",
            "--include-unusable"])  # the sample's first family: its reference answer is unusable
    assert result.exit_code == 3, result.output
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", "--student", "openai/s", "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    fmt = json.loads((out / "report.json").read_text())["students"]["openai/s"]["format"]
    assert fmt["max_tokens"] == [64] and fmt["cut_off"] == ["C1_direct"]
    assert fmt["table"]["C1_direct"] == {"n": 2, "no_boxed": 0, "no_boxed_trunc": 2, "unparsable": 0,
                                         "parsed_wrong": 0, "parsed_correct": 0, "truncated": 2,
                                         "ungraded": 0, "failed": 2, "refused": 0}
    md = (out / "report.md").read_text()
    header = md.split("## ")[0]
    assert "Token budget: openai/s: --max-tokens 64." in header
    assert "**Warning:** openai/s, C1: 2 of 2 answers cut off at --max-tokens 64; 2 unreadable (2 cut off)" in header
    assert "## Format audit (Table 24)" in md


async def _one_failed_and_one_ungraded(path: Path) -> None:
    async with Store.open(path) as store:
        run_id = await store.start_run("probe", {"max_tokens": 100})
        request = ChatRequest(provider="openai", model="m", messages=[{"role": "user", "content": "q"}])
        await store.put_call(request, ChatResult(text="\\boxed{1}", finish_reason="length"))
        await store.put_rollout(Rollout(
            run_id=run_id, student="m", pid="p", target="m0", k=0, call_key=request.key(), response="\\boxed{1}",
            verdict=Verdict(Label.NOT_ACCEPT, "grading failed: worker died", None, GradeStatus.UNGRADED)))
        await store.put_failed_job(FailedJob(run_id=run_id, student="m", source="release", pid="p", target="m1", k=0,
                                             call_key="x", reason="BadRequestError"))


def test_ungraded_rollouts_are_no_bucket_and_not_counted_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(_one_failed_and_one_ungraded(path))
    row = _audit(path, "m")["table"]["Stage 0"]
    assert (row["n"], row["ungraded"], row["failed"], row["truncated"]) == (0, 1, 1, 0)
