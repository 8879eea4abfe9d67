"""Against a real third-party server: llama-cpp-python's ``llama_cpp.server`` (see the
``llama_server`` fixture). Requests are counted on the server's side, from its access log."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Literal

import aiohttp
from aiohttp import web
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import StructuredOutputError, make_client
from oracleladder.store import Store
from oracleladder.testing.llama_server import LlamaServer


async def _calls(store: str) -> list:
    s = await Store.open(Path(store))
    try:
        return await s.calls()
    finally:
        await s.close()


def test_probe_then_cached_rerun_sends_nothing(sample_store: Path, llama_server) -> None:
    runner = CliRunner()
    store = str(sample_store)
    probe = ["probe", "--student", "openai/smollm2", "--base-url", llama_server.base_url, "--limit", "3",
             "--k", "2", "--max-tokens", "16", "--concurrency", "2", "--store", store, "--json"]
    before = len(llama_server.chat_statuses())
    result = runner.invoke(app, probe)
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.strip().splitlines()[-1])
    served = llama_server.chat_statuses()[before:]
    assert first["families"] == 3 and first["failures"] == 0
    assert len(served) == first["requests"] > 0 and set(served) == {200}
    gguf = str(llama_server.model_path)  # the one model it lists
    # a message names the weights by their file, not by the path the server loaded them from, and the
    # calls are keyed by that file (tests/clients/test_served_identity.py)
    assert (f"serves one model, the file {Path(gguf).name}: the calls for openai/smollm2 are cached as calls of "
            f"'{Path(gguf).name}'") in result.output
    assert gguf not in result.output
    assert {c.model for c in asyncio.run(_calls(store))} == {Path(gguf).name}

    result = runner.invoke(app, probe)
    assert result.exit_code == 0, result.output
    rerun = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(llama_server.chat_statuses()) == before + len(served)  # the server saw nothing new
    assert rerun["requests"] == 0 and rerun["cache_hits"] == first["requests"]


def test_default_concurrency_is_what_the_server_runs_at_once(sample_store: Path, llama_server) -> None:
    """llama-cpp-python's server answers one request at a time and says so nowhere but in what it is
    (no /props): the run says it starts at 1, and no request waits in its queue past the timeout."""
    result = CliRunner().invoke(app, ["probe", "--student", "openai/smollm2", "--base-url", llama_server.base_url,
                                      "--limit", "3", "--k", "2", "--no-stage0", "--conditions", "C1",
                                      "--max-tokens", "16", "--store", str(sample_store), "--json"])  # 1st skipped
    assert result.exit_code == 0, result.output
    said = (f"{llama_server.base_url} runs 1 request(s) at once (llama-cpp-python's server, by its "
            "/openapi.json): --concurrency 1")
    assert said in result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["timeouts"] == 0 and summary["requests"] == summary["successes"] == 4


def test_the_cache_holds_at_a_new_port_and_with_a_replica(sample_store: Path, llama_server) -> None:
    """Issue 31: the same model at another port, then behind two replicas, answers from the cache (the
    servers' access logs count 0 new requests); --cache-tag says the weights changed, and asks again."""
    runner = CliRunner()
    # --limit 3: the sample's first family (an unusable reference answer) is skipped, two are asked
    probe = ["probe", "--student", "openai/smollm2", "--limit", "3", "--k", "1", "--conditions", "C1", "--no-stage0",
             "--max-tokens", "4", "--concurrency", "1", "--store", str(sample_store), "--json"]

    def run(*args: str) -> dict:
        result = runner.invoke(app, [*probe, *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout.strip().splitlines()[-1])

    before = len(llama_server.chat_statuses())
    first = run("--base-url", llama_server.base_url)
    assert first["requests"] == len(llama_server.chat_statuses()) - before == 2
    with LlamaServer(llama_server.model_path) as moved:  # the same model, restarted on another port
        assert moved.port != llama_server.port
        at_new_port = run("--base-url", moved.base_url)
        replicas = run("--base-url", llama_server.base_url, "--base-url", moved.base_url)
        assert len(moved.chat_statuses()) == 0 and len(llama_server.chat_statuses()) - before == 2
        assert at_new_port["requests"] == replicas["requests"] == 0
        assert at_new_port["cache_hits"] == replicas["cache_hits"] == 2
        retagged = run("--base-url", moved.base_url, "--cache-tag", "after-finetune")
        assert retagged["requests"] == len(moved.chat_statuses()) == 2


def test_compile_learns_the_structured_mode_the_server_takes(tmp_path: Path, llama_server, caplog) -> None:
    """llama.cpp's server refuses a json_schema response_format with HTTP 500 and a validation
    message: each such call is sent once (never retried as transient), the client says once that it
    steps down to json_object, re-sends there, and every problem's attempt is stored with its reason."""
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps({"pid": f"p{i}", "problem": f"What is {i} + {2 * i}?",
                                            "answer": str(3 * i)}) + "\n" for i in (1, 2, 3)))
    store = tmp_path / "s.sqlite"
    before = len(llama_server.chat_statuses())
    result = CliRunner().invoke(app, ["compile", str(problems), "--teacher", "openai/smollm2", "--base-url",
                                      llama_server.base_url, "--max-tokens", "48", "--max-attempts", "1",
                                      "--no-independent-solve", "--store", str(store), "--json"])
    assert result.exit_code == 1, result.output  # SmolLM2 compiles none in 48 tokens: a compile of nothing fails
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    served = llama_server.chat_statuses()[before:]
    rejected = served.count(500)
    assert 1 <= rejected <= 3 and summary["retries"] == 0  # at most the calls in flight before it was learned
    assert rejected == summary["failures"] and served.count(200) == summary["successes"] == 3
    assert len(served) == summary["requests"] == rejected + 3
    learned = [r.getMessage() for r in caplog.records if "rejects structured mode" in r.getMessage()]
    assert len(learned) == 1 and "json_schema" in learned[0] and "use json_object from now on" in learned[0]

    async def attempts() -> list:
        s = await Store.open(store)
        try:
            return [a for pid in ("p1", "p2", "p3") for a in await s.compile_attempts(pid, "openai/smollm2")]
        finally:
            await s.close()

    stored = asyncio.run(attempts())
    assert [a.pid for a in stored] == ["p1", "p2", "p3"]
    for a in stored:  # SmolLM2 cannot finish a plan in 48 tokens: each attempt says so
        assert not a.passed and a.errors and a.errors[0]["reason"]


