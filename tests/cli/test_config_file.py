"""`--config FILE` (issue 44, item 1): a TOML file of a command's options gives the same run as the same
options given as flags (the same call keys, the same run config), a flag given too overrides the file's
value, and a bad file, key or value is one line naming the file and the key (exit 2), before any call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

S = "openai/s"
FLAGS = ["--k", "2", "--no-stage0", "--conditions", "C1,C2", "--max-tokens", "64", "--temperature", "0.5",
         "--seed", "3", "--grader", "paper", "--no-system-prompt"]
# the same options in a file: spelled as the fields are, or with dashes
TOML = """k = 2
stage0 = false
conditions = ["C1", "C2"]
max-tokens = 64
temperature = 0.5
seed = 3
grader = "paper"
system_prompt = false
"""
runner = CliRunner()


async def _stored(store: Path) -> tuple[list[str], dict]:
    async with Store.open(store) as s:
        [run] = await s.runs("probe")
        return sorted(c.key for c in await s.calls()), run.config


def _probe(store: Path, server: LoopbackServer, *args: str) -> tuple[list[str], dict]:
    result = runner.invoke(app, ["probe", "--student", S, "--store", str(store), "--base-url",
                                 server.openai_base_url, "--limit", "2", *args])
    assert result.exit_code == 0, result.output
    return asyncio.run(_stored(store))


def test_a_config_file_gives_the_same_run_as_its_flags_and_a_flag_overrides_it(
        tmp_path: Path, release_data: Path) -> None:
    config = tmp_path / "probe.toml"
    config.write_text(TOML, encoding="utf-8")
    stores = {name: tmp_path / f"{name}.sqlite" for name in ("flags", "file", "over", "default")}
    for store in stores.values():
        imported = runner.invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)])
        assert imported.exit_code == 0, imported.output
    with LoopbackServer({"*": r"\boxed{3}"}) as server:
        by_flags = _probe(stores["flags"], server, *FLAGS)
        by_file = _probe(stores["file"], server, "--config", str(config))
        # the file says --k 5 and --seed 9: the flags given win
        config.write_text(TOML.replace("k = 2", "k = 5").replace("seed = 3", "seed = 9"), encoding="utf-8")
        overridden = _probe(stores["over"], server, "--config", str(config), "--k", "2", "--seed", "3")
        by_default = _probe(stores["default"], server)
    keys, run_config = by_flags
    assert keys and run_config["conditions"] == ["C1_direct", "C2_descriptions"]
    assert by_file == by_flags and overridden == by_flags
    assert (run_config["max_tokens"], run_config["k"], run_config["grader"], run_config["system_prompt"]) == \
        (64, 2, "paper", False)
    assert by_default[0] != keys and by_default[1]["max_tokens"] == 4096  # the defaults: other calls


@pytest.mark.parametrize("text, said", [
    ("k = 0\n", "k=0: Input should be greater than or equal to 1"),
    ('k = "many"\n', "k='many': Input should be a valid integer"),
    ("max_tokens = 64\nbudget = 3\n", "no option 'budget' here"),
    ('grader = "lenient"\n', "grader='lenient': unknown grader 'lenient'"),
    ("k = \n", "not TOML"),
])
def test_a_bad_config_file_is_one_line_naming_the_file_and_the_key(tmp_path: Path, text: str, said: str) -> None:
    config, store = tmp_path / "bad.toml", tmp_path / "s.sqlite"
    config.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["probe", "--student", S, "--store", str(store), "--config", str(config)])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith(f"error: --config {config}: ") and said in lines[0], lines[0]
    assert not store.exists()  # refused before anything was done


def test_a_missing_config_file_and_a_bad_flag_over_a_good_file(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["probe", "--student", S, "--config", str(tmp_path / "none.toml")])
    assert missing.exit_code == 2 and f"--config {tmp_path / 'none.toml'}: No such file" in missing.output
    config = tmp_path / "ok.toml"
    config.write_text("k = 2\n", encoding="utf-8")
    bad = runner.invoke(app, ["probe", "--student", S, "--config", str(config), "--grader", "lenient",
                              "--store", str(tmp_path / "s.sqlite")])
    assert bad.exit_code == 2
    assert bad.output.strip() == "error: --grader lenient: unknown grader 'lenient'; known: paper, strict, extended"
