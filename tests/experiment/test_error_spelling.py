"""An error names the argument as the caller spells it (issue 43): the Python API `base='nope'`, the
CLI `--base nope`; one message, each surface its own spelling (`clients.errors.Arg`), the client
layer's errors too (`batch=True` / `--batch`, `max_cost` / `--max-cost`, `extra_body` / `--extra-body`)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment, SyncExperiment
from oracleladder.cli import app
from oracleladder.clients import ConfigurationError, make_client
from oracleladder.cluster import LOCAL, Cluster
from oracleladder.experiment import Endpoint, EndpointError, ExperimentError, request_body
from oracleladder.experiment.endpoint import endpoint_client
from oracleladder.store import Store
from tests.helpers import fake

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house"
S = "openai/student"


def _store(tmp_path: Path) -> Path:
    shutil.copy(BEFORE / "before.sqlite", tmp_path / "s.sqlite")
    return tmp_path / "s.sqlite"


async def test_the_python_api_names_its_arguments_not_the_cli_s_options(tmp_path: Path) -> None:
    async with Experiment(_store(tmp_path)) as ex:
        with pytest.raises(ExperimentError) as raised:
            await ex.report([S], base="nope")
        assert str(raised.value) == f"base='nope' is not one of the report's columns ({S})"
        with pytest.raises(ExperimentError, match="^set_name and teacher exclude each other"):
            await ex.families(teacher="t", set_name="s")


def test_the_cli_names_its_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--student", S, "--base", "nope", "--store", str(_store(tmp_path)),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: --base nope is not one of the report's columns ({S})"


def test_an_endpoint_s_error_names_the_python_argument_and_the_cli_option(tmp_path: Path, sample_store: Path,
                                                                          monkeypatch) -> None:
    fake.script(monkeypatch, tmp_path, {"answer": r"\boxed{3}"})
    batch = "{}: fake has no batch API (batch mode is for openai/, anthropic/, google/ models); run without {}"
    with SyncExperiment(sample_store, workers=1) as ex, pytest.raises(EndpointError) as raised:
        ex.probe(Endpoint("fake/s", batch=True), k=1, limit=1)
    assert str(raised.value) == batch.format("batch=True", "batch=True")
    result = CliRunner().invoke(app, ["probe", "--student", "fake/s", "--batch", "--k", "1", "--limit", "1",
                                      "--store", str(sample_store)])
    assert result.exit_code == 2 and result.output.strip() == "error: " + batch.format("--batch", "--batch")


def test_a_budget_without_a_price_names_max_cost_and_prices_as_each_surface_spells_them() -> None:
    with pytest.raises(ConfigurationError) as raised:
        make_client("openai/no-price", api_key="k", max_cost=1.0)
    said = "{}: no price for openai/no-price in the " + raised.value.parts[1].split(" in the ", 1)[1] + "{}"
    assert str(raised.value) == said.format("max_cost", "prices")
    assert raised.value.cli_message() == said.format("--max-cost", "--prices FILE")


@pytest.mark.parametrize(("params", "extra_body", "python", "cli"), [
    (["top_k"], None, "params='top_k': expected NAME=VALUE, e.g. params='top_k=20'",
     "--param top_k: expected NAME=VALUE, e.g. --param top_k=20"),
    (None, "[1]", "extra_body must be a JSON object, e.g. '{\"top_k\": 20}'",
     "--extra-body must be a JSON object, e.g. '{\"top_k\": 20}'"),
    (["max_tokens=10"], None, "params max_tokens: the toolkit sets max_tokens itself",
     "--param max_tokens: the toolkit sets max_tokens itself"),
])
def test_a_request_body_s_error_names_its_argument(params, extra_body, python, cli) -> None:
    with pytest.raises(ExperimentError) as raised:
        request_body(params, extra_body)
    assert str(raised.value).startswith(python) and raised.value.cli_message().startswith(cli)



RAY_BATCH = "{} and {} do not go together: a provider's batch API is one queue already"


def test_a_batch_on_a_ray_cluster_is_refused_in_one_line_before_ray_starts(tmp_path: Path, monkeypatch) -> None:
    """--ray with --batch: one line, exit 2, said before the cluster starts (it would take seconds, and
    then only refuse)."""
    ray = pytest.importorskip("ray", reason="Ray not installed: pip install 'oracleladder[ray]'")
    monkeypatch.setenv("OPENAI_API_KEY", "not-asked")  # refused before any call
    monkeypatch.setattr("oracleladder.cluster.Cluster.start", lambda self: pytest.fail("the cluster was started"))
    result = CliRunner().invoke(app, ["probe", "--student", S, "--batch", "--ray", "local", "--k", "1",
                                      "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2 and result.output == "error: " + RAY_BATCH.format("--ray", "--batch") + "\n"
    assert not ray.is_initialized()


def test_a_batch_on_a_ray_cluster_names_the_python_arguments(tmp_path: Path) -> None:
    """Raised to Python (a client made for a cluster, not started), the refusal names `cluster` and `batch=True`."""
    pytest.importorskip("ray", reason="Ray not installed: pip install 'oracleladder[ray]'")

    async def client() -> None:
        async with Store.open(tmp_path / "s.sqlite") as store:
            await endpoint_client(Endpoint(S, batch=True), store, cluster=Cluster(LOCAL))
    with pytest.raises(EndpointError) as raised:
        asyncio.run(client())
    assert str(raised.value) == RAY_BATCH.format("cluster", "batch=True")
