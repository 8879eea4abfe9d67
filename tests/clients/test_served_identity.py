"""A call names the served model by what it is, never by how its path was typed or the order of the
replicas (issue 43, item 4), against llama-cpp-python's own server: the same GGUF served by its absolute
and by a relative path, and the two servers as replicas in either order, answer from the cache (the
servers' access logs count 0 new requests); the message says which identity the calls are cached as."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing.llama_server import LlamaServer


def test_one_gguf_by_two_paths_and_replicas_in_either_order_is_one_model(sample_store: Path, llama_server) -> None:
    runner = CliRunner()
    # --limit 3: the sample's first family (an unusable reference answer) is skipped, two are asked
    probe = ["probe", "--student", "openai/smollm2", "--limit", "3", "--k", "1", "--conditions", "C1", "--no-stage0",
             "--max-tokens", "4", "--concurrency", "1", "--store", str(sample_store), "--json"]

    def run(*urls: str) -> tuple[dict, str]:
        result = runner.invoke(app, [*probe, *(a for u in urls for a in ("--base-url", u))])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr

    absolute = llama_server.model_path.resolve()
    relative = os.path.relpath(absolute)  # the same file, typed another way
    assert relative != str(absolute) and llama_server.model_path.is_absolute()
    before = len(llama_server.chat_statuses())
    first, said = run(llama_server.base_url)
    assert first["requests"] == len(llama_server.chat_statuses()) - before == 2
    assert f"the calls for openai/smollm2 are cached as calls of '{absolute.name}'" in said
    with LlamaServer(relative) as other:
        with urllib.request.urlopen(other.base_url + "/models") as r:
            listed = json.loads(r.read())
        assert [m["id"] for m in listed["data"]] == [relative]  # the server spells it as it was typed
        by_relative, said = run(other.base_url)
        forward, _ = run(llama_server.base_url, other.base_url)
        backward, _ = run(other.base_url, llama_server.base_url)
        assert f"the calls for openai/smollm2 are cached as calls of '{absolute.name}'" in said
        assert len(other.chat_statuses()) == 0 and len(llama_server.chat_statuses()) - before == 2
        assert by_relative["requests"] == forward["requests"] == backward["requests"] == 0
        assert by_relative["cache_hits"] == forward["cache_hits"] == backward["cache_hits"] == 2
