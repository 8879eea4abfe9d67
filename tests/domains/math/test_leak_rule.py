"""The leak rule on the released sample (Appendix N, P.1): the milestones whose gold the verifier accepts
as the reference answer (or its correction) are in no Stage 0, C2 or C3 prompt; `--keep-leaking` sends
what a run that kept them sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math import MathDomain
from oracleladder.domains.math.prompts import description
from oracleladder.ladder import ProbeConfig
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators.leak import leaking_milestones

# Read by hand: the sample's three families with a milestone that restates the final answer.
LEAKING = {
    "b36a1161": [1],  # gold \{-1,1\}: the corrected answer x=\pm 1 (the released "\1" is garbled)
    "8aa407cb": [1],  # gold 26: the reference answer 26, as written
    "c0677547": [2],  # gold \lfloor 91/5 \rfloor = 18: the reference answer 18
}


@pytest.fixture(scope="module")
def released(release_data: Path) -> list[Family]:
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    for f in families:
        f.leaking = leaking_milestones(f)
    return families


def test_the_leak_rule_finds_exactly_the_leaking_milestones(released):
    assert {f.pid[:8]: f.leaking for f in released if f.leaking} == LEAKING


def test_planned_jobs_leave_the_leaking_milestones_out_of_stage0_c2_and_c3(released):
    config = ProbeConfig(student="s", k=1)
    jobs = MathDomain().plan_jobs(released, config, released)
    kept = MathDomain().plan_jobs(released, ProbeConfig(student="s", k=1, keep_leaking=True), released)
    as_before = [f.model_copy(update={"leaking": None}) for f in released]  # what the code before the rule sent
    before = MathDomain().plan_jobs(as_before, config, as_before)
    assert [(j.family.pid, j.target, j.messages) for j in kept] == [(j.family.pid, j.target, j.messages) for j in before]
    for f in released:
        mine = {j.target: j.messages[-1]["content"] for j in jobs if j.family.pid == f.pid}
        dropped = LEAKING.get(f.pid[:8], [])
        tested = [i for i, m in enumerate(f.milestones) if m.type.value != "INTEGRATE"]
        assert sorted(t for t in mine if t.startswith("m")) == [f"m{i}" for i in tested if i not in dropped]
        for i in tested:
            shown = description(f.milestones[i])
            assert (shown in mine["C2_descriptions"]) == (i not in dropped), (f.pid, i)
            assert (f"{shown}\n\nAnswer: {f.milestones[i].answer}" in mine["C3_gold_answers"]) == (i not in dropped)
        assert mine["C3_gold_answers"].count("Sub-goal") == len(tested) - len(dropped)


def test_a_probe_sends_no_leaking_milestone_and_the_report_lists_them(tmp_path, release_data):
    """Against the loopback server: the requests sent for the three families, with the rule and with
    --keep-leaking; report.md and report.json list the dropped milestones and the column that kept them."""
    families = tmp_path / "families.jsonl"
    lines = [line for line in (release_data / "families_sample.jsonl").read_text().splitlines()
             if json.loads(line)["pid"][:8] in {*LEAKING, "f8a3e468", "de4b7c19"}]
    families.write_text("\n".join(lines) + "\n")
    fams = {f.pid: f for f in read_jsonl(families, Family)}
    store, runner = tmp_path / "s.sqlite", CliRunner()
    imported = runner.invoke(app, ["import", str(families), "--store", str(store)])
    assert imported.exit_code == 0, imported.output
    for pid, dropped in LEAKING.items():
        full = next(p for p in fams if p.startswith(pid))
        assert f"leak rule: {full} milestone(s) {', '.join(f'm{i}' for i in dropped)} restate" in imported.output
    sent: list[str] = []

    def script(messages, body):
        sent.append(messages[-1]["content"])
        return r"\boxed{0}"

    def probe(student: str, *more: str) -> list[str]:
        sent.clear()
        with LoopbackServer(script=script) as server:
            r = runner.invoke(app, ["probe", "--student", student, "--base-url", server.openai_base_url, "--k", "1",
                                    "--conditions", "C2", "--conditions", "C3", "--include-unusable",
                                    "--store", str(store), *more])
        assert r.exit_code == 0, r.output
        return list(sent)

    ruled, kept = probe("openai/ruled"), probe("openai/kept", "--keep-leaking")
    for pid, f in fams.items():
        for i, m in enumerate(f.milestones):
            dropped = i in LEAKING.get(pid[:8], [])
            assert (m.prompt in ruled) == (not dropped) and m.prompt in kept
            c3 = f"{description(m)}\n\nAnswer: {m.answer}"
            assert any(c3 in s for s in ruled) == (not dropped) and any(c3 in s for s in kept)
    assert len(kept) - len(ruled) == sum(map(len, LEAKING.values()))  # one Stage 0 request per milestone at K=1
    out = tmp_path / "report"
    r = runner.invoke(app, ["report", "--student", "openai/ruled", "--student", "openai/kept", "--out", str(out),
                            "--store", str(store)])
    assert r.exit_code == 0, r.output
    rule = json.loads((out / "report.json").read_text())["leak_rule"]
    # b36a1161 is in no table of the report (its released reference answer is unusable: listed apart)
    assert {(d["pid"][:8], d["target"]) for d in rule["dropped"]} == {
        (pid, f"m{i}") for pid, idx in LEAKING.items() for i in idx if pid != "b36a1161"}
    assert rule["kept_by"] == ["openai/kept"]
    md = (out / "report.md").read_text()
    assert "## Leak rule" in md and "Probed with them kept (--keep-leaking): openai/kept" in md
