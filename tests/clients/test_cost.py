"""Cost before and during a run, through the CLI against the loopback server: prices are data (the
package's dated table, overridden by --prices FILE), --dry-run says exactly how many calls a probe
would make after the cache (the server's own count of the real run agrees), and --max-cost stops a
run before spend passes the budget, keeping everything finished; a rerun resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import DEFAULT_PRICES, Client, ConfigurationError, load_prices
from oracleladder.testing import FakeProvider, LoopbackServer
from tests.helpers import rows

STUDENT = "openai/student"
EXIT_INCOMPLETE = 3
# 100 loopback tokens (4 characters each) of answer, then a boxed answer
LONG_ANSWER = "x" * 400 + r" \boxed{1}"


def _prices(tmp_path: Path, input_usd: float, output_usd: float) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"date": "2031-02-03", "models": {STUDENT: {"input": input_usd, "output": output_usd}}}))
    return path


def _probe(store: Path, server: LoopbackServer, *extra: str):
    return CliRunner().invoke(app, ["probe", "--student", STUDENT, "--store", str(store),
                                    "--base-url", server.openai_base_url, "--concurrency", "4", *extra])


def test_package_prices_are_dated_data_a_file_overrides(tmp_path: Path) -> None:
    assert DEFAULT_PRICES.name.startswith("package prices of 20")
    gpt = DEFAULT_PRICES.cost("openai/gpt-4o", 1_000_000, 1_000_000)
    assert gpt == pytest.approx(12.5)
    assert DEFAULT_PRICES.cost("openai/gpt-4o", 1_000_000, 1_000_000, batch=True) == pytest.approx(6.25)
    assert DEFAULT_PRICES.cost("openai/unknown-model", 10, 10) is None

    table = load_prices(_prices(tmp_path, 2.0, 8.0))
    assert table.name == "prices.json of 2031-02-03 over the " + DEFAULT_PRICES.name
    assert table.cost(STUDENT, 1_000_000, 500_000) == pytest.approx(6.0)
    assert table.cost("openai/gpt-4o", 1_000_000, 1_000_000) == gpt  # the rest of the package table stays

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {STUDENT: {"input": -1, "output": 1}}}))
    with pytest.raises(ConfigurationError, match="bad.json: not a price table"):
        load_prices(bad)


def test_run_costs_at_the_given_prices_and_names_the_table(tmp_path: Path, sample_store: Path) -> None:
    with LoopbackServer({"*": r"\boxed{1}"}) as server:
        # the sample's first family's reference answer is unusable: its C1 is skipped
        result = _probe(sample_store, server, "--k", "1", "--limit", "3", "--no-stage0", "--conditions", "C1",
                        "--prices", str(_prices(tmp_path, 1000.0, 3000.0)), "--json")
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["requests"] == 2
    assert summary["cost_usd"] == pytest.approx((summary["tokens_in"] * 1000 + summary["tokens_out"] * 3000) / 1e6)
    assert summary["prices"] == "prices.json of 2031-02-03 over the " + DEFAULT_PRICES.name
    cost = rows(sample_store, "SELECT cost_usd FROM runs WHERE kind = 'probe'")[0][0]
    assert cost == pytest.approx(summary["cost_usd"])

    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    result = CliRunner().invoke(app, ["probe", "--student", STUDENT, "--store", str(sample_store),
                                      "--prices", str(bad)])
    assert result.exit_code == 1
    assert "broken.json: not a price table" in result.output and "Traceback" not in result.output


def test_dry_run_predicts_the_calls_of_the_real_run_exactly(tmp_path: Path, sample_store: Path) -> None:
    prices = str(_prices(tmp_path, 1.0, 4.0))
    with LoopbackServer({"*": r"\boxed{1}"}) as server:
        # warm the cache with part of the work: C1 of the first 3 families, Stage 0 included
        warm = _probe(sample_store, server, "--k", "2", "--limit", "3", "--conditions", "C1", "--prices", prices,
                      "--max-tokens", "300")
        assert warm.exit_code == 0, warm.output
        warmed = server.total
        assert warmed > 0
        runs = rows(sample_store, "SELECT COUNT(*) FROM runs")[0][0]

        dry = _probe(sample_store, server, "--k", "2", "--limit", "5", "--prices", prices, "--max-tokens", "300",
                     "--dry-run", "--json")
        assert dry.exit_code == 0, dry.output
        estimate = json.loads(dry.stdout.splitlines()[-1])
        assert server.total == warmed  # nothing was sent
        assert rows(sample_store, "SELECT COUNT(*) FROM runs")[0][0] == runs  # and no run recorded
        assert 0 < estimate["calls"] < estimate["jobs"]
        assert estimate["tokens_out_max"] == 300 * estimate["calls"]
        assert estimate["cost_usd_max"] == pytest.approx((estimate["tokens_in"] * 1.0 + estimate["tokens_out_max"] * 4.0) / 1e6)
        assert estimate["batch_cost_usd_max"] == pytest.approx(estimate["cost_usd_max"] / 2)

        text = _probe(sample_store, server, "--k", "2", "--limit", "5", "--prices", prices, "--max-tokens", "300",
                      "--dry-run")
        assert f"dry run: {estimate['calls']} calls after the cache" in text.output
        assert "prices.json of 2031-02-03" in text.output

        real = _probe(sample_store, server, "--k", "2", "--limit", "5", "--prices", prices, "--max-tokens", "300")
        assert real.exit_code == 0, real.output
        assert server.total - warmed == estimate["calls"]

        again = _probe(sample_store, server, "--k", "2", "--limit", "5", "--prices", prices, "--max-tokens", "300",
                       "--dry-run", "--json")
        assert json.loads(again.stdout.splitlines()[-1])["calls"] == 0


def test_dry_run_of_compile_counts_the_problems_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")  # the client is made; no call is
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps({"pid": f"p{i}", "problem": f"What is {i}+1?", "answer": str(i + 1)}) + "\n"
                                for i in range(3)))
    result = CliRunner().invoke(app, ["compile", str(problems), "--teacher", "openai/gpt-4o", "--store",
                                      str(tmp_path / "c.sqlite"), "--max-tokens", "1000", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout.splitlines()[-1])
    assert estimate["calls"] == 3 and estimate["tokens_out_max"] == 3000
    assert estimate["cost_usd_max"] == pytest.approx((estimate["tokens_in"] * 2.5 + 3000 * 10.0) / 1e6)


def test_max_cost_stops_before_the_budget_and_the_rerun_resumes(tmp_path: Path, sample_store: Path) -> None:
    # no charge for prompts; $0.01 per answer token: an answer costs about $1.02, at most $2 (200 tokens)
    prices = str(_prices(tmp_path, 0.0, 10_000.0))
    args = ("--k", "2", "--limit", "3", "--no-stage0", "--max-tokens", "200", "--prices", prices)
    budget = 5.0
    with LoopbackServer({"*": LONG_ANSWER}, latency=0.05) as server:
        dry = json.loads(_probe(sample_store, server, *args, "--dry-run", "--json").stdout.splitlines()[-1])
        jobs = dry["calls"]
        assert jobs == 2 * 6 * 2  # the first family's reference answer is unusable: its parent jobs are skipped

        stopped = _probe(sample_store, server, *args, "--max-cost", str(budget), "--json")
        assert stopped.exit_code == EXIT_INCOMPLETE, stopped.output
        summary = json.loads(stopped.stdout.splitlines()[-1])
        # it stopped when even the spend so far left no room for one more call at its worst
        assert budget - 2.0 < summary["cost_usd"] <= budget
        assert summary["requests"] == server.total >= 2  # it did spend, and stopped: no call was lost
        assert server.total < jobs
        assert "stopped at the budget" in summary["budget_stop"]
        assert "rerun the same command (with a larger --max-cost) to resume" in stopped.output
        status, cost = rows(sample_store,
                           "SELECT status, cost_usd FROM runs WHERE kind = 'probe' ORDER BY rowid DESC")[0]
        assert status == "stopped_at_budget" and cost == pytest.approx(summary["cost_usd"])
        # every call made was answered and kept as a rollout; none failed
        assert rows(sample_store, "SELECT COUNT(*) FROM rollouts")[0][0] == server.total
        assert rows(sample_store, "SELECT COUNT(*) FROM failed_jobs")[0][0] == 0

        resumed = _probe(sample_store, server, *args, "--json")
        assert resumed.exit_code == 0, resumed.output
        assert server.total == jobs  # only the jobs left are asked: no call twice
        assert rows(sample_store, "SELECT COUNT(*) FROM rollouts")[0][0] == jobs

    # the budget needs a price for the model (one on a server of one's own is free: OpenAI's API here)
    result = CliRunner().invoke(app, ["probe", "--student", "openai/no-price", "--store", str(sample_store),
                                      "--max-cost", "1"],
                                env={"OPENAI_API_KEY": "sk-never-sent", "OPENAI_BASE_URL": None})
    assert result.exit_code == 2 and "--max-cost: no price for openai/no-price" in result.output


async def test_a_model_without_a_price_costs_unknown_before_and_after_its_calls() -> None:
    c = Client(FakeProvider(lambda request: "an answer"), model="no-price")
    assert c.usage.cost_usd is None  # a cached rerun that makes no call says "unknown" too, not $0
    await c.complete(c.request("q"))
    assert c.usage.cost_usd is None
    priced = Client(FakeProvider(lambda request: "an answer"), model="gpt-4o", name="openai/gpt-4o")
    assert priced.usage.cost_usd == 0.0


def test_a_server_of_ones_own_is_free_on_a_run_and_its_cached_rerun(sample_store: Path) -> None:
    said = []
    with LoopbackServer({"*": r"\boxed{1}"}) as server:
        for _ in range(2):
            result = CliRunner().invoke(app, ["probe", "--student", "openai/unpriced", "--store", str(sample_store),
                                              "--base-url", server.openai_base_url, "--k", "1", "--limit", "2",
                                              "--no-stage0", "--conditions", "C1"])
            assert result.exit_code == 0, result.output
            said.append(next(line for line in result.stderr.splitlines() if line.startswith("run ")))
    assert "1 requests, 0 cache hits" in said[0] and "0 requests, 1 cache hits" in said[1]
    for line in said:
        assert line.endswith("cost $0.0000 (package prices of " + DEFAULT_PRICES.name.removeprefix("package prices of ")
                             + "; openai/unpriced free on a server of one's own)")


def _billed(server: LoopbackServer, prices: Path, *, batch: bool = False) -> float:
    """What the server billed: every answer it gave at the tokens it counted, at the test's prices."""
    table = load_prices(prices)
    return sum(table.cost(STUDENT, pin, pout, batch=batch) or 0.0 for pin, pout in server.billed)


