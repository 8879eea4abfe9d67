"""What reaches a server (loopback, requests seen on its side): server parameters at the body's
top level, keys only where they belong, and the endpoint in the call key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import MemoryCache, make_client
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

# the sample's first family's reference answer is unusable: its C1 is skipped, two are asked
PROBE = ["probe", "--student", "openai/m", "--limit", "3", "--k", "1", "--conditions", "C1_direct",
         "--no-stage0", "--max-tokens", "8", "--json"]


async def _call_keys(store: str) -> set[str]:
    s = await Store.open(Path(store))
    try:
        return {c.key for c in await s.calls()}
    finally:
        await s.close()


def test_server_parameters_reach_the_top_level_and_the_call_key(sample_store: Path) -> None:
    store = str(sample_store)
    bodies: list[dict] = []

    def script(messages, body):
        bodies.append(body)
        return r"\boxed{1}"

    with LoopbackServer(script) as srv:
        plain = CliRunner().invoke(app, PROBE + ["--base-url", srv.openai_base_url, "--store", store])
        assert plain.exit_code == 0, plain.output
        keys_plain = asyncio.run(_call_keys(store))
        n = len(bodies)
        extra = CliRunner().invoke(app, PROBE + ["--base-url", srv.openai_base_url, "--store", store,
                                                 "--param", "top_k=20", "--param", "min_p=0.05",
                                                 "--extra-body", '{"chat_template_kwargs": {"enable_thinking": false}}'])
        assert extra.exit_code == 0, extra.output
    assert n == 2 and len(bodies) == 4  # new parameters: new calls, not cache hits
    for body in bodies[n:]:
        assert body["top_k"] == 20 and body["min_p"] == 0.05
        assert body["chat_template_kwargs"] == {"enable_thinking": False} and "extra_body" not in body
    for body in bodies[:n]:
        assert "top_k" not in body and "chat_template_kwargs" not in body
    assert len(asyncio.run(_call_keys(store)) - keys_plain) == 2


async def test_python_extra_body_means_top_level_fields() -> None:
    seen: list[dict] = []
    async with LoopbackServer(lambda m, body: seen.append(body) or "ok") as srv:
        for transport in ("aiohttp", "sdk"):
            c = make_client("openai/m", base_url=srv.openai_base_url, transport=transport,
                            extra_body={"top_k": 5})
            await c.complete(c.request("hi", extra_body={"repetition_penalty": 1.1}))
            await c.aclose()
    for body in seen:
        assert body["top_k"] == 5 and body["repetition_penalty"] == 1.1 and "extra_body" not in body


@pytest.mark.parametrize("model,transport", [("openai/m", "aiohttp"), ("openai/m", "sdk"), ("anthropic/m", "auto")])
async def test_provider_keys_never_reach_another_server(monkeypatch, model: str, transport: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET")
    monkeypatch.setenv("MYKEY", "my-server-key")
    async with LoopbackServer(["ok"]) as srv:
        url = srv.openai_base_url if model.startswith("openai") else srv.anthropic_base_url
        c = make_client(model, base_url=url, transport=transport)
        await c.complete(c.request("hi"))
        await c.aclose()
        c = make_client(model, base_url=url, transport=transport, api_key_env="MYKEY")
        await c.complete(c.request("hi again"))
        await c.aclose()
        # the server's own key reaches it (as a bearer token or Anthropic's x-api-key: the SDK's choice)
        assert [c and c.removeprefix("Bearer ") for c in srv.credentials] == [None, "my-server-key"]


def test_cli_api_key_env(sample_store: Path, monkeypatch) -> None:
    store = str(sample_store)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    with LoopbackServer([r"\boxed{1}"]) as srv:
        result = CliRunner().invoke(app, PROBE + ["--base-url", srv.openai_base_url, "--store", store])
        assert result.exit_code == 0, result.output
        assert srv.credentials == [None, None]
        monkeypatch.setenv("MYKEY", "my-server-key")
        result = CliRunner().invoke(app, PROBE + ["--base-url", srv.openai_base_url, "--store", store,
                                                  "--api-key-env", "MYKEY", "--param", "seed=1"])
        assert result.exit_code == 0, result.output
        assert srv.credentials == [None, None, "Bearer my-server-key", "Bearer my-server-key"]
        monkeypatch.delenv("MYKEY")
        result = CliRunner().invoke(app, PROBE + ["--base-url", srv.openai_base_url, "--store", store,
                                                  "--api-key-env", "MYKEY"])
        assert result.exit_code == 2 and "MYKEY" in result.output


# Keys that the code before endpoints entered the key gave these calls (computed with it): the
# stores people have hold them, so calls to the providers' own endpoints must keep them.
STORED_KEYS = [
    ("openai/m", [{"role": "user", "content": "hi"}], {}, 0,
     "13c778a2df58f737e2ce3d651a9b7b14064d84288e1baeb653e8379d0036cfd9"),
    ("openai/gpt-5.4", [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
     {"temperature": 1.0, "max_tokens": 4096}, 3, "b9ee577d67a101a83e23be840a1562d63587935c2af7341dfc387b7e048ffe5b"),
    ("anthropic/claude-haiku-4-5", [{"role": "user", "content": "hi"}], {"max_tokens": 16}, 0,
     "8e6899eb3eea53f930e2ec190b969f405089d7ea7ac726352fb612dd923d9926"),
]


@pytest.mark.parametrize("model,messages,params,k,stored", STORED_KEYS)
async def test_default_endpoints_keep_their_stored_keys(monkeypatch, model, messages, params, k, stored) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    provider = model.split("/")[0]
    for base_url in (None, {"openai": "https://API.openai.com/v1/", "anthropic": "https://api.anthropic.com"}[provider]):
        c = make_client(model, base_url=base_url)
        assert c.request(messages, k=k, **params).key() == stored
        await c.aclose()


async def test_a_call_is_the_models_not_its_servers() -> None:
    """The same model at another server is answered from the cache (issue 31); another model behind
    the same served name, or the same model under a new cache tag, is asked."""
    cache = MemoryCache()
    async with LoopbackServer(["first", "retagged"]) as a, LoopbackServer(["other model"]) as b:
        answers = []
        for srv, model, tag in ((a, "openai/m", None), (b, "openai/m", None), (b, "openai/o", None),
                                (a, "openai/m", "v2")):
            c = make_client(model, base_url=srv.openai_base_url + "/", model_name="served", cache=cache, cache_tag=tag)
            answers.append((await c.complete(c.request("hi"))).text)
            await c.aclose()
        assert answers == ["first", "first", "other model", "retagged"] and (a.total, b.total) == (2, 1)


def test_refused_key_and_refused_connection_are_one_line(sample_store: Path, monkeypatch) -> None:
    store = str(sample_store)
    monkeypatch.setenv("MYKEY", "wrong")
    with LoopbackServer([r"\boxed{1}"], api_key="right") as srv:
        url = srv.openai_base_url
        cases = [
            ([], f"{url} wants a key (HTTP 401): put it in an environment variable and name that with --api-key-env NAME"),
            (["--api-key-env", "MYKEY"], f"{url} refused the key in MYKEY (HTTP 401): set MYKEY to a key it accepts"),
        ]
        for args, said in cases:
            result = CliRunner().invoke(app, PROBE + ["--base-url", url, "--store", store] + args)
            assert result.exit_code == 1 and result.output.strip().splitlines()[-1] == f"error: {said}", result.output
    with LoopbackServer(["x"]) as srv:  # a port nothing listens on any more
        url = srv.openai_base_url
    result = CliRunner().invoke(app, PROBE + ["--base-url", url, "--store", store])
    said = f"error: cannot connect to {url}: is the server running, and is --base-url right?"
    assert result.exit_code == 1 and result.output.strip().splitlines()[-1] == said, result.output


def test_compile_whose_every_call_failed_exits_nonzero(tmp_path: Path) -> None:
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"pid": "p1", "problem": "What is 1 + 1?", "answer": "2"}\n')
    with LoopbackServer(["x"], api_key="right") as srv:
        result = CliRunner().invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--base-url",
                                          srv.openai_base_url, "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"error: every teacher call failed: {srv.openai_base_url} wants a key (HTTP 401): put it in an "
        "environment variable and name that with --api-key-env NAME")
