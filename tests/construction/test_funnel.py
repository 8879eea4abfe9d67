"""From a problem pool to a diagnostic set, on the loopback server: a scripted teacher compiles a
30-problem pool built from the released sample, a scripted anchor screens it, and the funnel's counts
equal the ones derived by hand at every step (issue 13)."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.testing import LoopbackServer, Refuse
from oracleladder.validators import answer_problem

runner = CliRunner()
NUMBER = re.compile(r"^-?\d+$")
M0 = "Compute the product of 73 and 127. Output the product."
M1 = "Compute the sum of 4019 and 4442. Output the sum."
GOLD = {M0: "9271", M1: "8461"}


def _m(type_: str, description: str, gold: str, schema: str = "NUMBER") -> dict:
    return {"type": type_, "answer_schema": schema, "description": description, "canonical_answer": gold}


def _text(family: Family) -> str:
    return family.parent_prompt.split("Problem:\n", 1)[1].strip()


def _pool(release_data: Path) -> tuple[list[dict], dict[str, str]]:
    """30 problems of the released sample and the fate each is scripted to meet."""
    fams = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    unusable = [f for f in fams if answer_problem(f.parent_answer)]
    numeric = [f for f in fams if NUMBER.match(f.parent_answer) and f.parent_answer not in GOLD.values()]
    rest = [f for f in fams if f not in unusable and f not in numeric[:5]]
    plan = ([(f, "bad_reference") for f in unusable] + [(f, "blank_reference") for f in rest[:2]]
            + [(f, "leaks") for f in numeric[:3]] + [(f, "one_milestone") for f in numeric[3:5]]
            + [(f, "direct") for f in rest[2:7]] + [(f, "milestone") for f in rest[7:12]]
            + [(f, "kept") for f in rest[12:23]])
    assert len(plan) == 30 and len(unusable) == 2
    rows = [{"id": f.pid, "problem": _text(f), "answer": "" if fate == "blank_reference" else f.parent_answer}
            for f, fate in plan]
    return rows, {_text(f): fate for f, fate in plan}


def _script(fates: dict[str, str], answers: dict[str, str]):
    calls: Counter[str] = Counter()

    def fate_of(prompt: str) -> tuple[str, str]:
        problem = next(p for p in fates if p in prompt)
        return fates[problem], answers[problem]

    def answer(messages: list[dict], body: dict) -> str:
        prompt = messages[-1]["content"]
        if body["model"] == "teacher":
            if "Mathematics Mentor" in messages[0]["content"]:
                fate, parent = fate_of(messages[1]["content"])
                first = _m("COMPUTE", M0, parent if fate == "leaks" else GOLD[M0])
                middle = [] if fate == "one_milestone" else [_m("COMPUTE", M1, GOLD[M1])]
                return json.dumps({"milestones": [first, *middle, _m("INTEGRATE", "Combine the results.", parent,
                                                                     "EXPR")]})
            description = re.search(r"Milestone:\n(.*?)\n\nOutput instruction", prompt, re.S).group(1)
            return f"\\boxed{{{GOLD[description]}}}"  # the teacher's independent solve
        fate, parent = fate_of(prompt)  # the anchor
        calls[prompt] += 1
        if "Milestone:" not in prompt:  # the parent, asked directly
            return f"\\boxed{{{parent}}}" if fate == "direct" else "I cannot solve this."
        if M1 in prompt:
            return "\\boxed{0}" if fate == "milestone" else f"\\boxed{{{GOLD[M1]}}}"
        return f"\\boxed{{{GOLD[M0]}}}" if calls[prompt] % 2 else "\\boxed{1}"  # M0: every other attempt

    return answer


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_whole_funnel_from_a_pool_to_an_exported_set(tmp_path: Path, release_data: Path) -> None:
    rows, fates = _pool(release_data)
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    with LoopbackServer(script=_script(fates, {r["problem"]: r["answer"] for r in rows})) as server:
        url = ["--base-url", server.openai_base_url, "--store", store]
        compile_ = ["compile", str(pool), "--teacher", "openai/teacher", "--max-attempts", "2", "--json", *url]
        screen = ["screen", "--anchor", "openai/anchor", "--source", "openai/teacher", "--k", "4", "--set", "mine",
                  "--json", *url]
        summary = json.loads(_ok(compile_).splitlines()[-1])
        assert (summary["compiled"], summary["failed"]) == (21, 9)
        screened = json.loads(_ok(screen).splitlines()[-1])
        assert screened["verdicts"] == {"kept": 11, "solved_directly": 5, "milestone_unsolved": 5}
        # the screen's rollouts are ordinary probe rollouts: the same probe asks nothing again
        before = server.total
        _ok(["probe", "--student", "openai/anchor", "--source", "openai/teacher", "--k", "4",
             "--conditions", "C1", *url])
        # and a rerun of the whole funnel asks nothing again
        _ok(compile_)
        _ok(screen)
        assert server.total == before

        out = tmp_path / "report"
        funnel = json.loads(_ok(["funnel", "--set", "mine", "--json", "--out", str(out), "--store", store]))
        assert json.loads((out / "report.json").read_text())["funnel"] == funnel
        assert {k: funnel[k] for k in ("candidates", "valid_reference", "compiled", "passed_screen", "final",
                                       "structural_failures")} == {
            "candidates": 30, "valid_reference": 26, "compiled": 21, "passed_screen": 11, "final": 11,
            "structural_failures": 0}
        assert funnel["compile_failures"] == {"leak": 3, "min_milestones": 2}
        assert funnel["screen_failures"] == {"solved_directly": 5, "milestone_unsolved": 5}
        by_pid = {r["id"]: fates[r["problem"]] for r in rows}
        dropped = {d["pid"]: d for d in funnel["dropped"]}
        assert sorted(dropped) == sorted(p for p, fate in by_pid.items() if fate != "kept")
        expected_cause = {"bad_reference": "reference_answer", "blank_reference": "reference_answer",
                          "leaks": "leak", "one_milestone": "min_milestones", "direct": "solved_directly",
                          "milestone": "milestone_unsolved"}
        assert all(d["cause"] == expected_cause[by_pid[p]] and d["reason"] for p, d in dropped.items())
        assert "reference answer is empty" in next(d["reason"] for p, d in dropped.items()
                                                   if by_pid[p] == "blank_reference")
        assert "m1" in next(d["reason"] for p, d in dropped.items() if by_pid[p] == "milestone")
        listing = _ok(["funnel", "--dropped", "--store", store])  # the store's only set
        assert all(pid in listing for pid in dropped)

        # the final set, exported in the release's format, re-imports and probes like the release
        exported = tmp_path / "set.jsonl"
        _ok(["export", "--set", "mine", "--out", str(exported), "--store", store])
        records = [json.loads(line) for line in exported.read_text().splitlines()]
        assert sorted(r["pid"] for r in records) == sorted(p for p, fate in by_pid.items() if fate == "kept")
        assert all([m["pre_train_phat"] for m in r["milestones"]] == [0.5, 1.0] for r in records)
        other = str(tmp_path / "other.sqlite")
        _ok(["import", str(exported), "--source", "mine", "--store", other])
        before = server.total
        _ok(["probe", "--student", "openai/student", "--source", "mine", "--k", "1", "--conditions", "C1",
             "--no-stage0", "--base-url", server.openai_base_url, "--store", other])
        assert server.total == before + 11


@pytest.mark.parametrize("rule", ["default", "direct-only"])
def test_the_structural_filter_and_appendix_n_rule_on_the_released_sample(
        sample_store: Path, rule: str) -> None:
    """Re-screening the release: the anchor fails every parent and never solves any milestone, so only
    direct-only keeps anything, and then the family with one milestone left after the leak rule (its other
    gold restates the parent answer) leaves at the structural filter."""
    store = str(sample_store)
    with LoopbackServer(script=lambda m, b: "I cannot solve this.") as server:
        _ok(["screen", "--anchor", "openai/anchor", "--k", "1", "--rule", rule, "--set", "re",
             "--base-url", server.openai_base_url, "--store", store])
    funnel = json.loads(_ok(["funnel", "--set", "re", "--json", "--store", store]))
    # the sample's two garbled reference answers ('\\1' and a cut-off table) leave first
    assert (funnel["candidates"], funnel["valid_reference"], funnel["compiled"]) == (55, 53, 53)
    if rule == "default":
        assert funnel["screen_failures"] == {"milestone_unsolved": 53} and funnel["final"] == 0
    else:
        assert (funnel["passed_screen"], funnel["structural_failures"], funnel["final"]) == (53, 1, 52)
        (structural,) = [d for d in funnel["dropped"] if d["cause"] == "structural"]
        assert structural["reason"].startswith("1 tested non-INTEGRATE milestone(s) after the leak rule")


def test_a_failed_screen_call_is_neither_a_pass_nor_a_fail_of_the_anchor(tmp_path: Path, release_data: Path) -> None:
    """A call refused for good leaves its family `incomplete` (exit 3, out of the set); a rerun asks
    only that call again and then judges the family."""
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    target = families[2]  # its first milestone is refused while `refusing`
    sample = tmp_path / "three.jsonl"
    sample.write_text("".join(f.model_dump_json() + "\n" for f in families[2:5]))
    refusing = [True]

    def answer(messages: list[dict], body: dict) -> str:
        prompt = messages[-1]["content"]
        if refusing[0] and prompt.strip() == target.milestones[0].prompt.strip():
            raise Refuse(400, "refused for good")
        gold = next((m.answer for f in families for m in f.milestones if m.prompt.strip() == prompt.strip()), None)
        return "I cannot solve this." if gold is None else f"\\boxed{{{gold}}}"

    store = str(tmp_path / "s.sqlite")
    _ok(["import", str(sample), "--store", store])
    with LoopbackServer(script=answer) as server:
        screen = ["screen", "--anchor", "openai/anchor", "--k", "2", "--set", "s", "--json",
                  "--base-url", server.openai_base_url, "--store", store]
        result = runner.invoke(app, screen)
        assert result.exit_code == 3, result.output
        funnel = json.loads(_ok(["funnel", "--json", "--store", store]))
        assert funnel["screen_failures"] == {"incomplete": 1} and funnel["final"] == 2
        (dropped,) = funnel["dropped"]
        assert dropped["pid"] == target.pid and "2 of 6 screen attempts have no graded answer" in dropped["reason"]
        refusing[0], asked = False, server.total
        assert json.loads(_ok(screen).splitlines()[-1])["verdicts"] == {"kept": 3}
        assert server.total == asked + 2