# a server that counts the prompt at 1x, 2x, 3x the 4 characters a token of the loopback's usual
# count (a finer tokenizer), and one that bills the same but sends no usage at all
SERVERS = {"1x": {"prompt_tokens": 1.0}, "2x": {"prompt_tokens": 2.0}, "3x": {"prompt_tokens": 3.0},
           "no usage": {"usage": False}}


@pytest.mark.parametrize("counts", SERVERS)
def test_spend_never_passes_the_budget_whatever_the_server_counts(tmp_path: Path, sample_store: Path, counts: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    # $0.001 a token, in and out: a prompt costs about $0.2 at 1x (its bound about $0.9), an answer $0.05 at most
    prices = _prices(tmp_path, 1000.0, 1000.0)
    budget = 3.0
    with LoopbackServer({"*": r"\boxed{1}"}, **SERVERS[counts]) as server:
        result = _probe(sample_store, server, "--k", "2", "--limit", "3", "--no-stage0", "--max-tokens", "50",
                        "--prices", str(prices), "--max-cost", str(budget), "--json")
        billed = _billed(server, prices)
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    summary = json.loads(result.stdout.splitlines()[-1])
    assert "stopped at the budget" in summary["budget_stop"]
    assert 0 < billed <= budget  # what the server billed never passes the budget
    assert billed <= summary["cost_usd"] + 1e-9 <= budget + 1e-9  # and the run never counts less than it
    assert rows(sample_store, "SELECT status, cost_usd FROM runs WHERE kind = 'probe'") == [
        ("stopped_at_budget", pytest.approx(summary["cost_usd"]))]
    assert summary["unmetered"] == (summary["requests"] if counts == "no usage" else 0)
    said = [r for r in caplog.records if "reply without usage" in r.getMessage()]
    assert len(said) == (counts == "no usage")  # said once


def test_batch_submits_only_what_fits_the_budget(tmp_path: Path, sample_store: Path) -> None:
    prices = _prices(tmp_path, 1000.0, 1000.0)
    budget = 1.5  # at the batch price, half the online one
    with LoopbackServer({"*": r"\boxed{1}"}, prompt_tokens=3.0, batch_delay=0.2) as server:
        result = _probe(sample_store, server, "--k", "2", "--limit", "3", "--no-stage0", "--max-tokens", "50",
                        "--prices", str(prices), "--max-cost", str(budget), "--batch", "--batch-poll", "0.1",
                        "--batch-quiet", "0.3", "--json")
        billed = _billed(server, prices, batch=True)
        batches = server.batches.created
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    summary = json.loads(result.stdout.splitlines()[-1])
    assert "stopped at the budget" in summary["budget_stop"]
    assert batches >= 2  # the budget's room, batch after batch
    assert 0 < billed <= summary["cost_usd"] + 1e-9 <= budget + 1e-9
