"""`ladder prim probe --dimensions a,b` (and `--primitive-source a,b`) take a comma list like every other
repeated option (issue 43): the same jobs as the option repeated."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer


def test_a_comma_list_of_dimensions_is_the_option_repeated(tmp_path: Path, release_data: Path) -> None:
    store, runner = tmp_path / "s.sqlite", CliRunner()
    for args in (["import", str(release_data / "families_sample.jsonl")],
                 ["prim", "import", str(release_data / "prim_gold.jsonl")]):
        assert runner.invoke(app, [*args, "--store", str(store)]).exit_code == 0
    estimates = []
    with LoopbackServer(script=lambda m, b: "\\boxed{0}") as server:
        for options in (["--dimensions", "discovery,execution", "--primitive-source", "gold,plan"],
                        ["--dimensions", "discovery", "--dimensions", "execution", "--primitive-source", "gold",
                         "--primitive-source", "plan"]):
            result = runner.invoke(app, ["prim", "probe", "--student", "openai/s", *options, "--dry-run", "--json",
                                         "--base-url", server.openai_base_url, "--store", str(store)])
            assert result.exit_code == 0, result.output
            estimates.append(json.loads(result.stdout.splitlines()[-1]))
        assert server.total == 0  # a dry run asks no model
    assert estimates[0] == estimates[1] and estimates[0]["calls"] > 0
