"""Re-anchoring from counts: the paper's Tables 3 and 5 give its Tables 4 and 6, cell for cell."""
import json

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.construction.reanchor import reanchor
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators import answer_problem

MODELS = ["Qwen-base", "OutcomeRL-2K", "MilestoneRL-2K", "gpt-oss-20b", "Llama-70B", "DeepSeek-V3.1"]


def _table(rows: list[list[int | None]]) -> dict[str, dict[str, int]]:
    return {a: {m: n for m, n in zip(MODELS, row) if n is not None} for a, row in zip(MODELS, rows)}


# Table 3 (16K milestone test): rows are anchors, None is the anchor's own unscored column.
TABLE3 = _table([[None, 140, 152, 102, 142, 99], [144, None, 150, 100, 132, 101], [152, 145, None, 103, 139, 104],
                 [108, 103, 114, None, 97, 96], [135, 123, 126, 89, None, 91], [103, 100, 106, 86, 96, None]])
SUBSETS3 = dict(zip(MODELS, [236, 208, 226, 165, 230, 156]))
TABLE4 = [[1.00, .67, .33, .67, .67, .67], [.67, 1.00, 1.00, 1.00, .67, 1.00], [.33, 1.00, 1.00, 1.00, 1.00, 1.00],
          [.67, 1.00, 1.00, 1.00, .67, 1.00], [.67, .67, 1.00, .67, 1.00, .67], [.67, 1.00, 1.00, 1.00, .67, 1.00]]
# Table 5 (4K milestone test, the construction budget) and Table 6.
TABLE5 = _table([[None, 143, 150, 103, 144, 104], [147, None, 146, 102, 126, 101], [154, 144, None, 106, 135, 104],
                 [110, 103, 115, None, 91, 99], [137, 119, 123, 84, None, 86], [103, 97, 104, 89, 88, None]])
TABLE6 = [[1.00, .67, .33, .33, 1.00, .33], [.67, 1.00, 1.00, .33, .67, .33], [.33, 1.00, 1.00, .67, .67, .67],
          [.33, .33, .67, 1.00, .67, 1.00], [1.00, .67, .67, .67, 1.00, .67], [.33, .33, .67, 1.00, .67, 1.00]]


def _cells(table) -> list[list[float]]:
    return [[round(table.tau[a][b], 2) for b in MODELS] for a in MODELS]


@pytest.mark.parametrize("counts,expected,mean", [(TABLE3, TABLE4, "+0.80"), (TABLE5, TABLE6, "+0.62")])
def test_published_counts_give_the_published_kendall_table(counts, expected, mean):
    table = reanchor(counts)
    assert _cells(table) == expected
    assert f"{table.mean:+.2f}" == mean
    assert (table.positive, table.pairs) == (15, 15)


def test_a_tie_is_scored_as_tau_b_and_an_all_tied_ranking_is_undefined():
    tied = reanchor({"A": {"B": 1, "C": 5, "D": 5, "E": 9}, "B": {"A": 3, "C": 2, "D": 1, "E": 4}})
    # on C, D, E: 2 concordant pairs, one tied in A's counts; tau-b = 2 / sqrt(2 * 3) (tau-c would give 2/3)
    assert round(tied.tau["A"]["B"], 4) == round(2 / 6 ** 0.5, 4)
    flat = reanchor({"A": {"B": 1, "C": 5, "D": 5}, "B": {"A": 3, "C": 2, "D": 2}})
    assert flat.tau["A"]["B"] is None and flat.mean is None and flat.positive == 0


def test_an_anchor_without_a_count_for_a_model_is_refused():
    with pytest.raises(ValueError, match="anchor B: no count for D"):
        reanchor({"A": {"B": 1, "C": 2, "D": 3}, "B": {"A": 1, "C": 2}})


