"""A server whose usage lies (a negative count, one past any model's context, one that is no number)
through the CLI against the loopback server: each such reply is a failed call, never an answer nor
a cost of its count; it is not retried, it is counted at its bound, and --max-cost stops the run as
it does with honest usage. Nothing negative or infinite reaches the store."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients.errors import InvalidUsage
from oracleladder.clients.usage import MAX_TOKENS, token_count
from oracleladder.testing import LoopbackServer
from tests.helpers import rows

STUDENT = "openai/student"
EXIT_INCOMPLETE = 3


class LyingServer(LoopbackServer):
    """The loopback server, its usage saying ``lie`` for the prompt's tokens."""

    def __init__(self, lie: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lie = lie

    def _completion(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        reply = super()._completion(body, text)
        return {**reply, "usage": {**reply["usage"], "prompt_tokens": self.lie}}


def _probe(store: Path, server: LoopbackServer, prices: Path) -> Any:
    # $0.001 a token in and out: a call costs about $0.25 at the server's honest count, at most about $0.95
    return CliRunner().invoke(app, ["probe", "--student", STUDENT, "--store", str(store), "--base-url",
                                    server.openai_base_url, "--concurrency", "4", "--k", "2", "--limit", "3",
                                    "--no-stage0", "--max-tokens", "50", "--prices", str(prices),
                                    "--max-cost", "2", "--json"])


@pytest.mark.parametrize("lie", [-100_000_000, 1e308, "abc"], ids=["negative", "1e308", "not a number"])
def test_a_lying_usage_is_a_failed_call_counted_at_its_bound(tmp_path: Path, sample_store: Path, lie: Any) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"date": "2031-02-03", "models": {STUDENT: {"input": 1000.0, "output": 1000.0}}}))
    with LyingServer(lie, script={"*": r"\boxed{1}"}) as server:
        result = _probe(sample_store, server, prices)
        asked = server.total
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    summary = json.loads(result.stdout.splitlines()[-1])
    assert "stopped at the budget" in summary["budget_stop"]
    # each reply was paid once and counted at its bound: no retry, and the spend stays in the budget
    assert summary["requests"] == asked and summary["retries"] == 0
    assert summary["failures"] == asked >= 2
    assert 0 < summary["cost_usd"] <= 2.0
    # never an answer, never a cost of its count: every call failed, saying why
    assert rows(sample_store, "SELECT COUNT(*) FROM rollouts") == [(0,)]
    errors = rows(sample_store, "SELECT error, tokens_in, tokens_out FROM calls")
    assert len(errors) == asked
    assert all("InvalidUsage" in e and "no count of tokens" in e and t_in == t_out == 0 for e, t_in, t_out in errors)
    (cost,) = rows(sample_store, "SELECT cost_usd FROM runs WHERE kind = 'probe'")[0]
    assert math.isfinite(cost) and cost == pytest.approx(summary["cost_usd"])


def test_a_count_is_a_whole_number_of_tokens_up_to_a_billion() -> None:
    assert [token_count(v, "n") for v in (None, 0, 7, 7.0, MAX_TOKENS)] == [0, 0, 7, 7, MAX_TOKENS]
    for bad in (-1, 1.5, math.inf, math.nan, 1e308, MAX_TOKENS + 1, 2**63, "12", True, [3]):
        with pytest.raises(InvalidUsage, match="no count of tokens"):
            token_count(bad, "prompt_tokens")