def test_wrong_url_or_wire_format_is_one_line_and_a_failure(sample_store: Path, llama_server) -> None:
    store = str(sample_store)
    runner = CliRunner()
    root = llama_server.base_url.removesuffix("/v1")
    probe = ["probe", "--limit", "2", "--k", "1", "--conditions", "C1_direct", "--no-stage0", "--store", store]
    cases = [
        (["--student", "openai/smollm2", "--base-url", root],
         f"{root}/chat/completions not found (HTTP 404): did you mean {root}/v1 ?"),
        (["--student", "anthropic/smollm2", "--base-url", root],
         f"{root}/v1/messages not found (HTTP 404): this server does not speak the Anthropic format"),
    ]
    for args, said in cases:
        result = runner.invoke(app, probe + args)
        assert result.exit_code == 1, result.output
        lines = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and said in lines[0] and "Traceback" not in result.output


class _Recorder:
    """A pass-through proxy in front of the real server that keeps every chat body it forwards, as
    the server receives it, and the server's status for it."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.chats: list[tuple[dict, int]] = []

    async def _forward(self, request: web.Request) -> web.Response:
        raw = await request.read()
        async with self._session.request(request.method, self.upstream + request.path_qs, data=raw,
                                         headers={"Content-Type": "application/json"}) as r:
            body = await r.read()
            if request.path.endswith("/chat/completions"):
                self.chats.append((json.loads(raw), r.status))
            return web.Response(body=body, status=r.status, content_type="application/json")

    async def __aenter__(self) -> _Recorder:
        self._session = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()
        await self._session.close()


MARK = "distance-unit-5c1e"  # in the schema only


class Distance(BaseModel):
    value: int
    unit: Literal["m", "km"] = Field(description=f"the {MARK}")


async def test_the_schema_reaches_the_real_server_once_per_mode(llama_server) -> None:
    """Every structured mode's body (instructor's for the mode) as llama.cpp's server received it
    carries the schema once: the json_schema one it refuses, the json_object one (the schema in the
    prompt, a JSON-object response_format: any JSON object, not the schema, constrains the decoding)
    it answers, as it answers tools and md_json."""
    async with _Recorder(llama_server.base_url) as proxy:
        for mode in ("json_schema", "auto", "tools", "md_json"):
            c = make_client("openai/smollm2", base_url=proxy.base_url, structured=mode)
            request = c.request("A walk of 3 km. How far, as JSON?", temperature=0.0, max_tokens=48)
            try:
                out = await c.structured(request, Distance)
            except Exception as e:  # noqa: BLE001 - what the small model makes of a mode is not the point here
                out = e
            finally:
                await c.aclose()
            if mode == "auto":  # stepped down to json_object: a reply, valid or not
                assert isinstance(out, (Distance, StructuredOutputError)), out
    modes = [("json_schema" if "json_schema" in json.dumps(b.get("response_format"))
              else "json_object" if "response_format" in b else "tools" if "tools" in b else "md_json", status)
             for b, status in proxy.chats]
    assert modes == [("json_schema", 500), ("json_schema", 500), ("json_object", 200), ("tools", modes[3][1]),
                     ("md_json", 200)]
    for body, _ in proxy.chats:
        assert json.dumps(body).count(MARK) == 1, body


def test_a_killed_llama_server_ends_the_probe_with_exit_3_and_a_restarted_one_completes_it(
        sample_store: Path, llama_server, quick_retries: None) -> None:
    """Issue 31: llama-cpp-python's server SIGKILLed mid-probe (a crash, an OOM kill). The run keeps every
    answer that came back, names the jobs left, exits 3 and says how to resume; the server started again
    on its port is asked exactly the missing jobs (its access log counts them)."""
    server = LlamaServer(llama_server.model_path).start()
    probe = ["probe", "--student", "openai/smollm2", "--base-url", server.base_url, "--limit", "3", "--k", "2",
             "--no-stage0", "--conditions", "C1,C2", "--max-tokens", "8", "--concurrency", "1",
             "--store", str(sample_store)]
    jobs = 2 * 2 * 2  # families x conditions x k: the sample's first family (unusable reference) is skipped

    def kill_after_three() -> None:
        while len(server.chat_statuses()) < 3:
            time.sleep(0.02)
        server.kill()

    killer = threading.Thread(target=kill_after_three)
    killer.start()
    try:
        result = CliRunner().invoke(app, probe)
    finally:
        killer.join()
        server.stop()
    answered = server.chat_statuses().count(200)
    assert result.exit_code == 3, result.output
    assert 3 <= answered < jobs
    # Every answer that came back is kept. The server logs a 200 as it starts the response, so with one
    # call in flight the kill may cut off the body of the last one it logged: that answer never came back.
    kept = asyncio.run(_rollouts(str(sample_store)))
    assert answered - 1 <= kept <= answered
    left = jobs - kept
    assert f"{left} jobs failed (no answer; rerun the same command to ask them again)" in result.stderr
    assert "done_with_failures; rerun the same command to resume" in result.stderr
    assert "Traceback" not in result.output

    with LlamaServer(llama_server.model_path, port=server.port) as back:
        rerun = CliRunner().invoke(app, [*probe, "--json"])
        assert rerun.exit_code == 0, rerun.output
        assert back.chat_statuses() == [200] * left  # only what was missing is asked
    assert asyncio.run(_rollouts(str(sample_store))) == jobs


async def _rollouts(store: str) -> int:
    s = await Store.open(Path(store))
    try:
        return len(await s.rollouts())
    finally:
        await s.close()