def test_cli_reads_a_counts_file_and_prints_the_table(tmp_path):
    path = tmp_path / "table3.json"
    path.write_text(json.dumps({"subsets": SUBSETS3, "counts": TABLE3}))
    out = CliRunner().invoke(app, ["reanchor", "--counts", str(path), "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert round(got["tau"]["Qwen-base"]["MilestoneRL-2K"], 2) == 0.33
    assert (round(got["mean"], 2), got["positive"], got["subsets"]["DeepSeek-V3.1"]) == (0.80, 15, 156)
    text = CliRunner().invoke(app, ["reanchor", "--counts", str(path)], terminal_width=200)
    assert text.exit_code == 0 and "mean +0.80; 15 of 15 pairs positive" in text.output
    assert "236" in text.output  # the subset size beside its anchor
    path.write_text("{}")
    bad = CliRunner().invoke(app, ["reanchor", "--counts", str(path)])
    assert bad.exit_code == 2 and "not a counts file" in bad.output


# Re-anchoring from stored rollouts: five models on four released families. Per model and family,
# S: solves every milestone alone; P: solves the parent under every probe. Derived by hand:
# A's subset (S and not P) is f0, f1; B's f0, f3; C's f0, f2, f3; a composition gap is S and not P.
S = {"A": "1110", "B": "1101", "C": "1011", "D": "1111", "E": "0000"}
P = {"A": "0010", "B": "0100", "C": "0000", "D": "0000", "E": "0000"}
SUBSETS = {"A": 2, "B": 2, "C": 3}
COUNTS = {"A": {"B": 1, "C": 1, "D": 2, "E": 0}, "B": {"A": 1, "C": 2, "D": 2, "E": 0},
          "C": {"A": 1, "B": 2, "D": 3, "E": 0}}


def test_reanchor_from_stored_rollouts_probes_only_what_is_missing(tmp_path, release_data):
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                if len(f.tested()) == 2 and not answer_problem(f.parent_answer)][:4]
    sample = tmp_path / "four.jsonl"
    sample.write_text("".join(f.model_dump_json() + "\n" for f in families))
    problems = [f.parent_prompt.split("Problem:\n", 1)[1].strip() for f in families]

    def answer(messages, body):
        prompt, model = messages[-1]["content"], body["model"]
        i = next(i for i, p in enumerate(problems) if p in prompt)
        if "Milestone:" in prompt:
            gold = next(m.answer for m in families[i].milestones if m.prompt.strip() in prompt)
            return f"\\boxed{{{gold}}}" if S[model][i] == "1" else "no idea"
        return f"\\boxed{{{families[i].parent_answer}}}" if P[model][i] == "1" else "no idea"

    store = str(tmp_path / "s.sqlite")
    assert CliRunner().invoke(app, ["import", str(sample), "--store", store]).exit_code == 0
    args = ["reanchor", "--anchors", "openai/A,openai/B", "--anchors", "openai/C", "--students", "openai/D",
            "--students", "openai/E", "--k", "1", "--json", "--store", store]
    with LoopbackServer(script=answer) as server:
        first = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])
        assert first.exit_code == 0, first.output
        asked = server.total
        again = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])
        assert server.total == asked == 5 * 4 * (2 + 3)  # 5 models x 4 families x (2 milestones + C1-C3)
    stored = CliRunner().invoke(app, args)  # no server: the stored rollouts alone
    for result in (first, again, stored):
        got = json.loads(result.output.splitlines()[-1])
        strip = lambda d: {a.removeprefix("openai/"): v for a, v in d.items()}  # noqa: E731
        assert strip(got["subsets"]) == SUBSETS
        assert {a: strip(row) for a, row in strip(got["counts"]).items()} == COUNTS
        assert got["tau"] == reanchor({f"openai/{a}": {f"openai/{m}": n for m, n in row.items()}
                                      for a, row in COUNTS.items()}).tau
        assert got["incomplete"] == []


