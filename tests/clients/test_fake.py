"""The fake/NAME model: answers scripted in a JSONL file, through the same Client (cache, usage,
failures) as every wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.clients import BadRequestError, ConfigurationError, MemoryCache, make_client
from oracleladder.clients.fake import ENV_SCRIPT


def script(tmp_path: Path, *rules: dict) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(rule) + "\n" for rule in rules))
    return path


async def test_a_call_takes_the_first_rule_of_its_model_and_prompt_its_samples_in_turn(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_SCRIPT, str(script(
        tmp_path,
        {"model": "teacher", "answer": "a plan"},
        {"prompt": r"7 \* 6", "answer": ["\\boxed{42}", "\\boxed{41}"], "tokens_in": 12, "tokens_out": 5},
        {"answer": "\\boxed{0}"})))
    cache = MemoryCache()
    async with make_client("fake/student", cache=cache) as client:
        answers = [(await client.complete(client.request("What is 7 * 6?", k=k))).text for k in range(3)]
        assert answers == ["\\boxed{42}", "\\boxed{41}", "\\boxed{42}"]
        assert (await client.complete(client.request("What is 1 + 1?"))).text == "\\boxed{0}"
        again = await client.complete(client.request("What is 7 * 6?", k=1))
        assert again.text == "\\boxed{41}" and again.tokens_in == 12
        assert client.usage.cache_hits == 1 and client.usage.tokens_in == 3 * 12 and client.usage.tokens_out == 3 * 5
    async with make_client("fake/teacher") as client:
        assert (await client.complete(client.request("What is 7 * 6?"))).text == "a plan"


async def test_a_prompt_no_rule_answers_is_a_failed_call_never_an_answer(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_SCRIPT, str(script(tmp_path, {"prompt": "^only this$", "answer": "yes"})))
    async with make_client("fake/s", cache=MemoryCache()) as client:
        with pytest.raises(BadRequestError, match="no rule of .* answers this prompt"):
            await client.complete(client.request("something else"))
        assert client.usage.failures == 1 and client.usage.successes == 0


def test_a_script_that_cannot_be_read_is_one_line_naming_the_fault(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_SCRIPT, raising=False)
    with pytest.raises(ConfigurationError, match=f"set {ENV_SCRIPT}"):
        make_client("fake/s")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"answer": "ok"}\n{"answr": "typo"}\n')
    monkeypatch.setenv(ENV_SCRIPT, str(bad))
    with pytest.raises(ConfigurationError, match="bad.jsonl line 2 is not a rule"):
        make_client("fake/s")
    monkeypatch.setenv(ENV_SCRIPT, str(tmp_path / "missing.jsonl"))
    with pytest.raises(ConfigurationError, match="cannot read"):
        make_client("fake/s")
