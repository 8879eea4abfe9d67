"""The embedded `local` provider, on the real SmolLM2-135M-Instruct GGUF (no mocks)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from oracleladder.clients.base import ChatRequest
from oracleladder.clients.local import LocalProvider, derive_seed, find_gguf, without_amx_kernels
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("amx", [True, False])
def test_amx_kernels_are_off_while_loading_on_cpus_with_amx(monkeypatch, amx):
    """llama.cpp's AMX buffer type segfaults in decode; it is switched off only where AMX is reported."""
    import llama_cpp.llama_cpp as lib

    info = b"CPU : AVX2 = 1 | AMX_INT8 = 1 | " if amx else b"CPU : AVX2 = 1 | "
    monkeypatch.setattr(lib, "llama_print_system_info", lambda: info)
    assert lib.llama_model_default_params().use_extra_bufts
    with without_amx_kernels():
        assert lib.llama_model_default_params().use_extra_bufts is not amx
    assert lib.llama_model_default_params().use_extra_bufts


@pytest.fixture
def provider(local_provider: LocalProvider) -> LocalProvider:
    return local_provider  # the session's model (tests/conftest.py): loaded once


def _req(content: str, k: int = 0, **params) -> ChatRequest:
    return ChatRequest(
        provider="local",
        model="smollm2-135m-instruct",
        messages=[{"role": "user", "content": content}],
        params={"max_tokens": 24, **params},
        k=k,
    )


def test_finds_gguf():
    path = find_gguf()
    assert path.is_file() and path.suffix == ".gguf"


def test_env_override(monkeypatch, tmp_path):
    fake = tmp_path / "x.gguf"
    fake.write_bytes(b"GGUF")
    monkeypatch.setenv("LADDER_LOCAL_GGUF", str(fake))
    assert find_gguf() == fake


def test_real_generation(provider):
    res = asyncio.run(provider.complete(_req("Name three colors.", temperature=0.7)))
    assert res.text.strip()
    assert res.tokens_in > 0 and res.tokens_out > 0
    assert res.latency_s > 0 and res.finish_reason in {"stop", "length"}
    print(f"\nlocal speed: {res.tokens_out / res.latency_s:.1f} tokens/s "
          f"({res.tokens_out} tokens in {res.latency_s:.2f} s)")


def test_same_seed_same_text(provider):
    req = _req("Write one sentence about the sea.", temperature=0.9, seed=1234)
    a = asyncio.run(provider.complete(req))
    b = asyncio.run(provider.complete(req))
    assert a.text == b.text


def test_derived_seed_rerun_matches(provider):
    req = _req("Invent a name for a dog.", temperature=1.0)  # no seed: derived from key + k
    assert asyncio.run(provider.complete(req)).text == asyncio.run(provider.complete(req)).text


def test_k_samples_differ_but_rerun_matches(provider):
    r0, r1 = (_req("Invent a name for a cat.", k=k, temperature=1.0) for k in (0, 1))
    assert derive_seed(r0) != derive_seed(r1)
    assert derive_seed(r0) == derive_seed(r0.model_copy())

    async def both():  # concurrent calls are serialised, not crashed
        return await asyncio.gather(provider.complete(r0), provider.complete(r1))

    a0, a1 = asyncio.run(both())
    assert a0.text and a1.text


def test_json_schema_output_validates(provider):
    req = ChatRequest(
        provider="local",
        model="smollm2-135m-instruct",
        messages=[{"role": "user", "content": "Give a person as JSON with a name and an age."}],
        params={"max_tokens": 64, "temperature": 0.2,
                "response_format": {"type": "json_schema", "json_schema": {"name": "Person",
                                                                           "schema": Person.model_json_schema()}}},
    )
    res = asyncio.run(provider.complete(req))
    person = Person.model_validate(json.loads(res.text))
    assert isinstance(person.age, int)


def test_prompt_past_the_context_window_is_a_bad_request(provider):
    from oracleladder.clients import BadRequestError

    with pytest.raises(BadRequestError, match="context window"):
        asyncio.run(provider.complete(_req("seven " * 5000)))
    assert asyncio.run(provider.complete(_req("Say hi."))).text  # the model still answers afterwards