def test_reanchor_reads_stage0_and_the_parent_probes_at_their_own_budgets(tmp_path, release_data):
    """Tables 5-6: Stage 0 at the screening budget, C1-C3 at another. The scripted models solve every
    milestone at 512 tokens but only S's at 256; the parents only at 512, as P says. Counts read with
    --stage0-max-tokens 256 are S's (the hand-derived COUNTS), read at 512 alone they are not."""
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                if len(f.tested()) == 2 and not answer_problem(f.parent_answer)][:4]
    sample = tmp_path / "four.jsonl"
    sample.write_text("".join(f.model_dump_json() + "\n" for f in families))
    problems = [f.parent_prompt.split("Problem:\n", 1)[1].strip() for f in families]
    budgets: set[tuple[str, int]] = set()

    def answer(messages, body):
        prompt, model = messages[-1]["content"], body["model"]
        budget = body.get("max_tokens") or body["max_completion_tokens"]
        i = next(i for i, p in enumerate(problems) if p in prompt)
        if "Milestone:" in prompt:
            budgets.add(("stage0", budget))
            gold = next(m.answer for m in families[i].milestones if m.prompt.strip() in prompt)
            return f"\\boxed{{{gold}}}" if budget == 512 or S[model][i] == "1" else "no idea"
        budgets.add(("parent", budget))
        return f"\\boxed{{{families[i].parent_answer}}}" if budget == 512 and P[model][i] == "1" else "no idea"

    store = str(tmp_path / "s.sqlite")
    assert CliRunner().invoke(app, ["import", str(sample), "--store", store]).exit_code == 0
    args = ["reanchor", "--anchors", "openai/A,openai/B,openai/C", "--students", "openai/D,openai/E", "--k", "1",
            "--json", "--store", store, "--max-tokens", "512"]
    with LoopbackServer(script=answer) as server:
        split = CliRunner().invoke(app, [*args, "--stage0-max-tokens", "256", "--base-url", server.openai_base_url])
        assert split.exit_code == 0, split.output
        # C1-C3 at 512, Stage 0 (with C1, as a screen) at 256: 5 models x 4 families x (3 + 2 + 1)
        assert server.total == 5 * 4 * 6 and budgets == {("parent", 512), ("stage0", 256), ("parent", 256)}
        whole = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])  # Stage 0 at 512 too
        assert whole.exit_code == 0, whole.output
    strip = lambda d: {a.removeprefix("openai/"): v for a, v in d.items()}  # noqa: E731
    got = json.loads(split.output.splitlines()[-1])
    assert strip(got["subsets"]) == SUBSETS and got["incomplete"] == []
    assert {a: strip(row) for a, row in strip(got["counts"]).items()} == COUNTS
    # every milestone solved at 512: the subsets are the families each anchor fails directly
    assert strip(json.loads(whole.output.splitlines()[-1])["subsets"]) == {"A": 3, "B": 3, "C": 4}


# Table 29 on six families: which each of three anchors' screens keeps (by index), read by hand.
KEPT_BY = {"gpt": {0, 1}, "qwen": {0, 1, 2, 3}, "llama": {0, 1, 2, 4, 5}}


def test_reanchor_sets_crosses_the_families_each_anchors_screen_keeps(tmp_path):
    import asyncio

    from oracleladder.store import ScreenVerdict, Store

    pids = [f"p{i}" for i in range(6)]

    async def screened(path) -> None:
        async with Store.open(path) as store:
            for name, kept in KEPT_BY.items():
                for i, pid in enumerate(pids):
                    await store.put_screen_verdict(ScreenVerdict(
                        set_name=name, pid=pid, source="openai/teacher", anchor=f"openai/{name}", rule="direct-only",
                        k=4, max_tokens=16384, verdict="kept" if i in kept else "solved_directly", reason="",
                        direct=0 if i in kept else 1, stage0={}, run_id="r"))

    store = tmp_path / "s.sqlite"
    asyncio.run(screened(store))
    got = CliRunner().invoke(app, ["reanchor", "--sets", "gpt,qwen", "--sets", "llama", "--json", "--store", str(store)])
    assert got.exit_code == 0, got.output
    table = json.loads(got.output)
    assert table["kept"] == {"gpt": 2, "qwen": 4, "llama": 5} and table["screened"] == {"gpt": 6, "qwen": 6, "llama": 6}
    assert table["both"] == {a: {b: len(KEPT_BY[a] & KEPT_BY[b]) for b in KEPT_BY} for a in KEPT_BY}
    assert table["both"]["llama"]["qwen"] == 3 and table["anchors"]["gpt"] == "openai/gpt"
    text = CliRunner().invoke(app, ["reanchor", "--sets", "gpt,qwen,llama", "--store", str(store)], terminal_width=200)
    assert text.exit_code == 0 and "openai/llama (llama)" in text.output and "5/6 (83.3%)" in text.output
    assert "3/4" in text.output  # llama's screen keeps 3 of qwen's 4
    unknown = CliRunner().invoke(app, ["reanchor", "--sets", "gpt,nope", "--store", str(store)])
    assert unknown.exit_code == 2 and "no screened set 'nope'" in unknown.output
    both = CliRunner().invoke(app, ["reanchor", "--sets", "gpt", "--anchors", "openai/A", "--store", str(store)])
    assert both.exit_code == 2
