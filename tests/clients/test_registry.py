"""The provider registry: a wire is one module declaring ``WIRE`` and one line in ``registry.WIRES``,
and every surface (the model string, the key, the endpoint, the client, the batch refusal, the error
line, the scrubbing of keys) reads it from there."""

from __future__ import annotations

import pytest

from oracleladder.clients import BadRequestError, ConfigurationError, MemoryCache, make_client, parse_model, registry
from oracleladder.clients.errors import explain, scrub
from oracleladder.clients.providers import key_env_for, make_batch_api
from oracleladder.experiment import Endpoint, EndpointError


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.WIRES, "toy", "tests.clients.toy_wire")


def test_every_registered_wire_declares_the_name_it_is_registered_under():
    for name in registry.WIRES:
        assert registry.wire(name).name == name


async def test_a_wire_added_by_one_module_and_one_line_works_on_every_surface(toy, monkeypatch):
    assert parse_model("toy/m1") == ("toy", "m1")
    monkeypatch.delenv("TOY_API_KEY", raising=False)
    with pytest.raises(EndpointError, match="TOY_API_KEY"):
        Endpoint("toy/m1").check_key()
    monkeypatch.setenv("TOY_API_KEY", "toy-secret-value")
    Endpoint("toy/m1").check_key()
    assert "toy-secret-value" not in scrub("the key toy-secret-value leaked")
    async with make_client("toy/m1", cache=MemoryCache()) as client:
        assert (await client.complete(client.request("hi"))).text == "toy says m1"
        assert client.name == "toy/m1"
    with pytest.raises(ConfigurationError, match=r"toy has no batch API \(batch mode is for openai/, anthropic/, google/ models\)"):
        make_batch_api("toy")
    line = explain(BadRequestError("HTTP 404", status=404), provider="toy", base_url="http://127.0.0.1:9/v1", key_env=None)
    assert line == "http://127.0.0.1:9/v1 has no toy model there"


def test_a_wire_s_key_stays_with_its_own_host(toy, monkeypatch):
    monkeypatch.setenv("TOY_API_KEY", "toy-secret-value")
    assert registry.wire("toy").key_env == ("TOY_API_KEY",)
    assert key_env_for("toy", None, None) == "TOY_API_KEY"
    assert key_env_for("toy", "https://toy.example/v1", None) == "TOY_API_KEY"
    assert key_env_for("toy", "http://127.0.0.1:9/v1", None) is None
