"""`ladder compare` on two roadmap sets of the same five problems, one scripted student."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math.prompts import condition_prompt, stage0_prompt, versions
from oracleladder.schemas import LADDER, Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators.leak import with_leak_rule
from oracleladder.verify import verify_inprocess

K = 2
# correct answers out of K per (set, family position, condition); Stage 0 is always solved
PLAN = {
    ("a", 0): {"C1_direct": 2}, ("a", 1): {"C2_descriptions": 1}, ("a", 2): {"C3_gold_answers": 2},
    ("a", 3): {}, ("a", 4): {"C2_descriptions": 2},
    ("b", 0): {"C1_direct": 2}, ("b", 1): {}, ("b", 2): {"C3_gold_answers": 2},
    ("b", 3): {"C2_descriptions": 1}, ("b", 4): {"C2_descriptions": 2},
}


def _gradable(family: Family) -> bool:
    golds = [family.parent_answer] + [m.answer for _, m in family.tested()]
    return len(family.tested()) >= 2 and all(verify_inprocess(f"\\boxed{{{g}}}", g).accepted for g in golds)


def test_compare_two_roadmap_sets(tmp_path: Path, release_data: Path) -> None:
    set_a = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if _gradable(f)][:5]
    # the second roadmap set: the same problems, with the roadmap shown in reverse order
    set_b = [f.model_copy(update={"milestones": list(reversed(f.milestones))}) for f in set_a]
    files = {}
    for name, fams in (("a", set_a), ("b", set_b)):
        files[name] = tmp_path / f"{name}.jsonl"
        write_jsonl(files[name], (to_released(f) for f in fams))

    script: dict[str, tuple[str, int]] = {}
    # the prompts of the sets as imported: the leak rule drops a milestone restating its family's answer
    imported = {name: [with_leak_rule(f.model_copy(deep=True)) for f in fams] for name, fams in (("a", set_a), ("b", set_b))}
    for name, fams in imported.items():
        for pos, family in enumerate(fams):
            for _, m in family.tested():
                script[stage0_prompt(m)[1]["content"]] = (m.answer, K)
            for condition in LADDER.default:
                msgs, _ = condition_prompt(family, condition, fams, seed=0)
                script[msgs[1]["content"]] = (family.parent_answer, PLAN[(name, pos)].get(condition, 0))
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def student(messages: list[dict], body: dict) -> str:
        user = messages[-1]["content"]
        gold, n = script[user]
        with lock:
            i = seen[user]
            seen[user] += 1
        return f"\\boxed{{{gold}}}" if i < n else r"\boxed{987654321}"

    store, out = str(tmp_path / "cmp.sqlite"), tmp_path / "cmp"
    runner = CliRunner()
    for name in ("a", "b"):
        assert runner.invoke(app, ["import", str(files[name]), "--source", f"set-{name}", "--store", store]).exit_code == 0
    with LoopbackServer(script=student) as server:
        for name in ("a", "b"):
            result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", server.openai_base_url,
                                         "--k", str(K), "--source", f"set-{name}", "--store", store, "--concurrency", "8",
                                         "--include-unusable"])  # the sample's first family is one
            assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["compare", "--a", "set-a", "--b", "set-b", "--student", "openai/s",
                                 "--store", store, "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    agreement = data["agreement"]
    c2, c3 = agreement["C2"], agreement["C3"]
    # C2 recovers families 1 and 4 under set a, 3 and 4 under set b: 3 of 5 agree, both misses at 1 vs 0
    assert (c2["recovered_a"], c2["recovered_b"], c2["same"], c2["disagree"], c2["disagree_1_vs_0"]) == (2, 2, 3, 2, 2)
    assert (c3["recovered_a"], c3["recovered_b"], c3["same"]) == (1, 1, 5)
    assert agreement["both"]["same"] == 3
    assert "set-a" in (out / "compare.md").read_text()
    # the settings the student's results on each set were made at: one setting each, stated
    sent = " ".join(f"{n}@{v}" for n, v in versions(LADDER.default).items())  # every condition, Stage 0
    at = f"K = {K}, max_tokens = 4096, temperature = 1.0, grader = strict, prompts = {sent}"
    assert data["settings"] == {"set-a": at, "set-b": at}
    assert f"At: set-a: {at}; set-b: {at}." in (out / "compare.md").read_text()
