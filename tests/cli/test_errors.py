"""Each error a first afternoon meets is one line on stderr with its exit code (2 bad input, 1 other),
found before any store is made where it can be; and what is not an error is said, not refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer

runner = CliRunner()


def one_line(result: Result, code: int) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == code and len(lines) == 1, (result.exit_code, result.stderr)
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_base_url_without_scheme(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    line = one_line(runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "127.0.0.1:8101/v1",
                                        "--store", str(store)]), 2)
    assert line == ("error: base URL '127.0.0.1:8101/v1' is not an http(s) URL: did you mean "
                    "http://127.0.0.1:8101/v1 ?")
    assert not store.exists()


def test_a_chat_completions_url_is_cut_to_its_base_with_a_note(sample_store: Path) -> None:
    # nothing listens on port 9: a dry run sends nothing
    result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url",
                                 "http://127.0.0.1:9/v1/chat/completions", "--store", str(sample_store),
                                 "--limit", "1", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert ("http://127.0.0.1:9/v1/chat/completions ends with /chat/completions, which each call adds itself: "
            "calling http://127.0.0.1:9/v1") in result.stderr
    assert "http://127.0.0.1:9/v1 does not say how many requests it runs at once" in result.stderr


def test_a_missing_key_says_the_cli_options(tmp_path: Path, no_openai_env: None) -> None:
    store = tmp_path / "s.sqlite"
    line = one_line(runner.invoke(app, ["probe", "--student", "openai/gpt-x", "--store", str(store)]), 2)
    assert line == ("error: no API key for provider 'openai': set the environment variable OPENAI_API_KEY, "
                    "or name the variable that holds it: --api-key-env NAME")
    assert not store.exists()


def test_openai_base_url_is_honoured_without_the_openai_key(sample_store: Path, no_openai_env: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-theOpenAIkey12345")
    with LoopbackServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        result = runner.invoke(app, ["probe", "--student", "openai/s", "--store", str(sample_store), "--limit", "2",
                                     "--k", "1", "--no-stage0", "--conditions", "C1"])
        assert result.exit_code == 0, result.output
        assert srv.total == 1 and srv.credentials == [None]  # the second family's: the first's answer is unusable
    assert f"calling {srv.openai_base_url}, from OPENAI_BASE_URL (OPENAI_API_KEY goes only to api.openai.com" \
        in result.stderr


@pytest.mark.parametrize("option,value,said", [
    ("--param", "max_tokens=10", "--param max_tokens: the toolkit sets max_tokens itself (and records it with the "
                                 "run); use --max-tokens"),
    ("--extra-body", '{"temperature": 0}', "--extra-body temperature: the toolkit sets temperature itself (and "
                                           "records it with the run); use --temperature"),
    ("--param", "response_format={}", "use --structured"),
    ("--param", "model=x", "use --model-name"),
])
def test_request_fields_the_toolkit_sets_are_refused(tmp_path: Path, option: str, value: str, said: str) -> None:
    store = tmp_path / "s.sqlite"
    line = one_line(runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1",
                                        option, value, "--store", str(store)]), 2)
    assert said in line
    assert not store.exists()


def test_a_mistyped_set_or_student_is_met_with_did_you_mean(sample_store: Path) -> None:
    line = one_line(runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1",
                                        "--source", "relase", "--store", str(sample_store), "--dry-run"]), 2)
    assert "holds no families of roadmap set 'relase' (did you mean 'release'?) (sources in the store: release)" \
        in line
    with LoopbackServer() as srv:
        probed = runner.invoke(app, ["probe", "--student", "openai/smollm2", "--base-url", srv.openai_base_url,
                                     "--store", str(sample_store), "--limit", "2", "--k", "1", "--no-stage0",
                                     "--conditions", "C1"])
        assert probed.exit_code == 0, probed.output
    line = one_line(runner.invoke(app, ["report", "--student", "openai/smolm2", "--store", str(sample_store),
                                        "--out", str(sample_store.parent / "r")]), 2)
    assert "no rollouts of student 'openai/smolm2' (did you mean 'openai/smollm2'?)" in line
    assert "(students in the store: openai/smollm2)" in line


def test_compiling_an_empty_pool(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("")
    line = one_line(runner.invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                        "http://127.0.0.1:9/v1", "--store", str(tmp_path / "s.sqlite")]), 2)
    assert line == f"error: {pool}: no problems to compile (an empty pool)"


def test_a_compile_that_compiled_nothing_fails(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"pid": "p1", "problem": "What is 2 + 3?", "answer": "5"}) + "\n")
    with LoopbackServer(lambda messages, body: "I would rather explain it in words.") as srv:
        result = runner.invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url", srv.openai_base_url,
                                     "--max-attempts", "1", "--no-independent-solve", "--structured", "md_json",
                                     "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: compiled none of the 1 problems: each failed its checks (see above; `ladder check` "
                      "and --max-attempts)"]


def test_an_export_of_nothing_writes_nothing(sample_store: Path) -> None:
    out = sample_store.parent / "out.jsonl"
    line = one_line(runner.invoke(app, ["export", "--out", str(out), "--teacher", "relase", "--store",
                                        str(sample_store)]), 2)
    assert "holds no families from 'relase' (did you mean 'release'?)" in line and not out.exists()


def test_a_dry_run_makes_no_store(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"pid": "p1", "problem": "What is 2 + 3?", "answer": "5"}) + "\n")
    store = tmp_path / "s.sqlite"
    result = runner.invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url", "http://127.0.0.1:9/v1",
                                 "--store", str(store), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "about 1 teacher calls" in result.stderr and not store.exists()
    assert list(tmp_path.iterdir()) == [pool]


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("ladder ")


def test_check_reads_a_roadmap_set_of_the_store(sample_store: Path, release_data: Path) -> None:
    from_store = runner.invoke(app, ["check", "--source", "release", "--store", str(sample_store), "--json"])
    from_file = runner.invoke(app, ["check", str(release_data / "families_sample.jsonl"), "--json"])
    assert from_store.exit_code == from_file.exit_code == 0, from_store.output
    totals = [json.loads(r.stdout.strip().splitlines()[-1]) for r in (from_store, from_file)]
    assert totals[0] == totals[1] and totals[0]["totals"]
    line = one_line(runner.invoke(app, ["check", "--source", "relase", "--store", str(sample_store)]), 2)
    assert "(did you mean 'release'?)" in line
    one_line(runner.invoke(app, ["check"]), 2)


def test_probe_on_a_store_of_one_family_names_the_controls_and_the_way_out(tmp_path: Path, release_data: Path) -> None:
    """The controls borrow another family's milestones: with one family they cannot be asked, said in one
    line before any call; without them the probe runs."""
    one, store = tmp_path / "one.jsonl", tmp_path / "s.sqlite"
    one.write_text((release_data / "families_sample.jsonl").read_text().splitlines()[0] + "\n")
    assert CliRunner().invoke(app, ["import", str(one), "--store", str(store)]).exit_code == 0
    with LoopbackServer() as server:
        probe = ["probe", "--student", "openai/x", "--store", str(store), "--k", "1", "--base-url",
                 server.openai_base_url]
        said = one_line(CliRunner().invoke(app, probe), 2)
        assert server.total == 0
        without = CliRunner().invoke(app, [*probe, "--conditions", "C1,C2,C3"])
    assert "the controls C2-random, C3-mismatched borrow another family's milestones" in said
    assert "'release' has no second family with milestones" in said and "--conditions C1,C2,C3" in said
    assert without.exit_code == 0, without.output


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder this process cannot make a file in: one without write bits, or for root (whom bits do not
    stop) sysfs, which takes no new file."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no read-only folder here")


def test_a_new_store_in_a_read_only_folder_is_one_line_saying_so(tmp_path: Path, release_data: Path) -> None:
    folder = _read_only_folder(tmp_path)
    for store in (folder / "s.sqlite", folder / "new" / "s.sqlite"):
        result = CliRunner().invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)])
        said = one_line(result, 1)
        assert said == (f"error: {store.parent}: the folder is read-only: a new store cannot be made there "
                        "(--store PATH names another place)")
        assert "Traceback" not in result.output and not store.exists()
